"""``reembed`` on both backends: MiniLM (384) → the loopback endpoint (768) → MiniLM, while
the store keeps serving; writes made during a re-embed are caught before the switch; a failing
batch refuses the switch and a rerun resumes; a process still on the old model is refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.errors import StoreMismatchError
from memoryd.ops.reembed import ReembedError, ReembedProgress, plan_reembed, reembed
from memoryd.providers.embedder import LOCAL_MODEL_ID, LocalMiniLM
from memoryd.providers.remote_embedder import EmbedSettings, OpenAICompatibleEmbedder
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.service import MemoryService
from memoryd.storage.protocols import EmbeddingSignature, Store
from memoryd.wiring import open_service, open_store
from tests.fake_embeddings import FakeEmbeddingServer

# Each memory is about one thing, in words no other memory uses: a query that repeats a
# memory's words finds that memory first under MiniLM and under the fake endpoint's
# bag-of-words vectors alike (the "agreeing" queries).
MEMORIES = (
    "The owner's kayak is yellow and sleeps in the boathouse",
    "The owner's dentist is Doctor Okafor on Rua Augusta",
    "The owner plays viola in a community orchestra on Thursdays",
    "The owner is allergic to penicillin",
    "The owner's sister Ines lives in Montreal",
    "The owner prefers window seats on long flights",
)
QUERIES = {
    "kayak yellow boathouse": 0,
    "dentist Doctor Okafor Rua Augusta": 1,
    "viola community orchestra Thursdays": 2,
    "allergic penicillin": 3,
}
NOTES = (
    "# Greenhouse\n\nThe greenhouse tomatoes need watering every morning before nine.\n\n"
    "# Bees\n\nThe beehive by the orchard swarmed in May and was rehoused in a new box.\n"
)


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dimension=768) as server:
        yield server


def endpoint(fake: FakeEmbeddingServer) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(
        EmbedSettings(model=fake.model, base_url=fake.base_url, max_retries=0, batch_size=16)
    )


def populated(location: str, embedder: LocalMiniLM, tmp_path: Path) -> tuple[list[str], str]:
    """The memories (one archived, one purged) and a two-chunk document; their ids."""
    service = open_service(resolve_settings(location, {}), embedder=embedder)
    try:
        ids = [service.remember(text).memory.id for text in MEMORIES]  # type: ignore[union-attr]
        service.archive(ids[4])
        service.purge(ids[5])
        notes = tmp_path / "garden.md"
        notes.write_text(NOTES)
        document = service.kb.ingest([notes])[0].document
        assert document is not None and document.chunk_count == 2
        return ids, document.id
    finally:
        service.close()


def answers(service: MemoryService) -> dict[str, tuple[list[str], list[tuple[str, int]]]]:
    """For each query: the recalled memory ids and the knowledge-base hits."""
    found = {}
    for query in (*QUERIES, "greenhouse tomatoes watering", "beehive orchard swarmed"):
        recalled = [s.memory.id for s in service.search_memory(query).items]
        hits = [(h.document.id, h.chunk.position) for h in service.kb.search(query).hits]
        found[query] = (recalled, hits)
    return found


def top(service: MemoryService, query: str) -> str:
    """The id of the memory a deliberate search ranks first."""
    return service.search_memory(query).items[0].memory.id


def vector_sizes(store: Store, memory_ids: list[str], document_id: str) -> list[int]:
    """The size of every stored vector of these memories and the document's chunks."""
    memory_vectors = store.memories.vectors(memory_ids)
    chunk_vectors = store.kb.chunk_vectors(document_id)
    return [len(v) for v in memory_vectors.values()] + [len(v) for v in chunk_vectors]


def test_round_trip_384_768_384_keeps_every_row_and_the_answers(
    location: str, embedder: LocalMiniLM, fake: FakeEmbeddingServer, tmp_path: Path
) -> None:
    ids, document_id = populated(location, embedder, tmp_path)
    settings = resolve_settings(location, {})
    with closing(open_service(settings, embedder=embedder)) as service:
        before = answers(service)
    for query, index in QUERIES.items():
        assert before[query][0][0] == ids[index]

    store = open_store(settings, create=False)
    try:
        plan = plan_reembed(store, fake.model, O200kTokenizer(), batch_size=16)
        # Five memories (the purged one has nothing left to embed) and two chunks.
        assert (plan.memories, plan.chunks, plan.calls) == (5, 2, 1)
        assert plan.tokens > 40
        result = reembed(store, endpoint(fake))
        assert result.target == EmbeddingSignature(fake.model, 768)
        assert (result.embedded, result.passes) == (7, 1)
        assert store.embedding_signature() == EmbeddingSignature(fake.model, 768)
        assert store.next_vectors.target() is None
        live = ids[:5]
        assert vector_sizes(store, ids, document_id) == [768] * 7
        assert set(store.memories.vectors(ids)) == set(live)
    finally:
        store.close()

    with closing(open_service(settings, embedder=endpoint(fake))) as service:
        during = answers(service)
        assert service.kb.get(document_id).embedded_chunks == 2
    for query, index in QUERIES.items():
        assert during[query][0][0] == ids[index]
    for query in ("greenhouse tomatoes watering", "beehive orchard swarmed"):
        assert during[query][1][0] == before[query][1][0]

    store = open_store(settings, create=False)
    try:
        back = reembed(store, embedder)
        assert back.target == EmbeddingSignature(LOCAL_MODEL_ID, 384)
        assert vector_sizes(store, ids, document_id) == [384] * 7
    finally:
        store.close()
    with closing(open_service(settings, embedder=embedder)) as service:
        assert answers(service) == before


def test_writes_during_the_fill_are_embedded_before_the_switch(
    location: str, embedder: LocalMiniLM, fake: FakeEmbeddingServer, tmp_path: Path
) -> None:
    ids, _document_id = populated(location, embedder, tmp_path)
    settings = resolve_settings(location, {})
    serving = open_service(settings, embedder=embedder)
    written: list[str] = []

    seen: list[ReembedProgress] = []

    def meanwhile(progress: ReembedProgress) -> None:
        seen.append(progress)
        # The store keeps serving the old model between batches.
        if written:
            return
        assert top(serving, "kayak yellow boathouse") == ids[0]
        new = serving.remember("The owner's bicycle has a green basket")
        written.append(new.memory.id)  # type: ignore[union-attr]
        serving.purge(ids[3])

    store = open_store(settings, create=False)
    try:
        result = reembed(store, endpoint(fake), batch_rows=2, progress=meanwhile)
        assert result.passes >= 1
        sizes = store.memories.vectors([*ids, *written])
        assert {len(v) for v in sizes.values()} == {768}
        assert set(sizes) == {ids[0], ids[1], ids[2], ids[4], written[0]}
        # The remember made meanwhile counts in the total at once: never "8/7 texts".
        assert all(p.done <= p.total for p in seen) and seen[-1].done == seen[-1].total
    finally:
        store.close()
    # The service that still embeds with MiniLM is refused, not silently wrong.
    with pytest.raises(StoreMismatchError, match="re-embedded with 'fake-embed'"):
        serving.recall("kayak yellow boathouse")
    with pytest.raises(StoreMismatchError, match="restart it"):
        serving.remember("The owner's scooter is red")
    serving.close()
    with closing(open_service(settings, embedder=endpoint(fake))) as service:
        assert top(service, "bicycle green basket") == written[0]
        assert service.get(ids[3]).purged_at is not None


def test_a_failing_batch_refuses_the_switch_and_a_rerun_resumes(
    location: str, embedder: LocalMiniLM, fake: FakeEmbeddingServer, tmp_path: Path
) -> None:
    ids, document_id = populated(location, embedder, tmp_path)
    settings = resolve_settings(location, {})
    store = open_store(settings, create=False)
    try:
        fake_embedder = endpoint(fake)
        fake_embedder.expect(768)

        def fail_next(progress: ReembedProgress) -> None:
            fake.fail(1, status=500)

        with pytest.raises(ReembedError, match="2 of 7 new vectors are kept") as stopped:
            reembed(store, fake_embedder, batch_rows=2, progress=fail_next)
        assert "run `memoryd reembed` again to resume" in str(stopped.value)
        # Nothing switched: the store still answers with MiniLM.
        assert store.embedding_signature() == EmbeddingSignature(LOCAL_MODEL_ID, 384)
        assert store.next_vectors.target() == EmbeddingSignature(fake.model, 768)
        with closing(open_service(settings, embedder=embedder)) as service:
            assert top(service, "allergic penicillin") == ids[3]
        sent = fake.texts
        result = reembed(store, fake_embedder, batch_rows=2)
        assert (result.resumed, result.embedded) == (2, 5)
        assert fake.texts - sent == 5
        assert vector_sizes(store, ids, document_id) == [768] * 7
    finally:
        store.close()


def test_a_rerun_towards_another_model_starts_over(
    location: str, embedder: LocalMiniLM, fake: FakeEmbeddingServer, tmp_path: Path
) -> None:
    populated(location, embedder, tmp_path)
    store = open_store(resolve_settings(location, {}), create=False)
    try:
        with store.transaction():
            store.next_vectors.begin(EmbeddingSignature("some-other-model", 768))
        fake_embedder = endpoint(fake)
        batch = store.next_vectors.missing("memories", 0, 3)
        with store.transaction():
            store.next_vectors.save("memories", batch, list(fake_embedder.embed(["x"] * 3)))
        result = reembed(store, fake_embedder)
        assert (result.dropped, result.resumed, result.embedded) == (3, 0, 7)
        with pytest.raises(ReembedError, match="already embedded with 'fake-embed'"):
            reembed(store, fake_embedder)
    finally:
        store.close()


class SwitchWhileEmbedding:
    """MiniLM, except that the first query it embeds waits for a re-embed, run meanwhile by
    ``switch``, to switch the store: a recall whose legs run across the switch."""

    def __init__(self, inner: LocalMiniLM, switch: Callable[[], object]) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        self.switch: Callable[[], object] | None = switch

    def embed(self, texts: list[str]) -> Any:
        vectors = self.inner.embed(texts)
        if self.switch is not None and len(texts) == 1:
            switch, self.switch = self.switch, None
            switch()
        return vectors


def test_a_recall_running_across_the_switch_is_refused_whole(
    location: str, embedder: LocalMiniLM, fake: FakeEmbeddingServer, tmp_path: Path
) -> None:
    populated(location, embedder, tmp_path)
    settings = resolve_settings(location, {})

    def switch() -> None:
        store = open_store(settings, create=False)
        try:
            reembed(store, endpoint(fake))
        finally:
            store.close()

    racing = SwitchWhileEmbedding(embedder, switch)
    with closing(open_service(settings, embedder=racing)) as service:
        # The space is checked before the query is embedded, then the switch lands.
        with pytest.raises(StoreMismatchError, match="re-embedded with 'fake-embed'"):
            service.recall("which instrument do I play on Thursdays?")
        assert racing.switch is None
