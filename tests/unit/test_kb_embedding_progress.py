"""How an ingest's progress reads (issue 16): a document's "embedding n/m", the CLI's
progress lines (pages, chunks, rate, time left) and the documents page's status cell."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from memoryd.cli.kb_progress import IngestProgress, embedding_line, written_line
from memoryd.http.web_documents_html import documents_html
from memoryd.kb.model import Chunk, Document, DocumentStatus, SourceType
from memoryd.kb.results import IngestResult
from memoryd.kb.vector_fill import FillProgress, duration, text_key, vectors_kept

AT = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _document(chunks: int, embedded: int | None) -> Document:
    return Document(
        id="doc1",
        source_uri="/filings/oracle.pdf",
        collection="default",
        source_type=SourceType.CURATED,
        title="Oracle 10-K",
        status=DocumentStatus.READY,
        created_at=AT,
        updated_at=AT,
        chunk_count=chunks,
        embedded_chunks=embedded,
    )


def test_a_document_says_embedding_n_of_m_until_every_vector_is_there() -> None:
    assert _document(347, 120).embedding_label == "embedding 120/347"
    assert _document(347, 120).pending_vectors == 227
    assert _document(347, 120).to_json()["embedding"] == "embedding 120/347"
    assert _document(347, 347).embedding_label == ""
    assert _document(347, 347).to_json()["embedding"] is None
    assert _document(347, None).embedding_label == ""  # not counted: nothing claimed
    assert _document(0, 0).embedding_label == ""


def test_the_documents_page_shows_the_embedding_progress() -> None:
    page = documents_html([_document(347, 120), _document(5, 5)], "", None, "token")
    assert page.count("embedding 120/347") == 1
    assert "embedding 5/5" not in page


def test_the_documents_page_gives_rate_and_time_left_of_a_fill_running_here() -> None:
    running = FillProgress("doc1", 120, 347, 45, 131, embedded=112, seconds=20.0)
    page = documents_html([_document(347, 120)], "", None, "token", {"doc1": running})
    assert "embedding 120/347, 5.6 chunks/s, 41 s left" in page


def test_progress_lines_give_pages_chunks_rate_and_time_left() -> None:
    progress = FillProgress("doc1", 120, 347, 45, 131, embedded=112, seconds=20.0)
    assert progress.rate == 5.6
    assert progress.eta_seconds is not None and round(progress.eta_seconds) == 41
    assert embedding_line("oracle.pdf", progress) == (
        "embedding oracle.pdf 120/347 chunks, p. 45/131, 5.6 chunks/s, 41 s left"
    )
    done = FillProgress("doc1", 347, 347, 131, 131, embedded=347, seconds=62.0)
    assert embedding_line("oracle.pdf", done).endswith(", done")
    result = IngestResult(
        "/filings/oracle.pdf", "ok", _document(347, 0), None, 6.6, 6.55, "job", pages=131
    )
    assert written_line("oracle.pdf", result) == (
        "oracle.pdf: 131 pages, 20.0 pages/s, 347 chunks written in 6.5 s, keyword-searchable; "
        "embedding 0/347"
    )
    assert written_line("oracle.pdf", IngestResult("x", "skipped", _document(3, 3))) is None
    assert [duration(s) for s in (0.42, 9.97, 59.4, 61, 3725)] == [
        "0.4 s",
        "10 s",
        "59 s",
        "1:01",
        "1:02:05",
    ]


def test_off_a_terminal_every_update_is_a_line_and_on_one_it_is_redrawn() -> None:
    plain, tty = io.StringIO(), io.StringIO()
    for out, redraw in ((plain, False), (tty, True)):
        watcher = IngestProgress(out, redraw=redraw)
        watcher.written(IngestResult("/f/a.pdf", "ok", _document(64, 0), None, 2.0, 2.0))
        watcher.embedding(FillProgress("doc1", 32, 64, 10, 20, 32, 5.0))
        watcher.embedding(FillProgress("doc1", 64, 64, 20, 20, 64, 10.0))
        watcher.close()
    lines = plain.getvalue().splitlines()
    assert len(lines) == 3 and lines[1].startswith("embedding a.pdf 32/64 chunks")
    assert "\r" not in plain.getvalue()
    assert tty.getvalue().count("\r") == 3 and tty.getvalue().endswith("done\n")


def test_kept_vectors_follow_the_embedded_text_not_the_position() -> None:
    def chunk(position: int, text: str) -> Chunk:
        return Chunk("d", position, ("H",), "Title › H", text, 10)

    old = {text_key(chunk(i, t).embedded_text): t.upper() for i, t in enumerate(["alpha", "beta"])}
    new = [chunk(0, "new first"), chunk(1, "alpha"), chunk(2, "beta"), chunk(3, "gamma")]
    assert vectors_kept(new, old) == [None, "ALPHA", "BETA", None]  # type: ignore[arg-type]
