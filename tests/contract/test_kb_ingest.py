"""Ingesting into the knowledge base (SPEC §6): bad inputs, re-ingesting a changed or broken
source, the atomic replace, names and folders.

Every test that writes works on the fresh per-test ``service``; the shared ``corpus`` only
lends its sample files.
"""

from __future__ import annotations

import dataclasses
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memoryd.errors import InvalidInputError
from memoryd.kb.model import Chunk, DocumentStatus
from memoryd.kb.service import IngestResult
from memoryd.service import MemoryService
from tests.kb_corpus import filler_paragraph, write_bad_inputs

from .kb_support import NOW, Corpus, chunk_texts, hit_with, markdown_doc, only_ok, squash

# ---------------------------------------------------------------------------------------------
# Bad inputs


def test_bad_inputs_fail_with_clear_reasons_and_good_files_still_ingest(
    service: MemoryService, corpus: Corpus, tmp_path: Path
) -> None:
    bad = write_bad_inputs(tmp_path / "bad")
    service.kb.limits = dataclasses.replace(service.kb.limits, max_bytes=1_000_000)
    good = [corpus.samples["markdown"].path, corpus.samples["text"].path]
    url = "file:///etc/passwd"
    sources: list[str | Path] = [good[0], *bad.values(), url, good[1]]
    results = {r.source: r for r in service.kb.ingest(sources, now=NOW)}
    assert len(results) == len(sources)

    expected = {
        "truncated_pdf": ("truncated",),
        "encrypted_pdf": ("password", "encrypted"),
        "zip_bomb_docx": ("zip bomb",),
        "oversized_txt": ("limit",),
        "unknown_type": ("unsupported",),
        "binary_as_txt": ("binary",),
    }
    failed: list[IngestResult] = []
    for key, words in expected.items():
        result = results[str(bad[key].resolve())]
        assert result.outcome == "failed", (key, result.reason)
        assert result.reason is not None
        assert any(word in result.reason.lower() for word in words), (key, result.reason)
        failed.append(result)
    by_url = results[url]
    assert by_url.outcome == "failed"
    assert by_url.reason is not None
    assert "http" in by_url.reason and "https" in by_url.reason, by_url.reason
    failed.append(by_url)

    # A source that cannot be read is reported, and leaves no document to delete by hand.
    assert all(result.document is None for result in failed)
    assert sorted(d.source_uri for d in service.kb.list_documents()) == sorted(
        str(p.resolve()) for p in good
    )

    for key in ("markdown", "text"):
        sample = corpus.samples[key]
        document = only_ok(results[str(sample.path.resolve())])
        hit = hit_with(service.kb.search(sample.key_sentence).hits[:3], sample.key_sentence)
        assert hit is not None and hit.document.id == document.id
    assert service.store.kb.chunk_count() == sum(
        only_ok(results[str(p.resolve())]).chunk_count for p in good
    )
    assert service.store.integrity_errors() == []


# ---------------------------------------------------------------------------------------------
# Re-ingesting


OLD_SENTENCE = "Cobalt lanterns guide the ferry across Lake Bled at midnight."
NEW_SENTENCE = "Emerald kettles whistle in the lodges above Zermatt each dawn."


def ferry_notes(sentence: str) -> str:
    return markdown_doc(
        "Ferry Crossing Notes",
        {
            "Timetable": filler_paragraph(700, 60),
            "Night Crossings": f"{filler_paragraph(701, 30)} {sentence}",
            "Fares": filler_paragraph(702, 60),
        },
    )


def small_pdf(path: Path, sentence: str) -> None:
    """A one-page PDF with a text layer (fast to convert)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setTitle("Ferry Crossing Report")
    pdf.drawString(40, 800, filler_paragraph(710, 12))
    pdf.drawString(40, 780, sentence)
    pdf.drawString(40, 760, filler_paragraph(711, 12))
    pdf.showPage()
    pdf.save()


def test_unchanged_file_is_skipped_and_a_changed_one_replaced(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "ferry.md"
    path.write_text(ferry_notes(OLD_SENTENCE), encoding="utf-8")
    first = only_ok(service.kb.ingest([path], now=NOW)[0])

    again = service.kb.ingest([path], now=NOW + timedelta(hours=1))[0]
    assert again.outcome == "skipped"
    assert again.document is not None and again.document.id == first.id
    assert service.store.kb.chunks(first.id) != []

    forced = only_ok(service.kb.reingest(first.id, now=NOW + timedelta(hours=1)))
    assert forced.id == first.id and forced.chunk_count == first.chunk_count

    path.write_text(ferry_notes(NEW_SENTENCE), encoding="utf-8")
    changed = only_ok(service.kb.ingest([path], now=NOW + timedelta(hours=2))[0])
    assert changed.id == first.id
    assert [d.id for d in service.kb.list_documents()] == [first.id]
    texts = chunk_texts(service, first.id)
    assert len(texts) == changed.chunk_count == service.kb.get(first.id).chunk_count
    assert not any(squash(OLD_SENTENCE) in squash(t) for t in texts)
    assert any(squash(NEW_SENTENCE) in squash(t) for t in texts)
    assert service.store.kb.chunk_count() == changed.chunk_count
    new_hit = hit_with(service.kb.search(NEW_SENTENCE).hits[:3], NEW_SENTENCE)
    assert new_hit is not None and new_hit.document.id == first.id
    assert hit_with(service.kb.search(OLD_SENTENCE).hits, OLD_SENTENCE) is None


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x93\x1f not a pdf at all \xfe\xff" * 64)


@pytest.mark.parametrize(("damage", "word"), [(_truncate, "truncated"), (_garbage, "pdf")])
def test_a_corrupt_reingest_keeps_the_stored_document(
    service: MemoryService, tmp_path: Path, damage: Any, word: str
) -> None:
    path = tmp_path / "ferry.pdf"
    small_pdf(path, OLD_SENTENCE)
    before = only_ok(service.kb.ingest([path], now=NOW)[0])
    chunks_before = service.store.kb.chunks(before.id)
    assert any(squash(OLD_SENTENCE) in squash(c.text) for c in chunks_before)

    damage(path)
    result = service.kb.ingest([path], now=NOW + timedelta(hours=1))[0]
    assert result.outcome == "failed"
    assert result.reason is not None and word in result.reason.lower(), result.reason

    after = service.kb.get(before.id)
    assert after.status is DocumentStatus.READY
    assert after.error is not None and word in after.error.lower(), after.error
    assert (after.chunk_count, after.content_hash) == (before.chunk_count, before.content_hash)
    assert service.store.kb.chunks(before.id) == chunks_before
    hit = hit_with(service.kb.search(OLD_SENTENCE).hits[:3], OLD_SENTENCE)
    assert hit is not None and hit.document.id == before.id
    assert service.kb.read(before.id).text


def test_a_source_that_is_good_again_clears_the_error(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "ferry.pdf"
    small_pdf(path, OLD_SENTENCE)
    good = path.read_bytes()
    first = only_ok(service.kb.ingest([path], now=NOW)[0])
    _truncate(path)
    assert service.kb.ingest([path], now=NOW + timedelta(hours=1))[0].outcome == "failed"
    assert service.kb.get(first.id).error

    # The owner restores the file: the document is sound again and must not keep reporting
    # the failed attempt, even though the restored bytes match the stored hash.
    path.write_bytes(good)
    restored = service.kb.ingest([path], now=NOW + timedelta(hours=2))[0]
    assert restored.outcome in ("ok", "skipped")
    document = service.kb.get(first.id)
    assert document.status is DocumentStatus.READY
    assert document.error is None, document.error


def test_a_text_file_turned_binary_keeps_its_chunks(service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "ferry.txt"
    path.write_text(f"{filler_paragraph(720, 40)} {OLD_SENTENCE}\n", encoding="utf-8")
    before = only_ok(service.kb.ingest([path], now=NOW)[0])
    chunks_before = service.store.kb.chunks(before.id)
    path.write_bytes(b"text once\x00\x00\x00" + bytes(range(256)) * 8)
    result = service.kb.ingest([path], now=NOW + timedelta(hours=1))[0]
    assert result.outcome == "failed"
    assert result.reason is not None and "binary" in result.reason
    assert service.store.kb.chunks(before.id) == chunks_before
    assert service.kb.get(before.id).status is DocumentStatus.READY


# ---------------------------------------------------------------------------------------------
# Atomic replace


def test_a_replace_that_fails_midway_leaves_the_old_document(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ferry.md"
    path.write_text(ferry_notes(OLD_SENTENCE), encoding="utf-8")
    before = only_ok(service.kb.ingest([path], now=NOW)[0])
    chunks_before = service.store.kb.chunks(before.id)
    stored_before = service.kb.get(before.id)

    real = service.store.kb.replace_chunks
    calls: list[str] = []

    def replace_then_crash(document_id: str, chunks: list[Chunk], vectors: list[Any]) -> None:
        real(document_id, chunks, vectors)
        calls.append(document_id)
        raise RuntimeError("disk unplugged after writing the chunks")

    monkeypatch.setattr(service.store.kb, "replace_chunks", replace_then_crash)
    path.write_text(ferry_notes(NEW_SENTENCE), encoding="utf-8")
    with pytest.raises(RuntimeError, match="disk unplugged"):
        service.kb.ingest([path], now=NOW + timedelta(hours=1))
    assert calls == [before.id]

    assert service.kb.get(before.id) == stored_before
    after = service.store.kb.chunks(before.id)
    assert len(after) == len(chunks_before) == stored_before.chunk_count
    assert [c.text for c in after] == [c.text for c in chunks_before]
    assert after == chunks_before
    assert service.store.kb.chunk_count() == len(chunks_before)
    assert hit_with(service.kb.search(NEW_SENTENCE).hits, NEW_SENTENCE) is None
    old_hit = hit_with(service.kb.search(OLD_SENTENCE).hits[:3], OLD_SENTENCE)
    assert old_hit is not None and old_hit.document.id == before.id
    assert service.store.integrity_errors() == []

    monkeypatch.undo()
    retried = only_ok(service.kb.ingest([path], now=NOW + timedelta(hours=2))[0])
    assert retried.id == before.id
    assert any(squash(NEW_SENTENCE) in squash(t) for t in chunk_texts(service, before.id))


def test_ingest_rejects_bad_names_and_collections(service: MemoryService, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="collection"):
        service.kb.ingest([tmp_path], collection="two words")
    with pytest.raises(InvalidInputError, match="file name"):
        service.kb.ingest_bytes(b"hello", "  ")
    missing = service.kb.ingest([tmp_path / "absent.md"], now=NOW)[0]
    assert missing.outcome == "failed"
    assert missing.reason is not None and "no such file" in missing.reason
    assert (missing.document, service.kb.list_documents()) == (None, [])
    # A name too long for the system to look up (a fuzzer's 300 bytes of combining marks): one
    # failed source with its reason, the others in the same call ingested as usual.
    (tmp_path / "kept.md").write_text("# Kept\n\nThe other source of the call.\n")
    too_long, kept = service.kb.ingest(["T\u0335\u033a" * 100, tmp_path / "kept.md"], now=NOW)
    assert too_long.outcome == "failed"
    assert too_long.reason is not None and "too long" in too_long.reason
    assert only_ok(kept).title == "Kept"


def test_a_folder_is_ingested_file_by_file(
    service: MemoryService, corpus: Corpus, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    (folder / "nested").mkdir(parents=True)
    (folder / ".hidden").mkdir()
    shutil.copy(corpus.samples["markdown"].path, folder / "songs.md")
    shutil.copy(corpus.samples["text"].path, folder / "nested" / "kites.txt")
    (folder / ".hidden" / "secret.md").write_text("# Secret\n\nnot for the index\n")
    results = service.kb.ingest([folder], collection="notes", now=NOW)
    assert [Path(r.source).name for r in results] == ["kites.txt", "songs.md"]
    assert all(r.outcome == "ok" for r in results)
    assert {d.collection for d in service.kb.list_documents()} == {"notes"}
