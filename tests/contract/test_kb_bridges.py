"""search_kb across the analyst's words (SPEC §6), on both backends: a question's word that no
label of the named filing uses reaches that filing's row through a number another filing of the
library gives two wordings."""

from __future__ import annotations

from dataclasses import replace

from memoryd.kb.model import Document
from memoryd.service import MemoryService

from .kb_support import NOW, annual_report, markdown_doc, only_ok

# Another company's filing gives "Capital expenditures" by segment and its cash-flow row the
# same number: the library's own evidence that the two wordings name one quantity.
BOREALIS = markdown_doc(
    "Borealis Valve Corporation — Form 10-K 2022",
    {
        "Liquidity": (
            "Capital spending by segment was as follows (in millions):\n\n"
            "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
            "| Capital expenditures | $2,262 | $2,553 |\n"
        ),
        "Consolidated Statements of Cash Flows": (
            "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
            "| Additions to property and equipment | (2,262) | (2,553) |\n"
        ),
    },
)


def library(service: MemoryService) -> dict[str, Document]:
    made = {
        "acme21": annual_report("Acme Pumps Inc.", 2021, "410"),
        "acme22": annual_report("Acme Pumps Inc.", 2022, "655"),
        "borealis22": BOREALIS.encode(),
    }
    return {
        name: only_ok(service.kb.ingest_bytes(body, f"{name}.md", now=NOW))
        for name, body in made.items()
    }


def test_a_word_no_label_of_the_named_filing_uses_reaches_its_row(
    service: MemoryService,
) -> None:
    documents = library(service)
    question = "Acme FY2022 capex"

    bridged = service.kb.search(question, limit=5)
    service.kb.search_policy = replace(service.kb.search_policy, bridge_labels=False)
    plain = service.kb.search(question, limit=5)

    top = bridged.hits[0]
    assert top.document.id == documents["acme22"].id
    assert "(655)" in top.chunk.text
    before = next((h.ranked.score for h in plain.hits if h.ranked.key == top.ranked.key), 0.0)
    assert top.ranked.score > before
    assert top.ranked.routed_row_rank == 1


def test_without_a_tie_in_the_library_nothing_changes(service: MemoryService) -> None:
    acme = only_ok(
        service.kb.ingest_bytes(annual_report("Acme Pumps Inc.", 2022, "655"), "a.md", now=NOW)
    )
    question = "Acme FY2022 capex"

    bridged = service.kb.search(question, limit=5)
    service.kb.search_policy = replace(service.kb.search_policy, bridge_labels=False)
    plain = service.kb.search(question, limit=5)

    assert [h.ranked for h in bridged.hits] == [h.ranked for h in plain.hits]
    assert bridged.hits[0].document.id == acme.id
