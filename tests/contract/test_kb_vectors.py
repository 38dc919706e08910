"""Vectors after chunks (issue 16): a document is keyword-searchable once its chunks are
written, the vector leg sees a chunk only once its vector lands, the worker's persisted job
fills the rest batch by batch (resumable, nothing doubled), ``embedding n/m`` shows the
progress, and a re-ingest embeds only the chunks whose embedded text changed.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.clock import utc_now
from memoryd.ids import IdGenerator
from memoryd.jobs.model import JobStatus
from memoryd.kb.model import ChunkKey, Document
from memoryd.kb.vector_fill import EMBED_JOB_KIND, EMBED_RETRY, FillProgress, VectorFiller
from memoryd.providers.embedder import Matrix
from memoryd.service import MemoryService
from tests.kb_corpus import filler_paragraph

from .kb_support import NOW, markdown_doc, only_ok

RARE = "zorblaxian"


def _sections(count: int, seed: int = 0) -> dict[str, str]:
    # Each section is long enough (about 400 tokens) to make at least one chunk of its own.
    return {
        f"Section {i}": " ".join(filler_paragraph(seed * 1000 + i * 10 + j) for j in range(6))
        for i in range(count)
    }


def _write_doc(path: Path, sections: dict[str, str]) -> Path:
    path.write_text(markdown_doc("Quarterly Notes", sections))
    return path


class _CountingEmbedder:
    """Counts the texts the knowledge base hands the embedder."""

    def __init__(self, service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        embedder = service.kb.embedder
        real = embedder.embed

        def embed(texts: list[str]) -> Matrix:
            self.texts.extend(texts)
            return real(texts)

        monkeypatch.setattr(embedder, "embed", embed)


def _vector_keys(service: MemoryService, document: Document) -> set[ChunkKey]:
    """The document's chunks the vector leg returns, each searched by its own vector."""
    chunks = service.store.kb.chunks(document.id)
    vectors = service.kb.embedder.embed([c.embedded_text for c in chunks])
    found: set[ChunkKey] = set()
    for vector in vectors:
        found.update(k for k, _ in service.store.kb.nearest_chunks(vector, 50))
    return {k for k in found if k.document_id == document.id}


def _embed_jobs(service: MemoryService) -> list[JobStatus]:
    return [j.status for j in service.store.jobs.recent(100) if j.kind == EMBED_JOB_KIND]


def test_keyword_search_finds_a_document_before_its_vectors_land(
    service: MemoryService, tmp_path: Path
) -> None:
    sections = _sections(3)
    sections["Section 1"] += f" The {RARE} ledger closes in March."
    path = _write_doc(tmp_path / "notes.md", sections)
    document = only_ok(service.kb.ingest([path], now=NOW, wait=False)[0])
    assert document.chunk_count >= 3
    assert document.embedded_chunks == 0
    assert document.embedding_label == f"embedding 0/{document.chunk_count}"

    hits = service.kb.search(f"{RARE} ledger").hits
    assert hits and hits[0].document.id == document.id
    assert RARE in hits[0].chunk.text
    assert hits[0].ranked.cosine is None  # found by the keyword leg alone
    assert _vector_keys(service, document) == set()
    assert service.kb.get(document.id).embedding_label.startswith("embedding 0/")
    assert _embed_jobs(service) == [JobStatus.QUEUED]

    round_ = service.worker.tick()
    assert round_.queue.get("queued", 0) == 0
    filled = service.kb.get(document.id)
    assert filled.embedded_chunks == filled.chunk_count and filled.embedding_label == ""
    assert len(_vector_keys(service, document)) == document.chunk_count
    assert _embed_jobs(service) == [JobStatus.DONE]


def test_by_default_ingest_returns_a_fully_embedded_document(
    service: MemoryService, tmp_path: Path
) -> None:
    path = _write_doc(tmp_path / "notes.md", _sections(2))
    result = service.kb.ingest([path], now=NOW)[0]
    document = only_ok(result)
    assert document.embedded_chunks == document.chunk_count
    assert result.searchable_seconds is not None
    assert 0 < result.searchable_seconds <= result.seconds
    assert len(_vector_keys(service, document)) == document.chunk_count
    # The job it queued with the chunks ran here, so nothing is left for the worker.
    assert _embed_jobs(service) == [JobStatus.DONE]


def test_a_fill_cut_off_mid_way_shows_its_progress_and_resumes_without_doubles(
    service: MemoryService, tmp_path: Path
) -> None:
    path = _write_doc(tmp_path / "notes.md", _sections(4))
    document = only_ok(service.kb.ingest([path], now=NOW, wait=False)[0])
    total = document.chunk_count
    assert total >= 4

    class Killed(Exception):
        pass

    filler = VectorFiller(service.store, service.kb.embedder, IdGenerator(), clock=utc_now, batch=1)
    seen_running: list[dict[str, FillProgress]] = []

    def kill_after_two_batches(progress: FillProgress) -> None:
        seen_running.append(filler.live())
        if progress.done >= 2:
            raise Killed

    with pytest.raises(Killed):
        filler.fill(document.id, kill_after_two_batches)
    # While it ran, the fill was listed with its count; once it stopped, it is not.
    assert [running[document.id].done for running in seen_running] == [1, 2]
    assert filler.live() == {}
    listed = service.kb.list_documents()
    assert [d.embedding_label for d in listed] == [f"embedding 2/{total}"]
    assert listed[0].to_json()["embedding"] == f"embedding 2/{total}"
    assert len(_vector_keys(service, document)) == 2

    # The worker's job (claimed by a process that died, so taken back after its lease)
    # finishes the rest.
    with service.store.transaction():
        assert service.store.jobs.claim([EMBED_JOB_KIND], utc_now(), 60) is not None
    later = utc_now() + timedelta(seconds=EMBED_RETRY.lease_seconds + 1)
    reports = service.kb.run_vector_jobs(now=later)
    assert [(r.embedded, r.remaining) for r in reports] == [(total - 2, 0)]
    assert service.store.kb.vector_counts([document.id]) == {document.id: total}
    assert len(service.store.kb.chunk_vectors(document.id)) == total
    assert service.kb.run_vector_jobs(now=later) == []


def test_reingest_embeds_only_the_chunks_whose_text_changed(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections = _sections(5)
    path = _write_doc(tmp_path / "notes.md", sections)
    first = only_ok(service.kb.ingest([path], now=NOW)[0])
    before = {c.embedded_text for c in service.store.kb.chunks(first.id)}
    sections["Section 3"] = " ".join(filler_paragraph(90_000 + j) for j in range(6))
    _write_doc(path, sections)

    counting = _CountingEmbedder(service, monkeypatch)
    second = only_ok(service.kb.ingest([path], now=NOW + timedelta(hours=1))[0])
    after = service.store.kb.chunks(second.id)
    changed = [c.embedded_text for c in after if c.embedded_text not in before]
    assert 0 < len(changed) < len(after)
    assert sorted(counting.texts) == sorted(changed)
    assert second.embedded_chunks == second.chunk_count
    # Kept vectors are the right ones: every chunk is its own nearest neighbour.
    monkeypatch.undo()
    assert len(_vector_keys(service, second)) == second.chunk_count


def test_a_rerun_of_an_unchanged_source_finishes_its_missing_vectors(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_doc(tmp_path / "notes.md", _sections(3))
    document = only_ok(service.kb.ingest([path], now=NOW, wait=False)[0])
    counting = _CountingEmbedder(service, monkeypatch)
    rerun = service.kb.ingest([path], now=NOW)[0]
    assert rerun.outcome == "skipped"
    assert rerun.document is not None
    assert rerun.document.embedded_chunks == document.chunk_count
    assert len(counting.texts) == document.chunk_count
    rerun_again = service.kb.ingest([path], now=NOW)[0]
    assert rerun_again.outcome == "skipped"
    assert len(counting.texts) == document.chunk_count  # nothing embedded twice


def test_a_folder_converts_ahead_and_every_document_ends_embedded(
    service: MemoryService, tmp_path: Path
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    for index in range(3):
        _write_doc(folder / f"doc-{index}.md", _sections(2, seed=index + 1))
    results = service.kb.ingest([folder], now=NOW)
    documents = [only_ok(r) for r in results]
    assert [Path(d.source_uri).name for d in documents] == ["doc-0.md", "doc-1.md", "doc-2.md"]
    for document in documents:
        assert document.embedded_chunks == document.chunk_count
    assert all(d.embedding_label == "" for d in service.kb.list_documents())
    assert set(_embed_jobs(service)) == {JobStatus.DONE}


def test_the_worker_yields_to_other_work_between_batches_and_resumes(
    service: MemoryService, tmp_path: Path
) -> None:
    path = _write_doc(tmp_path / "notes.md", _sections(3))
    document = only_ok(service.kb.ingest([path], now=NOW, wait=False)[0])
    service.kb._ingester.filler.batch = 1  # one chunk a batch, so a pause falls mid-way
    reports = service.kb.run_vector_jobs(pause=lambda: True)
    assert [(r.embedded, r.remaining) for r in reports] == [(1, document.chunk_count - 1)]
    assert _embed_jobs(service) == [JobStatus.QUEUED]  # back in the queue, due at once
    assert service.kb.get(document.id).embedding_label == f"embedding 1/{document.chunk_count}"

    service.worker.tick()
    assert service.kb.get(document.id).embedding_label == ""
    assert _embed_jobs(service) == [JobStatus.DONE]
