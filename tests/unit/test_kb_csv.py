"""CSV and TSV files read as one Markdown table (kb/csv_tables.py, kb/csv_dates.py): the
delimiter sniffed, quoted newlines kept in their cell, the first row the headers, rows in date
order set month by month, and every file that is not a table refused by name."""

from __future__ import annotations

import codecs

import pytest

from memoryd.kb.convert import SUPPORTED, ConversionError, DocumentType, convert, detect_type
from memoryd.kb.csv_dates import month_sections
from memoryd.kb.csv_tables import csv_markdown, sniff_delimiter
from memoryd.kb.rows import table_rows
from tests.kb_statements import ELECTRICITY, bank_statement, payment


class NoImages:
    name = "none"

    def read(self, image: bytes) -> str:
        raise AssertionError("a CSV holds no pictures")


def read(data: bytes, name: str = "budget.csv", content_type: str | None = None) -> str:
    converted = convert(data, name, NoImages(), content_type=content_type)
    assert converted.document_type is DocumentType.CSV
    assert converted.title == name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return converted.markdown


def table_lines(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("budget.csv", None),
        ("BUDGET.CSV", None),
        ("export.tsv", None),
        ("download", "text/csv; charset=utf-8"),
        ("download", "text/tab-separated-values"),
    ],
)
def test_csv_and_tsv_are_told_by_name_or_declared_type(name: str, content_type: str | None) -> None:
    assert detect_type(name, b"a,b\n1,2\n", content_type) is DocumentType.CSV


def test_the_unsupported_type_message_lists_csv_and_tsv() -> None:
    with pytest.raises(ConversionError) as error:
        detect_type("drawing.xyz", b"plain words")
    assert SUPPORTED in str(error.value)
    assert "CSV" in SUPPORTED and "TSV" in SUPPORTED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Date;Payee;Amount\n01.03.2026;Vattenfall;-84,20\n02.03.2026;REWE;-12,05\n", ";"),
        ("name,city,age\nAna,Lisbon,34\nBo,Oslo,29\n", ","),
        ("name\tnote\nAna\tlikes tea, milk\nBo\tcoffee, black\n", "\t"),
        ("item|qty\nrope|3\nnails|200\n", "|"),
        ('name,note\nAna,"semi; colon; here"\nBo,"and; here; too"\n', ","),
    ],
)
def test_the_delimiter_is_the_one_that_splits_rows_alike(text: str, expected: str) -> None:
    assert sniff_delimiter(text) == expected


def test_an_excel_sep_line_names_the_delimiter_and_is_not_a_row() -> None:
    lines = table_lines(read(b"sep=;\r\nitem;price\r\ntea, green;3,50\r\nbread;2,10\r\n"))
    assert lines[0] == "| item | price |"
    assert lines[2] == "| tea, green | 3,50 |"


def test_a_semicolon_statement_with_decimal_commas_keeps_each_amount_in_its_cell() -> None:
    text = bank_statement()
    markdown = read(text.encode("utf-8"), "statement-2026.csv")
    march = payment(text, ELECTRICITY, 3).split(";")
    assert f"| {' | '.join(march)} |" in markdown
    assert table_lines(markdown)[0] == "| Date | Payee | Amount (EUR) | Category |"


def test_rows_in_date_order_are_set_month_by_month_with_the_header_repeated() -> None:
    markdown = read(bank_statement().encode(), "statement-2026.csv")
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## January 2026", "## February 2026", "## March 2026"]
    assert len(headings) == 12
    assert markdown.count("| Date | Payee | Amount (EUR) | Category |") == 12
    march = markdown.split("## March 2026")[1].split("## April 2026")[0]
    assert all(".03.2026 |" in line for line in table_lines(march)[2:])


@pytest.mark.parametrize(
    ("dates", "expected"),
    [
        (["2026-01-05", "2026-01-30", "2026-02-01"], ["January 2026", "February 2026"]),
        (["2026-02-01T10:00", "2026-01-30 09:00"], ["February 2026", "January 2026"]),
        (["13/01/2025", "02/02/2025"], ["January 2025", "February 2025"]),
        (["01/13/2025", "02/02/2025"], ["January 2025", "February 2025"]),
        (["31.12.2025", "01.01.2026"], ["December 2025", "January 2026"]),
    ],
)
def test_a_date_column_in_order_cuts_the_rows_into_months(
    dates: list[str], expected: list[str]
) -> None:
    rows = [["x", date, "1"] for date in dates]
    assert [heading for heading, _ in month_sections(rows)] == expected


@pytest.mark.parametrize(
    "dates",
    [
        ["01/02/2025", "03/04/2025"],  # day or month first: nothing tells
        ["2026-03-01", "2026-01-01", "2026-02-01"],  # not in order
        ["2026-03-01", "2026-03-09"],  # one month
        ["2026-03-01", "soon"],  # not every row dated
    ],
)
def test_rows_not_dated_in_order_over_months_stay_one_table(dates: list[str]) -> None:
    rows = [[date, "1"] for date in dates]
    assert month_sections(rows) == [("", rows)]


def test_a_quoted_field_keeps_its_newline_and_delimiter_in_one_cell() -> None:
    data = (
        b'name,address,phone\nAna Silva,"12 Rua Nova\nLisbon, Portugal",555-0101\n'
        b"Bo,Oslo,555-0102\n"
    )
    lines = table_lines(read(data, "contacts.csv"))
    assert lines[2] == "| Ana Silva | 12 Rua Nova Lisbon, Portugal | 555-0101 |"
    assert len(lines) == 4


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "cp1252"])
def test_a_byte_order_mark_or_a_windows_encoding_is_read(encoding: str) -> None:
    text = "Payee;Amount\nCafé Müller;-4,50\nBäckerei;-2,10\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    lines = table_lines(read(data))
    assert lines[0] == "| Payee | Amount |"
    assert lines[2] == "| Café Müller | -4,50 |"


def test_a_tsv_is_split_by_tabs_even_when_its_cells_hold_commas() -> None:
    data = b"city\tnote\nLisbon\tsun, sea\nOslo\tsnow, fjords, more snow\n"
    lines = table_lines(read(data, "trips.tsv"))
    assert lines[3] == "| Oslo | snow, fjords, more snow |"


def test_a_ragged_file_is_padded_into_one_table_and_its_unnamed_columns_numbered() -> None:
    data = b"item,qty\nrope,3,blue\nnails\n,\nsaw,1\n"
    lines = table_lines(read(data))
    assert lines[0] == "| item | qty | column 3 |"
    assert lines[2:] == ["| rope | 3 | blue |", "| nails |  |  |", "| saw | 1 |  |"]


def test_a_pipe_inside_a_cell_is_escaped_so_it_does_not_end_the_cell() -> None:
    markdown = read(b"name,code\nAna,A|B\nBo,C\n")
    assert table_lines(markdown)[2] == "| Ana | A\\|B |"


def test_a_statements_rows_are_search_units_with_their_column_headers() -> None:
    text = bank_statement()
    markdown = read(text.encode(), "statement-2026.csv")
    march = markdown.split("## March 2026\n")[1].split("## April 2026")[0]
    units = [row.text for row in table_rows("statement-2026 › March 2026", march)]
    date, payee, amount, category = payment(text, ELECTRICITY, 3).split(";")
    assert (
        f"statement-2026 › March 2026 | {date} | Payee: {payee} | Amount (EUR): {amount} | "
        f"Category: {category}"
    ) in units


def test_a_one_column_file_is_a_one_column_table() -> None:
    assert table_lines(read(b"email\nana@example.org\nbo@example.org\n", "list.csv")) == [
        "| email |",
        "| --- |",
        "| ana@example.org |",
        "| bo@example.org |",
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\n\r\n  \n", "no rows"),
        (b"date;payee;amount\n", "only its header row"),
        (b"a,b\n" + bytes(range(1, 32)) * 40, "binary data"),
        (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 8, "binary data"),
        (b"a,b\n1," + b'"' + b"x" * 200_000 + b'"\n', "line"),
    ],
)
def test_a_file_that_is_not_a_table_is_refused_by_name(data: bytes, problem: str) -> None:
    with pytest.raises(ConversionError, match=problem):
        convert(data, "export.csv", NoImages())


def test_csv_markdown_titles_the_table_by_the_given_stem() -> None:
    assert csv_markdown("a,b\n1,2\n", "budget").startswith("# budget\n\n| a | b |\n")
