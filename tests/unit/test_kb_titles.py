"""Document titles (pure policy, kb/titles.py): metadata when it says something, else the first
heading that describes the document, else the file name; checked on pages of the real filings
too (a few pages each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.kb.blocks import parse_blocks
from memoryd.kb.convert import convert
from memoryd.kb.titles import document_title, heading_title, usable
from tests.kb_pdfs import filing_pages


class NoImages:
    name = "none"

    def read(self, image: bytes) -> str:
        return ""


@pytest.mark.parametrize(
    "metadata",
    [
        "", "  ", "untitled", "Untitled", "UNTITLED DOCUMENT", "Document", "Document1",
        "document 3", "Presentation1", "Slide 1", "slide 12", "Page 3", "Sheet1", "Untitled-4",
        "New Microsoft Word Document", "Microsoft Word - annual report.docx",
        "Microsoft PowerPoint - Q3 review", "0000004962-23-000006", "0000950170-23-028914",
        "123456", "2023-05-31", "10Q Doc & Exhibits-2022-05-03-15-15",
        "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f", "Report 3F2A9C1E7B4D4E8A9C2F1A2B3C4D5E6F",
        "d41d8cd98f00b204e9800998ecf8427e", "report.docx", "Q3 board pack.pdf", "q3_board_pack",
        "IMG_2031", "scan-0042", "UNITED STATES", "United States",
        "SECURITIES AND EXCHANGE COMMISSION", "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
        "Washington, D.C. 20549", "(Mark One)", "Table of Contents", "TABLE OF CONTENTS",
        "Page 4 of 12", "☒ ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES "
        "EXCHANGE ACT OF 1934", "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)",
        "For the fiscal year ended May 31, 2023", "Commission File Number: 001-35992",
        "DOCUMENTS INCORPORATED BY REFERENCE", "Confidential", "x" * 201,
    ],
)  # fmt: skip
def test_empty_generic_identifier_and_boilerplate_titles_say_nothing(metadata: str) -> None:
    assert not usable(metadata)
    assert document_title(metadata, [], ("Ferry Timetables",), "ferry") == "Ferry Timetables"


@pytest.mark.parametrize(
    "title",
    [
        "Ferry Timetables", "Annual Report 2023", "COVID-19 Response Plan", "The Slide Rule",
        "United States Coast Guard Manual", "Page Layout Guidelines", "Q3 Board Pack",
        "Form 10-K Filing Checklist", "X Factor Rules", "Pages from a Harbour Diary",
    ],
)  # fmt: skip
def test_titles_that_describe_a_document_are_kept(title: str) -> None:
    assert usable(title)
    assert document_title(title, [], ("Overview",), "file") == title


def test_the_first_describing_heading_wins_over_cover_boilerplate() -> None:
    cover = (
        "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "Washington, D.C. 20549",
        "Harbour Authority Annual Review", "Overview",
    )  # fmt: skip
    assert heading_title(cover) == "Harbour Authority Annual Review"
    assert document_title("untitled", [], cover, "review") == "Harbour Authority Annual Review"


@pytest.mark.parametrize(
    ("headings", "title"),
    [
        (("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", "FORM 10-K", "Delaware",
          "Oracle Corporation", "PART I."), "Oracle Corporation — Form 10-K"),
        (("FORM 10-Q", "Quarterly report pursuant to Section 13 or 15(d)",
          "JPMorgan Chase & Co."), "JPMorgan Chase & Co. — Form 10-Q"),
        (("UNITED STATES", "FORM 8-K/A", "THE COCA-COLA COMPANY AND SUBSIDIARIES"),
         "The Coca-Cola Company — Form 8-K/A"),
        (("UNITED STATES", "FORM 10-K", "Delaware", "One Coca-Cola Plaza Atlanta, Georgia"),
         "Form 10-K"),
    ],
)  # fmt: skip
def test_a_form_heading_is_joined_by_the_company_a_later_heading_names(
    headings: tuple[str, ...], title: str
) -> None:
    assert heading_title(headings) == title
    assert document_title("0000004962-23-000006", [], headings, "filing") == title


def test_without_a_usable_title_or_heading_the_file_name_is_the_title() -> None:
    assert document_title("", [], (), "ferry-report") == "ferry-report"
    assert document_title("Document", [], ("UNITED STATES", "Page 1"), "minutes") == "minutes"
    # A sentence set in bold is not a title.
    long_heading = "This section explains " + "in great detail " * 10
    assert document_title("", [], (long_heading,), "notes") == "notes"
    # Metadata that only repeats the file's name: the document's own heading says more.
    assert document_title("minutes", [], ("Harbour Board Minutes",), "minutes") == (
        "Harbour Board Minutes"
    )


def test_markdown_html_and_office_titles_follow_the_same_policy() -> None:
    reader = NoImages()
    markdown = b"# Untitled\n\n## Slide 1\n\n## Ferry Timetables\n\nBoats leave at nine.\n"
    html = (
        b"<html><head><title>Untitled Document</title></head><body><article>"
        b"<h1>Lighthouse Keepers' Rota</h1><p>" + b"The keepers change shifts at dawn. " * 20
        + b"</p></article></body></html>"
    )  # fmt: skip
    assert convert(markdown, "notes.md", reader).title == "Ferry Timetables"
    assert convert(html, "page.html", reader).title == "Lighthouse Keepers' Rota"


def test_a_docx_with_a_junk_core_title_is_titled_by_its_first_heading(tmp_path: Path) -> None:
    from docx import Document

    document = Document()
    document.core_properties.title = "Microsoft Word - draft3.docx"
    document.add_heading("Quayside Lease Terms", level=1)
    document.add_paragraph("The lease runs for ten years from the first of May.")
    path = tmp_path / "lease.docx"
    document.save(str(path))

    assert convert(path.read_bytes(), "lease.docx", NoImages()).title == "Quayside Lease Terms"


def test_real_filing_covers_are_titled_by_registrant_and_form_never_by_boilerplate(
    tmp_path: Path,
) -> None:
    # A few pages of each filing (its cover first); their metadata titles are junk ("Document",
    # "0000950170-23-028914", "10Q Doc & Exhibits-2022-05-03-15-15").
    for filing in filing_pages(tmp_path):
        converted = convert(filing.pdf, filing.name, NoImages())
        headings = [b.text for b in parse_blocks(converted.markdown) if b.kind == "heading"]

        assert filing.company in converted.title, (filing.name, converted.title)
        assert "Form 10-" in converted.title
        # Without the cover rule, the headings alone still name the form, never the agency.
        assert heading_title(headings).endswith(("Form 10-K", "Form 10-Q")), headings[:8]
        assert "UNITED STATES" not in heading_title(headings)


COVER = [
    "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "Washington, D.C. 20549", "FORM 10-K",
    "☒ ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
]  # fmt: skip


@pytest.mark.parametrize(
    ("ended", "year"),
    [
        ("January 1, 2023", "2022"), ("January 2, 2022", "2021"), ("January 7, 2024", "2023"),
        ("January 28, 2023", "2023"), ("December 31, 2022", "2022"), ("May 31, 2023", "2023"),
        ("September 24, 2022", "2022"),
    ],
)  # fmt: skip
def test_a_10k_is_titled_by_its_fiscal_year_not_the_year_its_last_week_falls_in(
    ended: str, year: str
) -> None:
    opening = [*COVER, f"For the fiscal year ended {ended}", "JOHNSON & JOHNSON",
               "(Exact name of registrant as specified in its charter)"]  # fmt: skip
    assert document_title("", opening, (), "jnj") == f"Johnson & Johnson — Form 10-K {year}"


def test_a_registrant_in_capitals_is_spelled_as_the_filing_spells_it_else_keeps_initialisms() -> (
    None
):
    opening = [*COVER, "For the fiscal year ended December 31, 2022", "CVS HEALTH CORPORATION",
               "(Exact name of registrant as specified in its charter)"]  # fmt: skip
    assert document_title("", opening, (), "cvs") == "CVS Health Corporation — Form 10-K 2022"
    spelled = [*opening, "CVS Health Corporation (the “Company”) is a leading health company."]
    assert document_title("", spelled, (), "cvs").startswith("CVS Health Corporation —")
    three_m = [*COVER, "For the fiscal year ended December 31, 2022", "3M COMPANY",
               "(Exact name of registrant as specified in its charter)"]  # fmt: skip
    assert document_title("", three_m, (), "mmm") == "3M Company — Form 10-K 2022"


def test_a_cover_whose_name_is_a_picture_is_titled_by_the_company_its_text_names_most() -> None:
    # The Coca-Cola 10-K of 2015 sets the registrant's name as a logo: the cover's text has
    # "(Exact name of Registrant ...)" under nothing.
    opening = [
        *COVER, "For the fiscal year ended December 31, 2015", "Commission File No. 001-02217",
        "(Exact name of Registrant as specified in its charter)", "DELAWARE",
        "The Coca-Cola Company is the world's largest beverage company.",
        "The Company owns or licenses more than 500 brands; The Coca-Cola Company and its",
        "bottling partners, including Coca-Cola Refreshments USA, Inc., sell them.",
    ]  # fmt: skip
    assert document_title("10-K", opening, (), "ko") == "The Coca-Cola Company — Form 10-K 2015"


def test_rules_of_underscores_around_a_cover_line_are_not_part_of_the_name() -> None:
    opening = [*COVER, "For the fiscal year ended December 31, 2022",
               "_____________________________________ Netflix, Inc.",
               "(Exact name of registrant as specified in its charter)"]  # fmt: skip
    assert document_title("", opening, (), "nflx") == "Netflix, Inc. — Form 10-K 2022"


def test_an_exhibit_label_from_the_filing_agent_is_not_a_title() -> None:
    assert not usable("MGM Exhibit 99.1 Q4 2022 ER")
    assert not usable("ex99-1 earnings release")
    headings = ("MGM RESORTS INTERNATIONAL REPORTS FOURTH QUARTER AND FULL YEAR 2022 RESULTS",)
    assert document_title("MGM Exhibit 99.1 Q4 2022 ER", [], headings, "mgm") == headings[0]
