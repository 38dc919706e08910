"""The knowledge base on PDFs as real documents are made (SPEC §6): pages cited and read by
range, running headers gone, ligatures mended, a '#' footnote kept a footnote, a statement's
numbers on their labels' rows with the years in every chunk, titles and the chunk ceiling on
pages of the real filings. Once per storage backend."""

from __future__ import annotations

import re
from pathlib import Path

import pypdfium2 as pdfium

from memoryd.kb.model import Chunk
from memoryd.service import MemoryService
from tests.kb_pdfs import (
    FOOTNOTE,
    LIGATURE_PLAIN,
    RUNNING_HEADER,
    YEARS,
    filing_pages,
    page_sentence,
    statement_rows,
    write_footnote,
    write_ligatures,
    write_paged,
    write_statement,
)

# No chunk is longer than the target plus the overlap (500 + 15 %), whatever the source.
CEILING = 575


def ingest_one(service: MemoryService, path: Path) -> str:
    [result] = service.kb.ingest([path])
    assert result.outcome == "ok", result.reason
    assert result.document is not None
    return result.document.id


def ingest_paged(service: MemoryService, folder: Path) -> str:
    """The five-page report with a running header and page numbers, ingested: its id."""
    path = folder / "harbour.pdf"
    write_paged(path)
    return ingest_one(service, path)


def chunks_of(service: MemoryService, document_id: str) -> list[Chunk]:
    return service.store.kb.chunks(document_id)


def squash(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Pages


def test_results_and_reads_cite_pages_and_a_page_range_reads_exactly_those_pages(
    service: MemoryService, tmp_path: Path
) -> None:
    document_id = ingest_paged(service, tmp_path)

    found = service.kb.search(page_sentence(4, 1)).hits
    read = service.kb.read(document_id, pages=(3, 4))
    tool = service.call_tool("read_kb", {"doc": document_id, "pages": "3-4"})

    hit = next(h for h in found if page_sentence(4, 1) in h.chunk.text)
    assert (
        hit.chunk.page_range is not None and hit.chunk.page_range[0] <= 4 <= hit.chunk.page_range[1]
    )
    assert 'pages="' in hit.fenced
    cite = hit.to_json()["cite"]
    assert cite is not None and cite.startswith("p")
    text = squash(read.text)
    for page in (3, 4):
        for index in range(3):
            assert page_sentence(page, index) in text
    for page in (1, 2, 5):
        assert f"On page {page} " not in text
    assert text.startswith("#") and "Dredger Operations" in text.split(" On page 3")[0]
    assert text.endswith(page_sentence(4, 2))
    assert read.pages == (3, 4)
    assert read.to_json()["cite"] == "pp. 3–4"
    assert "error" not in tool and 'pages="3-4"' in tool["content"]


def test_running_headers_and_page_numbers_never_reach_a_chunk(
    service: MemoryService, tmp_path: Path
) -> None:
    document_id = ingest_paged(service, tmp_path)

    texts = [c.text for c in chunks_of(service, document_id)]

    assert not any(RUNNING_HEADER in t for t in texts)
    assert not any(re.search(r"^\d+$", t, re.M) for t in texts)
    document = service.kb.get(document_id)
    assert document.title == "Breakwater Operations", "the metadata title said 'untitled'"


def test_the_owner_can_rename_a_document_and_its_breadcrumbs_follow(
    service: MemoryService, tmp_path: Path
) -> None:
    document_id = ingest_paged(service, tmp_path)

    renamed = service.kb.rename(document_id, "  Harbour   Master Plan ")

    assert renamed.title == "Harbour Master Plan"
    assert service.kb.get(document_id).title == "Harbour Master Plan"
    chunks = chunks_of(service, document_id)
    assert chunks and all(c.breadcrumb.startswith("Harbour Master Plan") for c in chunks)
    hits = service.kb.search("harbour master plan dredger operations").hits
    assert hits[0].document.id == document_id
    assert [c.pages for c in chunks] == [c.pages for c in chunks_of(service, document_id)]


# ---------------------------------------------------------------------------------------------
# Text hygiene


def test_a_pdf_set_with_ligatures_reads_as_plain_words(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "ligatures.pdf"
    write_ligatures(path)
    document_id = ingest_one(service, path)

    text = "\n".join(c.text for c in chunks_of(service, document_id))
    found = service.kb.search("financial team flows first quarter").hits

    assert LIGATURE_PLAIN in squash(text)
    assert "The figures were filed by the" in squash(text)
    assert "in charge of the fleet." in squash(text)
    assert not re.search(r"[\ufb00-\ufb4f\x00-\x08]", text)
    assert found and found[0].document.id == document_id


def test_a_footnote_opening_with_a_hash_never_becomes_a_heading(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "footnote.pdf"
    write_footnote(path)
    document_id = ingest_one(service, path)

    chunks = chunks_of(service, document_id)

    assert all("Denotes" not in heading for c in chunks for heading in c.headings)
    assert all("Denotes" not in c.breadcrumb for c in chunks)
    assert any(FOOTNOTE.removeprefix("# ") in c.text for c in chunks)
    assert page_sentence(2, 0) in "\n".join(c.text for c in chunks)


# ---------------------------------------------------------------------------------------------
# Tables


def table_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.split("\n")
        if line.startswith("|") and not line.startswith("|---")
    ]


def test_a_statement_keeps_each_number_on_its_labels_row_with_the_years_in_every_chunk(
    service: MemoryService, tmp_path: Path
) -> None:
    rows = statement_rows()
    path = tmp_path / "statement.pdf"
    write_statement(path, rows)
    document_id = ingest_one(service, path)

    chunks = [c for c in chunks_of(service, document_id) if table_rows(c.text)]
    seen: dict[str, list[str]] = {}
    for chunk in chunks:
        cells = table_rows(chunk.text)
        assert cells[0][-2:] == list(YEARS), "every chunk of the table repeats the years"
        assert "BALANCE SHEETS" in chunk.breadcrumb
        for line in cells[1:]:
            seen.setdefault(line[0], line[1:])

    assert len(chunks) >= 2, "the statement is longer than one chunk"
    for row in rows:
        assert seen.get(row.label) == list(row.values), row


def test_a_statement_set_large_and_scaled_down_by_the_page_keeps_its_rows(
    service: MemoryService, tmp_path: Path
) -> None:
    # Apple's fiscal-2021 10-K sets its text at 384 points scaled by 0.021: the gaps between
    # columns are a few points wide, not a few font sizes.
    rows = statement_rows(20)
    path = tmp_path / "scaled.pdf"
    write_statement(path, rows, scale=1 / 48)
    document_id = ingest_one(service, path)

    cells = [row for c in chunks_of(service, document_id) for row in table_rows(c.text)]
    assert cells[0][-2:] == list(YEARS)
    seen = {row[0]: row[1:] for row in cells[1:]}
    for row in rows:
        assert seen.get(row.label) == list(row.values), row


def test_pages_of_the_real_filings_keep_titles_tables_and_the_ceiling(
    service: MemoryService, tmp_path: Path
) -> None:
    for filing in filing_pages(tmp_path):
        path = tmp_path / f"pages-{filing.name}"
        path.write_bytes(filing.pdf)
        document_id = ingest_one(service, path)
        document = service.kb.get(document_id)
        chunks = chunks_of(service, document_id)

        assert filing.company in document.title, (filing.name, document.title)
        assert "Form" in document.title
        assert max(c.tokens for c in chunks) <= CEILING, filing.name
        assert all(len(c.breadcrumb) <= 200 for c in chunks)
        assert not any(re.search(r"[\x00-\x08\x0b-\x1f]", c.text) for c in chunks)
        if filing.real and filing.statement:
            _each_statement_line_is_a_row(filing.pdf, chunks)


FIGURE = re.compile(r"^\(?\d{1,3}(?:,\d{3})+\)?$|^\(?\d{3,}\)?$")


def _each_statement_line_is_a_row(pdf: bytes, chunks: list[Chunk]) -> None:
    """Every line of the raw page text that is a label and two or more figures
    ("Inventories 2,675 2,902", "Deposits $ 2,561,207 $ 2,462,303 4 %") is a table row with
    the same label and the same first two figures."""
    rows = [row for c in chunks for row in table_rows(c.text)]
    document = pdfium.PdfDocument(pdf)
    checked = 0
    try:
        for index in range(len(document)):
            textpage = document[index].get_textpage()
            for raw in textpage.get_text_range().splitlines():
                words = raw.split()
                cut = len(words)
                while cut and re.match(r"^(\$|%|\(?[\d,]+\)?%?)$", words[cut - 1]):
                    cut -= 1
                label = " ".join(words[:cut])
                figures = [w for w in words[cut:] if FIGURE.match(w)]
                if len(label) < 8 or len(figures) < 2 or not label[0].isalpha():
                    continue
                if re.search(r"(19|20)\d\d$", figures[1]) or label.endswith((",", "of")):
                    continue  # a date, not a statement line
                assert any(
                    r[0].endswith(label) and [v.lstrip("$") for v in r[1:3]] == figures[:2]
                    for r in rows
                ), (label, figures)
                checked += 1
            textpage.close()
    finally:
        document.close()
    assert checked >= 10, "each cut holds a statement page"
