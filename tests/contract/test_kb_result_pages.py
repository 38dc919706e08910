"""search_kb's results as places a person reads (SPEC §6): the chunks found on one page of a
PDF come back as one result that cites that page and shows all of their text, so the first
five results are five places. Once per storage backend."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memoryd.service import MemoryService

LEDGER_LINES = 90


def ledger_line(index: int) -> str:
    return f"Ledger line {index}: the breakwater tally for dock {index} was {index * 7} tonnes."


def covers(pages: tuple[int, int] | None, page: int) -> bool:
    return pages is not None and pages[0] <= page <= pages[1]


def write_long_page(path: Path) -> None:
    """Three pages: a short first and last page and, between them, one page long enough to
    be cut into several chunks, every line of it about the breakwater tally."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=(A4[0], 90 * 12 + 120))
    height = 90 * 12 + 120
    pdf.setFont("Helvetica", 10)
    pdf.drawString(40, height - 60, "The harbour report opens with the weather at sea.")
    pdf.showPage()
    for index in range(LEDGER_LINES):
        pdf.drawString(40, height - 60 - 12 * index, ledger_line(index))
    pdf.showPage()
    pdf.drawString(40, height - 60, "The harbour report closes with the crew's thanks.")
    pdf.showPage()
    pdf.save()


def test_chunks_of_one_page_are_one_result_citing_the_page_and_showing_their_text(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.pdf"
    write_long_page(path)
    [ingested] = service.kb.ingest([path])
    assert ingested.outcome == "ok", ingested.reason
    chunks = service.store.kb.chunks(ingested.document.id if ingested.document else "")
    on_page_two = [c for c in chunks if c.page_range == (2, 2)]
    assert len(on_page_two) >= 2  # the page is long enough to be cut

    question = "breakwater tally tonnes per dock in the ledger"
    policy = service.kb.search_policy
    service.kb.search_policy = replace(policy, merge_most=None)
    merged = service.kb.search(question, limit=5)
    service.kb.search_policy = policy
    capped = service.kb.search(question, limit=5)
    service.kb.search_policy = replace(policy, merge_pages=False)
    apart = service.kb.search(question, limit=5)

    assert sum(1 for h in apart.hits if covers(h.chunk.page_range, 2)) >= 2
    # One result holds every chunk that touches page 2, led by the best one, cites the pages
    # their text comes from and shows each ledger line once (the chunks' overlap dropped).
    [page_two] = [h for h in merged.hits if covers(h.page_range, 2)]
    touching = {c.position for c in chunks if covers(c.page_range, 2)}
    assert {c.position for c in page_two.chunks} == touching
    shown = page_two.to_json()
    spans = [c.page_range for c in chunks if c.page_range and c.position in touching]
    first = min(span[0] for span in spans)
    last = max(span[1] for span in spans)
    assert shown["pages"] == [first, last] and shown["cite"] == f"pp. {first}–{last}"
    assert f'pages="{first}-{last}"' in shown["content"]
    content = " ".join(shown["content"].split())
    for index in range(LEDGER_LINES):
        assert content.count(ledger_line(index)) == 1
    places = [(h.document.id, h.page_range) for h in merged.hits]
    assert len(places) == len(set(places))
    # By default a result shows at most three chunks; the others of its page take no place.
    [page_two] = [h for h in capped.hits if covers(h.page_range, 2)]
    assert len(page_two.chunks) == min(3, len(touching))
    assert page_two.chunk == next(h.chunk for h in merged.hits if covers(h.page_range, 2))
