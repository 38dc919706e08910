"""PDF layout → Markdown (pure): furniture, headings, tables, escaping, pages; text hygiene;
titles. Pages are built from lines as the PDF reader hands them over."""

from __future__ import annotations

import re

import pytest

from memoryd.kb.blocks import parse_blocks
from memoryd.kb.hygiene import clean_char, repair_unknown_glyphs
from memoryd.kb.pdf.layout import find_furniture, layout_markdown
from memoryd.kb.pdf.pages import Line, OutlineEntry, Page, Span
from memoryd.kb.tables import is_numeric
from memoryd.kb.titles import document_title, filing_title, usable

BODY = 10.0
REGULAR, BOLD = 400.0, 700.0


def line(top: float, label: str, *cells: str, size: float = BODY, weight: float = REGULAR) -> Line:
    """A table line: the label at the left margin, each cell right-aligned at its column
    (400, 480, 560 points) as financial statements set them, a leading "$" in a span of its
    own further left."""
    spans = [Span(label, 40.0, 40.0 + 5.0 * len(label))] if label else []
    for index, cell in enumerate(cells):
        right = 400.0 + 80.0 * index
        if cell.startswith("$"):
            spans.append(Span("$", right - 70.0, right - 64.0))
            cell = cell[1:]
        spans.append(Span(cell, right - 6.0 * len(cell), right))
    return Line(top, tuple(spans), size, weight)


def prose(top: float, text: str, **style: float) -> Line:
    return Line(top, (Span(text, 40.0, 40.0 + 4.5 * len(text)),), style.get("size", BODY),
                style.get("weight", REGULAR))  # fmt: skip


FILLER = (
    "The company designs and sells equipment for ports and harbours in many countries and "
    "reports its results in four operating segments."
)


WORDS = (
    "anchors", "buoys", "cranes", "docks", "engines", "ferries", "gantries", "hulls", "inlets",
    "jetties", "keels",
)  # fmt: skip


def page(number: int, *lines: Line) -> Page:
    return Page(number, tuple(lines))


def headings_of(markdown: str) -> list[tuple[int, str]]:
    return [(b.level, b.text) for b in parse_blocks(markdown) if b.kind == "heading"]


def rows_of(markdown: str) -> list[list[str]]:
    """Every Markdown table row as its cells."""
    return [
        [cell.strip() for cell in row.strip().strip("|").split("|")]
        for row in markdown.split("\n")
        if row.startswith("|") and not row.startswith("|---")
    ]


# ---------------------------------------------------------------------------------------------
# Furniture


def test_running_headers_footers_and_page_numbers_are_dropped() -> None:
    pages = [
        page(
            n,
            prose(20, "Harbour Holdings Inc. 2023 Form 10-K"),
            prose(34, "Table of Contents"),
            prose(80, f"{FILLER} This page is about {WORDS[n]}."),
            prose(780, str(n + 10)),
        )
        for n in range(1, 11)
    ]

    laid = layout_markdown(pages)

    assert "Form 10-K" not in laid.markdown
    assert "Table of Contents" not in laid.markdown
    assert not re.search(r"^\d+$", laid.markdown, re.M)
    assert all(f"This page is about {WORDS[n]}." in laid.markdown for n in range(1, 11))
    assert laid.furniture_lines == 30


def test_a_line_repeated_on_a_few_pages_only_is_kept() -> None:
    pages = [
        page(
            n,
            prose(20, "Risk Factors" if n < 3 else f"About {WORDS[n]}"),
            prose(80, f"{FILLER} Then {WORDS[n]}."),
        )
        for n in range(1, 11)
    ]

    assert find_furniture(pages) == set()
    assert "Risk Factors" in layout_markdown(pages).markdown


# ---------------------------------------------------------------------------------------------
# Headings


def test_larger_type_is_a_heading_and_each_size_a_level() -> None:
    laid = layout_markdown(
        [
            page(
                1,
                prose(20, "Annual Survey", size=20),
                prose(50, "Northern Stations", size=16),
                prose(70, "Keeper Routines", size=13),
                *(prose(90 + 12 * i, FILLER) for i in range(8)),
            )
        ]
    )

    levels = headings_of(laid.markdown)
    assert [text for _, text in levels] == ["Annual Survey", "Northern Stations", "Keeper Routines"]
    assert [level for level, _ in levels] == sorted(level for level, _ in levels)
    assert len({level for level, _ in levels}) == 3


def test_a_size_that_holds_much_of_the_text_is_body_text_not_headings() -> None:
    """An exhibit set in a larger font must not turn every line into a heading."""
    exhibit = [
        prose(100 + 14 * i, f"Exhibit line {i} of the agreement", size=12) for i in range(40)
    ]
    laid = layout_markdown([page(1, *(prose(20 + 12 * i, FILLER) for i in range(6)), *exhibit)])

    assert headings_of(laid.markdown) == []


def test_numbered_items_parts_and_notes_are_headings_at_body_size() -> None:
    laid = layout_markdown(
        [
            page(
                1,
                prose(20, "PART II"),
                prose(40, "Item 7. Management's Discussion and Analysis"),
                prose(60, FILLER),
                prose(80, "Note 12 — Debt"),
                prose(100, FILLER),
            )
        ]
    )

    assert headings_of(laid.markdown) == [
        (1, "PART II"),
        (2, "Item 7. Management's Discussion and Analysis"),
        (4, "Note 12 — Debt"),
    ]


def test_a_short_bold_line_standing_alone_is_a_heading_but_a_bold_lead_in_is_not() -> None:
    laid = layout_markdown(
        [
            page(
                1,
                *(prose(20 + 12 * i, FILLER) for i in range(3)),
                prose(70, "Liquidity and Capital Resources", weight=BOLD),
                prose(84, FILLER),
                prose(110, "Deposits increased, driven by", weight=BOLD),
                prose(122, "higher balances in consumer accounts."),
            )
        ]
    )

    assert headings_of(laid.markdown) == [(6, "Liquidity and Capital Resources")]
    assert "Deposits increased, driven by higher balances in consumer accounts." in laid.markdown


def test_a_long_line_is_text_however_it_is_set() -> None:
    long_line = "A" + " very long bold line of text" * 8
    laid = layout_markdown([page(1, prose(20, long_line, weight=BOLD), prose(40, FILLER))])

    assert headings_of(laid.markdown) == []


def test_a_footnote_opening_with_a_hash_stays_a_footnote() -> None:
    laid = layout_markdown(
        [
            page(
                1,
                prose(20, FILLER),
                prose(34, "# Denotes a variance of 100 percent or more", size=8),
            )
        ]
    )

    assert headings_of(laid.markdown) == []
    assert "\\# Denotes a variance of 100 percent or more" in laid.markdown
    assert [b.kind for b in parse_blocks(laid.markdown)] == ["paragraph", "paragraph"]


def test_bookmarks_mark_headings_at_their_depth() -> None:
    laid = layout_markdown(
        [page(3, prose(20, "Our Strategy"), prose(40, FILLER))],
        outline=[OutlineEntry("Our Strategy", 3, 2)],
    )

    assert headings_of(laid.markdown) == [(2, "Our Strategy")]


# ---------------------------------------------------------------------------------------------
# Tables


def balance_sheet() -> Page:
    return page(
        77,
        prose(20, "CONSOLIDATED BALANCE SHEETS", weight=BOLD),
        line(40, "December 31,", "2016", "2015"),
        line(52, "(In millions except par value)"),
        line(64, "ASSETS"),
        line(76, "Cash and cash equivalents", "$8,555", "$7,309"),
        line(88, "Short-term investments", "9,595", "8,322"),
        line(100, "Trade accounts receivable, less allowances of $466 and $352,"),
        line(112, "respectively", "3,856", "3,941"),
        line(124, "Accumulated other comprehensive income (loss)", "(11,205)", "(10,174)"),
        line(136, "TOTAL ASSETS", "$87,270", "$89,996"),
        prose(160, "Refer to Notes to Consolidated Financial Statements."),
    )


def test_a_financial_statement_keeps_every_number_on_its_labels_row() -> None:
    laid = layout_markdown([balance_sheet()])
    rows = rows_of(laid.markdown)

    assert rows[0][-2:] == ["2016", "2015"], "the years head the columns"
    assert ["Cash and cash equivalents", "$8,555", "$7,309"] in rows
    assert ["Short-term investments", "9,595", "8,322"] in rows
    assert [
        "Trade accounts receivable, less allowances of $466 and $352, respectively",
        "3,856",
        "3,941",
    ] in rows
    assert ["Accumulated other comprehensive income (loss)", "(11,205)", "(10,174)"] in rows
    assert ["TOTAL ASSETS", "$87,270", "$89,996"] in rows
    assert ["ASSETS", "", ""] in rows
    assert "Refer to Notes to Consolidated Financial Statements." in laid.markdown
    assert headings_of(laid.markdown) == [(6, "CONSOLIDATED BALANCE SHEETS")]


def test_column_headers_over_two_lines_join_per_column() -> None:
    laid = layout_markdown(
        [
            page(
                13,
                line(20, "(in millions)"),
                line(30, "", "March 31,", "December 31,"),
                line(40, "", "2022", "2021", "Change"),
                line(52, "Deposits", "$2,561,207", "$2,462,303", "4 %"),
                line(64, "Long-term debt", "293,239", "301,005", "(3)"),
            )
        ]
    )
    rows = rows_of(laid.markdown)

    assert rows[0] == ["(in millions)", "March 31, 2022", "December 31, 2021", "Change"]
    assert ["Deposits", "$2,561,207", "$2,462,303", "4 %"] in rows


def test_a_table_the_columns_cannot_hold_becomes_label_value_lines() -> None:
    def drifting(top: float, label: str, *cells: tuple[str, float]) -> Line:
        """A row whose numbers sit wherever the typesetter left them (right edges given)."""
        spans = [Span(label, 40.0, 40.0 + 5.0 * len(label))]
        spans += [Span(text, right - 6.0 * len(text), right) for text, right in cells]
        return Line(top, tuple(spans), BODY, REGULAR)

    laid = layout_markdown(
        [
            page(
                5,
                line(20, "Segment results", "2023", "2022"),
                drifting(32, "Ports", ("1,200", 400.0), ("1,100", 480.0)),
                drifting(44, "Harbours", ("310", 392.0), ("295", 404.0)),
                drifting(56, "Ferries", ("188", 398.0), ("191", 408.0)),
                drifting(68, "Total", ("1,698", 400.0), ("1,586", 480.0)),
            )
        ]
    )

    assert rows_of(laid.markdown) == [], "no Markdown table pretends the columns line up"
    lines = laid.markdown.split("\n")
    assert "Ports: 1,200, 1,100" in lines
    assert "Harbours: 310, 295" in lines, "both numbers stay on their label's line"
    assert "Ferries: 188, 191" in lines
    assert "Total: 1,698, 1,586" in lines
    assert any("2023" in text and "2022" in text for text in lines), "the header is kept"


@pytest.mark.parametrize(
    ("text", "numeric"),
    [
        ("8,555", True), ("$8,555", True), ("(11,205)", True), ("4 %", True), ("—", True),
        ("12.5", True), ("-3", True), ("n/m", True), ("2016", True),
        ("Total", False), ("Q1", False), ("10-K", False), ("$", False),
    ],
)  # fmt: skip
def test_what_counts_as_a_table_value(text: str, numeric: bool) -> None:
    assert is_numeric(text) is numeric


# ---------------------------------------------------------------------------------------------
# Pages


def test_every_page_is_marked_where_it_begins() -> None:
    laid = layout_markdown([page(n, prose(40, f"The {WORDS[n]} are here.")) for n in (1, 2, 3)])

    blocks = laid.markdown.strip().split("\n\n")
    assert blocks[0] == "<!-- page 1 -->"
    assert blocks.index("<!-- page 2 -->") < blocks.index(f"The {WORDS[2]} are here.")
    assert [b.page for b in parse_blocks(laid.markdown)] == [1, 2, 3]


# ---------------------------------------------------------------------------------------------
# Hygiene


@pytest.mark.parametrize(
    ("char", "cleaned"),
    [("ﬁ", "fi"), ("ﬂ", "fl"), ("ﬀ", "ff"), ("ﬃ", "ffi"), ("a", "a"), ("\x07", ""),
     ("\u200b", ""), ("\ue000", ""), ("\ufffd", ""), ("\u00ad", ""), ("é", "é")],
)  # fmt: skip
def test_ligatures_become_letters_and_controls_disappear(char: str, cleaned: str) -> None:
    assert clean_char(char) == cleaned


def test_an_unmapped_glyph_is_mended_from_the_documents_own_words() -> None:
    text = (
        "Each Par\x00cipant may elect. The Participant's Re\x00rement account. "
        "Retirement plans. The \x00nancial statements are financial."
    )

    mended = repair_unknown_glyphs(text)

    assert mended == (
        "Each Participant may elect. The Participant's Retirement account. "
        "Retirement plans. The financial statements are financial."
    )
    assert "\x00" not in repair_unknown_glyphs("A lone \x00 mark and Op\x00on")
    assert repair_unknown_glyphs("plain text") == "plain text"


# ---------------------------------------------------------------------------------------------
# Titles

ORACLE_COVER = [
    "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "Washington, D.C. 20549", "FORM 10-K",
    "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    "For the fiscal year ended May 31, 2023", "Commission File Number: 001-35992",
    "Oracle Corporation", "(Exact name of registrant as specified in its charter)",
]  # fmt: skip
LOGO_COVER = [
    "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "FORM 10-K",
    "For the fiscal year ended December 31, 2016", "Commission File No. 001-02217",
    "(Exact name of Registrant as specified in its charter)", "Delaware",
    "THE COCA-COLA COMPANY AND SUBSIDIARIES", "TABLE OF CONTENTS",
]  # fmt: skip
QUARTERLY_COVER = [
    "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "FORM 10-Q",
    "For the quarterly period ended Commission file", "March 31, 2022 number 1-5805",
    "JPMorgan Chase & Co.", "(Exact name of registrant as specified in its charter)",
]  # fmt: skip


@pytest.mark.parametrize(
    ("cover", "title"),
    [
        (ORACLE_COVER, "Oracle Corporation — Form 10-K 2023"),
        (LOGO_COVER, "The Coca-Cola Company — Form 10-K 2016"),
        (QUARTERLY_COVER, "JPMorgan Chase & Co. — Form 10-Q, quarter ended March 31, 2022"),
    ],
)
def test_a_filing_is_titled_by_its_registrant_and_form(cover: list[str], title: str) -> None:
    assert filing_title(cover) == title
    assert document_title("0000950170-23-028914", cover, (), "file") == title


@pytest.mark.parametrize(
    "metadata",
    ["", "untitled", "Document", "0000950170-23-028914", "10Q Doc & Exhibits-2022-05-03-15-15",
     "UNITED STATES", "report.docx", "Microsoft Word - notes.docx", "123456"],
)  # fmt: skip
def test_empty_generic_or_identifier_metadata_is_not_a_title(metadata: str) -> None:
    assert not usable(metadata)
    assert document_title(metadata, ["Some opening line"], ("UNITED STATES", "Ferry Timetables"),
                          "ferry") == "Ferry Timetables"  # fmt: skip


def test_good_metadata_wins_over_the_first_heading_and_the_file_name_comes_last() -> None:
    assert document_title("Coastal Lighthouses Survey", [], ("Overview",), "x") == (
        "Coastal Lighthouses Survey"
    )
    assert document_title("", [], (), "ferry-report") == "ferry-report"
