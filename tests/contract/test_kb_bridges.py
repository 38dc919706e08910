"""search_kb across the analyst's words (SPEC §6), on both backends: a question's word that no
label of the named filing uses reaches that filing's row through a number another filing of the
library gives two wordings."""

from __future__ import annotations

from dataclasses import replace

from memoryd.kb.model import Document
from memoryd.kb.results import KbHit, KbSearchResult
from memoryd.service import MemoryService
from tests.kb_corpus import filler_paragraph

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


# Another company's liquidity table gives "Working capital" in two years, each its balance
# sheet's current assets less its current liabilities: no number of it is on either row.
CASSIOPEIA = markdown_doc(
    "Cassiopeia Optics Corporation — Form 10-K 2022",
    {
        "Liquidity": (
            "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
            "| Working capital | $12,122 | $31,403 |\n"
        ),
        "Consolidated Balance Sheets": (
            "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
            "| Total current assets | 31,633 | 55,567 |\n"
            "| Total current liabilities | 19,511 | 24,164 |\n"
        ),
    },
)


def acme_with_balance_sheet() -> bytes:
    return markdown_doc(
        "Acme Pumps Inc. — Form 10-K 2022",
        {
            "Business": f"Acme Pumps Inc. makes valves and pumps. {filler_paragraph(400, 40)}",
            "Capital Resources": (
                "Acme funds its working capital needs from operations and a revolving "
                "facility, reviewed at the end of each year. " + filler_paragraph(300, 40)
            ),
            "Consolidated Balance Sheets": (
                "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
                "| Total current assets | 7,410 | 6,980 |\n"
                "| Total current liabilities | 3,205 | 2,990 |\n"
                "| Goodwill | 1,100 | 1,100 |\n"
            ),
        },
    ).encode()


def test_a_row_that_is_two_rows_difference_carries_its_words_to_them(
    service: MemoryService,
) -> None:
    acme = only_ok(service.kb.ingest_bytes(acme_with_balance_sheet(), "acme.md", now=NOW))
    only_ok(service.kb.ingest_bytes(CASSIOPEIA.encode(), "cassiopeia.md", now=NOW))
    question = "Acme working capital at the end of 2022"

    service.kb.search_policy = replace(service.kb.search_policy, bridge_differences=True)
    tied = service.kb.search(question, limit=5)
    service.kb.search_policy = replace(service.kb.search_policy, bridge_differences=False)
    plain = service.kb.search(question, limit=5)

    def balance_sheet(found: KbSearchResult) -> KbHit:
        return next(h for h in found.hits if "Total current assets | 7,410" in h.chunk.text)

    top, before = balance_sheet(tied), balance_sheet(plain)
    assert tied.hits[0] == top and top.document.id == acme.id
    # Without the tie the balance sheet shares two of the question's words and no row of it
    # names what the question asks; with it, the current assets and liabilities rows carry
    # the question's words (their own labels hold less than half of the widened question, so
    # the statement-first points do not count them).
    assert before.ranked.shared_words == 2 and before.ranked.row_evidence_rank is None
    assert top.ranked.shared_words > 2
    assert top.ranked.score > before.ranked.score
