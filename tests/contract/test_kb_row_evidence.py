"""search_kb puts first the chunk whose table row names what the question asks under the year it
names (SPEC §6): a statement's row beats the discussion that repeats the same words in prose,
once per storage backend."""

from __future__ import annotations

from dataclasses import replace

from memoryd.service import MemoryService

from .kb_support import NOW, annual_report, markdown_doc, only_ok, search_under

DISCUSSION = (
    "How much Acme spent in 2022: Acme's purchases of property and equipment in 2022 grew as "
    "Acme spent on property and equipment for the new foundry. Acme's spending on property "
    "and equipment in 2022 and its purchases of equipment will grow again in 2023.\n\n"
    "| Cash spent | Change | Percent |\n|---|---|---|\n"
    "| Purchases of property and equipment | 245 | 60 % |\n"
)
ROWS = [
    ("Net sales", "1,020", "900"),
    ("Cost of sales", "(610)", "(540)"),
    ("Depreciation and amortization", "88", "80"),
    ("Changes in inventories", "(41)", "(12)"),
    ("Purchases of property and equipment", "(655)", "(410)"),
    ("Proceeds from sale of investments", "30", "25"),
    ("Dividends paid", "(120)", "(110)"),
    ("Repurchases of common stock", "(200)", "(150)"),
]
STATEMENT = "| (in millions) | 2022 | 2021 |\n|---|---|---|\n" + "".join(
    f"| {label} | {now} | {before} |\n" for label, now, before in ROWS
)


def test_a_row_naming_the_line_item_under_the_questions_year_comes_first(
    service: MemoryService,
) -> None:
    body = markdown_doc(
        "Acme Pumps Inc. — Form 10-K 2022",
        {
            "Liquidity and Capital Resources": DISCUSSION,
            "Consolidated Statements of Cash Flows": STATEMENT,
        },
    )
    document = only_ok(service.kb.ingest_bytes(body.encode(), "acme.md", now=NOW))
    question = "How much did Acme spend on property and equipment in 2022?"

    policy = service.kb.search_policy
    service.kb.search_policy = replace(policy, row_evidence_weight=0.0)
    without = service.kb.search(question, limit=5).hits
    service.kb.search_policy = policy
    result = service.kb.search(question, limit=5)

    # Without the row's evidence the discussion (whose table has the row, not the year) comes
    # first: it repeats the question's words.
    assert "(655)" not in without[0].text
    assert result.hits[0].document.id == document.id
    assert "(655)" in result.hits[0].text
    explained = result.to_json(explain=True)["results"][0]["explain"]
    assert explained is not None and explained["row_evidence_rank"] == 1


EXCERPT = (
    "How much Acme spent on property and equipment in 2022: Acme's purchases of property and "
    "equipment in 2022 grew as Acme spent on property and equipment for the new foundry.\n\n"
    "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
    "| Purchases of property and equipment | (655) | (410) |\n"
)


def test_of_two_tables_with_the_row_under_the_year_the_whole_statement_comes_first(
    service: MemoryService,
) -> None:
    acme_filing(service, EXCERPT)
    question = "How much did Acme spend on purchases of property and equipment in 2022?"

    # (The statement is also the excerpt's source, so the copy's rule is off for both.)
    by_cover = search_under(
        service, question, row_evidence_order="cover", row_sources_first=False
    ).hits
    by_rows = search_under(service, question, row_sources_first=False).hits
    hits = service.kb.search(question, limit=5).hits

    # Both hold the row under 2022: by the cover alone the excerpt, which repeats the
    # question's words, stays first; the statement, with every row under 2022, goes first.
    assert "Liquidity" in by_cover[0].chunk.breadcrumb
    assert "Statements of Cash Flows" in by_rows[0].chunk.breadcrumb
    assert "Statements of Cash Flows" in hits[0].chunk.breadcrumb
    assert "Dividends paid" in hits[0].text


def acme_filing(service: MemoryService, discussion: str) -> None:
    """Acme's 10-K: ``discussion`` under Liquidity, then the statement of cash flows."""
    acme_sections(
        service,
        {
            "Liquidity and Capital Resources": discussion,
            "Consolidated Statements of Cash Flows": STATEMENT,
        },
    )


def acme_sections(service: MemoryService, sections: dict[str, str]) -> None:
    """Acme's 10-K of fiscal 2022 holding ``sections`` (heading: text), in that order."""
    body = markdown_doc("Acme Pumps Inc. — Form 10-K 2022", sections)
    only_ok(service.kb.ingest_bytes(body.encode(), "acme.md", now=NOW))


COPIED = (
    "How much Acme spent on purchases of property and equipment for the foundry in 2022: "
    "Acme's purchases of property and equipment for the foundry grew in 2022, as Acme spent "
    "on property and equipment for the foundry.\n\n"
    "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
    "| Purchases of property and equipment for the foundry | (655) | (410) |\n"
)


def test_a_figure_copied_from_a_statement_comes_after_the_statement(
    service: MemoryService,
) -> None:
    acme_filing(service, COPIED)
    question = (
        "How much did Acme spend on purchases of property and equipment for the foundry in 2022?"
    )

    copy_first = search_under(service, question, row_sources_first=False).hits
    hits = service.kb.search(question, limit=5).hits

    # The discussion's row covers more of the question and leads without the rule; its (655)
    # under 2022 is the statement's, a table of more rows under 2022, which goes first.
    assert "Liquidity" in copy_first[0].chunk.breadcrumb
    assert "Statements of Cash Flows" in hits[0].chunk.breadcrumb
    assert "Liquidity" in hits[1].chunk.breadcrumb


ADD_BACK_ROWS = [
    "Net income",
    "Depreciation and amortization",
    "Stock-based compensation expense",
    "Deferred income taxes",
    "Equity income — net of dividends",
    "Foreign currency adjustments",
    "Significant (gains) losses on sales of assets — net",
    "Other operating charges",
    "Other items",
    "Net change in operating assets and liabilities",
    "Net cash provided by operating activities",
    "Purchases of investments",
    "Proceeds from disposals of investments",
    "Acquisitions of businesses",
    "Purchases of property, plant and equipment",
    "Proceeds from disposals of property, plant and equipment",
    "Other investing activities",
    "Net cash used in investing activities",
    "Issuances of debt",
    "Payments of debt",
    "Issuances of stock",
    "Purchases of stock for treasury",
    "Dividends",
    "Other financing activities",
    "Net cash used in financing activities",
]
ADD_BACKS = "| (in millions) | 2022 | 2021 |\n|---|---|---|\n" + "".join(
    f"| {label} | {100 + 7 * n:,} | {90 + 5 * n:,} |\n" for n, label in enumerate(ADD_BACK_ROWS)
)
SALES_NOTE = (
    "In 2022 Acme sold its foundry and recorded losses on these significant asset sales.\n\n"
    "| (in millions) | 2022 | 2021 |\n|---|---|---|\n"
    "| Losses on significant asset sales added back to net income | 151 | 40 |\n"
    "| Proceeds from the sales | 410 | 95 |\n"
)


def test_a_question_naming_the_statement_finds_the_row_its_heading_and_label_name(
    service: MemoryService,
) -> None:
    acme_sections(
        service,
        {"Note 4: Divestitures": SALES_NOTE, "Consolidated Statements of Cash Flows": ADD_BACKS},
    )
    question = (
        "In its 2022 cash flow statement, how much did Acme add back for net losses on "
        "significant asset sales?"
    )

    label_only = search_under(service, question, row_evidence_share="question").hits
    result = service.kb.search(question, limit=5)

    # The statement's row holds five of the question's eleven words, under the half the points
    # need, and the note's row seven: by the label alone the note leads. The statement's
    # heading holds "cash flow statement": its row covers eight of eleven and goes first.
    assert "Divestitures" in label_only[0].chunk.breadcrumb
    assert "Statements of Cash Flows" in result.hits[0].chunk.breadcrumb
    assert "| 142 |" in result.hits[0].text
    explained = result.to_json(explain=True)["results"][0]["explain"]
    assert explained is not None and explained["row_evidence_rank"] == 1


def test_another_companys_row_is_no_evidence_for_a_question_naming_a_company(
    service: MemoryService,
) -> None:
    made = {
        "acme": annual_report("Acme Pumps Inc.", 2022, "655"),
        "borealis": annual_report(
            "Borealis Valve Corporation", 2022, "77", capex_label="Capital expenditures"
        ),
    }
    documents = {
        name: only_ok(service.kb.ingest_bytes(body, f"{name}.md", now=NOW))
        for name, body in made.items()
    }
    question = "What were Acme's capital expenditures in 2022?"

    everywhere = search_under(service, question, row_evidence_named=False)
    result = service.kb.search(question, limit=5)

    # Borealis' row says "Capital expenditures" under 2022, Acme's "Purchases of property and
    # equipment": counted as evidence, Borealis' statement is second for a question naming
    # Acme; counted only in the named filing, Acme's three sections come first.
    assert [r.document_id for r in result.routes] == [documents["acme"].id]
    assert everywhere.hits[1].document.id == documents["borealis"].id
    assert everywhere.hits[1].ranked.row_evidence_rank == 1
    assert [h.document.id for h in result.hits[:3]] == [documents["acme"].id] * 3
    assert all(h.ranked.row_evidence_rank is None for h in result.hits)
