"""``memoryd reembed`` as the real executable, on both backends: ``--dry-run`` counts and
changes nothing; a SIGKILL mid-way keeps the committed batches, the store keeps serving its old
model, and a rerun finishes with every memory and chunk present and re-embedded, having sent
at most one batch twice; the configured embedder is then refused until it names the new model.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from memoryd.config.settings import resolve_settings
from memoryd.ops.reembed import BATCH_ROWS
from memoryd.providers.remote_embedder import EmbedSettings, OpenAICompatibleEmbedder
from memoryd.storage.protocols import EmbeddingSignature
from memoryd.wiring import open_service, open_store
from tests.fake_embeddings import FakeEmbeddingServer

from .conftest import Cli
from .server import MEMORYD, serving

PEOPLE = ("Marta", "Joaquim", "Tomasz", "Priya", "Kofi", "Yuki", "Lars", "Amara")
PLACES = ("Lisbon", "Porto", "Braga", "Faro", "Evora", "Coimbra", "Sintra", "Tavira")
MEMORIES = 5 * BATCH_ROWS


def _endpoint(server: FakeEmbeddingServer) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(
        EmbedSettings(model=server.model, base_url=server.base_url, max_retries=0)
    )


def _populate(location: str, source: FakeEmbeddingServer, notes: Path) -> list[str]:
    """MEMORIES distinct memories and one document, embedded by ``source``."""
    service = open_service(resolve_settings(location, {}), embedder=_endpoint(source))
    try:
        ids = []
        for n in range(MEMORIES):
            person, place = PEOPLE[n % len(PEOPLE)], PLACES[(n // len(PEOPLE)) % len(PLACES)]
            text = f"On trip {n} the owner met {person} in {place} near marker{n}"
            ids.append(service.remember(text).memory.id)  # type: ignore[union-attr]
        notes.write_text("# Harbour\n\nThe spring tide at the harbour peaks at dawn in March.\n")
        service.kb.ingest([notes])
        return ids
    finally:
        service.close()


def test_dry_run_then_sigkill_mid_way_then_a_rerun_finishes(
    cli: Cli, location: str, tmp_path: Path
) -> None:
    with (
        FakeEmbeddingServer(dimension=384, model="fake-small") as source,
        FakeEmbeddingServer(dimension=768) as target,
    ):
        ids = _populate(location, source, tmp_path / "harbour.md")
        settings = resolve_settings(location, {})
        env = {**cli.env, **source.env(), "MEMORYD_DB": location}
        to_target = ("--model", target.model, "--base-url", target.base_url, "--batch-size", "16")
        run = Cli(env=env, cwd=cli.cwd)

        plan = run.json("reembed", *to_target, "--dry-run")
        assert (plan["memories"], plan["chunks"], plan["texts"]) == (MEMORIES, 1, MEMORIES + 1)
        assert plan["calls"] == -(-(MEMORIES + 1) // 16) and plan["tokens"] > 10 * MEMORIES
        assert "Nothing was changed" in run.ok("reembed", *to_target, "--dry-run")
        assert target.texts == 0

        # Slow answers: each batch of rows takes ~0.4 s, so the kill lands mid-way.
        target.delay = 0.05
        process = subprocess.Popen(
            [str(MEMORYD), "reembed", *to_target],
            env={**env, "MEMORYD_EMBED_MAX_RETRIES": "0"},
            cwd=cli.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while target.texts < 2 * BATCH_ROWS + 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.kill()
        process.wait(timeout=30)
        assert process.returncode == -9
        sent_before = target.texts

        store = open_store(settings, create=False)
        try:
            # The committed batches are kept; nothing switched.
            assert store.embedding_signature() == EmbeddingSignature("fake-small", 384)
            assert store.next_vectors.target() == EmbeddingSignature(target.model, 768)
            done = store.next_vectors.counts()["memories"][0]
            assert 2 * BATCH_ROWS <= done < MEMORIES and done % BATCH_ROWS == 0
        finally:
            store.close()
        # The store still serves its old model meanwhile.
        found = run.json("search", "the owner met Priya in Porto near marker3")
        assert found and found[0]["id"] == ids[3]

        target.delay = 0.0
        finished = run.run("reembed", *to_target)
        assert finished.returncode == 0, finished.stderr
        assert f"switched: the store now holds 768-dimension vectors from '{target.model}'" in (
            finished.stdout
        )
        assert "next: set the embedder every memoryd process uses" in finished.stdout
        assert "re-embedding" in finished.stderr and "texts/s" in finished.stderr
        # Each run asks the endpoint its dimension once (one text); besides, at most the batch
        # in flight at the kill was sent twice.
        assert target.texts - sent_before == 1 + MEMORIES + 1 - done
        assert sent_before - 1 - done <= BATCH_ROWS

        store = open_store(settings, create=False)
        try:
            assert store.embedding_signature() == EmbeddingSignature(target.model, 768)
            vectors = store.memories.vectors(ids)
            assert set(vectors) == set(ids) and {len(v) for v in vectors.values()} == {768}
            assert store.next_vectors.target() is None
            assert not store.integrity_errors()
        finally:
            store.close()

        # The configured (old) embedder is refused, naming the command; the new one works.
        refused = run.fails("search", "Priya Porto")
        assert "fake-small" in refused and "memoryd reembed" in refused
        on_target = Cli(env={**env, **target.env(), "MEMORYD_DB": location}, cwd=cli.cwd)
        found = on_target.json("search", "the owner met Priya in Porto near marker3")
        assert found[0]["id"] == ids[3]
        assert len(on_target.json("list", "--limit", "1000")) == MEMORIES
        hits = on_target.json("kb", "search", "spring tide harbour dawn")["results"]
        assert hits and "spring tide" in hits[0]["content"]


def test_a_server_still_on_the_old_model_answers_503_after_the_switch(
    cli: Cli, tmp_path: Path
) -> None:
    """A ``serve`` started before the switch keeps embedding with the old model: it refuses
    with 503 and a message naming the new model and the restart, never a wrong answer; a
    server started on the new model answers."""
    location = str(tmp_path / "store.db")
    with (
        FakeEmbeddingServer(dimension=384, model="fake-small") as source,
        FakeEmbeddingServer(dimension=768) as target,
    ):
        service = open_service(resolve_settings(location, {}), embedder=_endpoint(source))
        try:
            kept = service.remember("The owner's kayak is yellow and lives at the boathouse")
        finally:
            service.close()
        env = {**cli.env, **source.env(), "MEMORYD_DB": location}
        run = Cli(env=env, cwd=cli.cwd)
        with serving(env, tmp_path) as running:
            token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
            headers = {"Authorization": f"Bearer {token}"}
            recall = {"message": "where is the yellow kayak"}
            before = httpx.post(f"{running.base_url}/v1/recall", json=recall, headers=headers)
            assert before.status_code == 200, before.text
            run.ok("reembed", "--model", target.model, "--base-url", target.base_url)
            after = httpx.post(f"{running.base_url}/v1/recall", json=recall, headers=headers)
            assert after.status_code == 503, after.text
            message = after.json()["error"]
            assert f"re-embedded with '{target.model}'" in message and "restart" in message
            assert "Traceback" not in after.text
            written = httpx.post(
                f"{running.base_url}/v1/memories",
                json={"content": "The owner's canoe is red"},
                headers=headers,
            )
            assert written.status_code == 503, written.text
        on_target = {**env, **target.env()}
        with serving(on_target, tmp_path) as running:
            again = httpx.post(f"{running.base_url}/v1/recall", json=recall, headers=headers)
            assert again.status_code == 200, again.text
            assert kept.memory.id in again.text  # type: ignore[union-attr]
            assert "canoe" not in httpx.get(f"{running.base_url}/v1/memories", headers=headers).text
