"""A CSV or TSV file as the Markdown table a spreadsheet's sheet becomes (pure).

The delimiter is sniffed among comma, semicolon, tab and bar: the one that splits the opening
lines into the same number of fields most often (and, at equal consistency, into more fields)
wins, so a European bank's ``;``-separated export with decimal commas is read by ``;`` (a first
line ``sep=;``, as Excel writes for itself, names it instead). Quoted
fields may hold newlines and delimiters. The first row is the column headers; short rows are
padded, so a ragged file is still one table; blank lines are dropped. The table sits under a
heading, the file's stem, as an XLSX sheet's does, so its rows are indexed on their own
(:mod:`memoryd.kb.rows`). Rows in date order (a bank statement) are set month by month, each
month under its own heading ("March 2026") with the header row repeated, so a question naming a
month finds that month's rows (:mod:`memoryd.kb.csv_dates`).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import unicodedata
from collections import Counter

from memoryd.kb.converted import ConversionError
from memoryd.kb.csv_dates import month_sections

__all__ = ["DELIMITERS", "csv_markdown", "sniff_delimiter"]

DELIMITERS = (",", ";", "\t", "|")
# How much of the file's opening the delimiter is sniffed from, and in how many rows.
SNIFF_CHARS = 65_536
SNIFF_ROWS = 200
# A file whose opening is more than this share control characters is binary data, not text.
MAX_CONTROL_SHARE = 0.01
_SEP_LINE = re.compile(r"^\ufeff?sep=([,;\t|])[ \t]*(?:\r\n|\n|\r|$)", re.IGNORECASE)
_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}


def csv_markdown(text: str, title: str, delimiter: str | None = None) -> str:
    """``text`` (a decoded CSV or TSV file) as ``# title`` and one Markdown table; raises
    :class:`ConversionError` naming the problem for binary data, an empty file, a file of
    headers without rows, or a field too large for a table cell."""
    _refuse_binary(text)
    if not text.strip():
        raise ConversionError("the CSV file holds no rows (only blank lines)")
    declared = _SEP_LINE.match(text)
    if declared:  # Excel's "sep=;" first line names the delimiter
        text = text[declared.end() :]
        delimiter = delimiter or declared.group(1)
    delimiter = delimiter or sniff_delimiter(text)
    rows = _rows(text, delimiter)
    if not rows:
        raise ConversionError("the CSV file holds no rows (only blank lines)")
    if len(rows) == 1:
        raise ConversionError(
            f"the CSV file holds only its header row ({len(rows[0])} columns) and no data rows"
        )
    width = max(len(row) for row in rows)
    header = [cell or f"column {i + 1}" for i, cell in enumerate(_padded(rows[0], width))]
    body = [_padded(row, width) for row in rows[1:]]
    lines = [f"# {title}", ""]
    for heading, section in month_sections(body):
        if heading:
            lines += [f"## {heading}", ""]
        lines += [_line(header), "| " + " | ".join(["---"] * width) + " |"]
        lines += [_line(row) for row in section] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def sniff_delimiter(text: str) -> str:
    """The delimiter among :data:`DELIMITERS` that splits the opening rows most consistently
    (the share of rows with the commonest field count), then into the most fields; a comma
    when none splits them (a one-column file)."""
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # no row cut in half
    best: tuple[float, int, int] = (0.0, 1, 0)
    chosen = ","
    for order, delimiter in enumerate(DELIMITERS):
        try:
            reader = csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter)
            opening = itertools.islice(reader, SNIFF_ROWS)
            widths = [len(row) for row in opening if any(cell.strip() for cell in row)]
        except csv.Error:
            continue
        if not widths:
            continue
        width, count = Counter(widths).most_common(1)[0]
        if width < 2:
            continue
        score = (round(count / len(widths), 1), width, -order)
        if score > best:
            best, chosen = score, delimiter
    return chosen


def _rows(text: str, delimiter: str) -> list[list[str]]:
    """Every non-blank row, its cells on one line each (a quoted newline becomes a space)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows: list[list[str]] = []
    try:
        for row in reader:
            cells = [" ".join(cell.split()) for cell in row]
            if any(cells):
                rows.append(cells)
    except csv.Error as error:
        raise ConversionError(
            f"cannot read the CSV file by {_NAMES[delimiter]} at line {reader.line_num} "
            f"({error}); a field that large is not a table cell: check the file type"
        ) from None
    return rows


def _refuse_binary(text: str) -> None:
    opening = text[:8192]
    controls = sum(1 for ch in opening if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f")
    replaced = opening.count("\ufffd")
    if opening and (controls + replaced) / len(opening) > MAX_CONTROL_SHARE:
        raise ConversionError(
            "the file holds binary data, not comma- or tab-separated text (its name says "
            "CSV); check the file type"
        )


def _padded(row: list[str], width: int) -> list[str]:
    return row + [""] * (width - len(row))


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
