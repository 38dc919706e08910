"""Table rows as search units (pure): each row of a chunk's Markdown tables as a line of its own
that carries what a reader of the row sees around it.

A question about one line item in one year ("Apple's FY2022 capex") matches one row of a
statement, but a chunk holds thirty rows and the rows around it dilute the match. So each row is
also indexed alone, as "breadcrumb | table title | group: label | header: value | …": the
document's title and the chunk's headings, the line that introduces the table, the row label
with the group it sits under ("Investing activities:"), and each value with its column header
(the years). A row found leads to its chunk: the result is still the chunk and the page a person
reads.

Each row also has a label text, embedded once at ingest: "label (group) — table title". A
question's words often are not the row's ("capex" for "Purchases of property and equipment"),
and the vector of the label is where a small embedding model can bridge that; the values and
the breadcrumb stay out of it, since every row of a document shares them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

# A year in a column header ("2022", "September 24, 2022", "Q1 2022").
YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# A line before a table longer than this is running text, not the table's title.
MAX_TITLE_CHARS = 200
# A row's unit is cut at this many characters (a table of many columns).
MAX_ROW_CHARS = 600
# A row's label text (what its vector embeds) is cut at this many characters.
MAX_LABEL_CHARS = 300
# Chunks whose rows with their headers and values are kept (a few MB at most).
HEADED_CACHE = 2048


@dataclass(frozen=True)
class TableRow:
    """One table row of a chunk as a search unit: its order within the chunk, its text (what
    the rows' full-text index holds) and its label text (what its vector embeds)."""

    index: int
    text: str
    label: str = ""


def table_rows(breadcrumb: str, text: str) -> list[TableRow]:
    """The rows with at least one value of every Markdown table in ``text``, each as a unit."""
    rows: list[TableRow] = []
    for title, block in _tables(text):
        for unit, label in _units(breadcrumb, title, block):
            rows.append(TableRow(len(rows), unit, label))
    return rows


def _tables(text: str) -> Iterator[tuple[str, list[list[str]]]]:
    """Each Markdown table of ``text`` as its cells, row by row, with the line just before it
    when that line is short enough to be its title ("" otherwise)."""
    lines = text.split("\n")
    index = 0
    title = ""
    while index < len(lines):
        line = lines[index].strip()
        if not line.startswith("|"):
            if line and not line.startswith("<!--"):
                title = line if len(line) <= MAX_TITLE_CHARS else ""
            index += 1
            continue
        block: list[list[str]] = []
        while index < len(lines) and lines[index].strip().startswith("|"):
            block.append(_cells(lines[index]))
            index += 1
        yield title, block
        title = ""


def headed_rows(text: str, context: str = "") -> list[tuple[str, tuple[str, ...]]]:
    """Each table row of ``text`` with values as (its label with its group, the column
    headers over its values): what a question naming a line item and a period matches. A
    table whose header names no year (cut from its header by chunking, or set without one)
    takes, column by column, the years of the line before it or else of ``context`` (the
    chunk's headings: "Year Ended June 30, 2022 2021 2020")."""
    return [(label, heads) for label, heads, _ in headed_values(text, context)]


@lru_cache(maxsize=HEADED_CACHE)
def headed_values(
    text: str, context: str = ""
) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    """:func:`headed_rows` with each row's values, one under each of its headers (kept for
    the last chunks asked: a search reads the same results' rows twice, and the statements
    come back question after question)."""
    found: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    for title, block in _tables(text):
        ruled = len(block) >= 2 and _is_rule(block[1])
        header, body = (block[0], block[2:]) if ruled else ([], block)
        group = ""
        for cells in body:
            if _is_rule(cells):
                continue
            if not cells[0] or not any(cells[1:]):  # a row without a label heads the columns
                header, group = (cells, group) if cells[0] == "" else (header, cells[0])
                continue
            if not any(YEAR.search(h) for h in header):
                header = ["", *(YEAR.findall(title) or YEAR.findall(context))]
            under = [i for i, v in enumerate(cells) if i and v and i < len(header)]
            heads, values = tuple(header[i] for i in under), tuple(cells[i] for i in under)
            found.append((f"{group} {cells[0]}".strip(), heads, values))
    return tuple(found)


def _units(breadcrumb: str, title: str, block: list[list[str]]) -> list[tuple[str, str]]:
    """A table's rows with values as (unit text, label text) (its first line is the header
    when a rule follows it)."""
    if len(block) >= 2 and _is_rule(block[1]):
        header, body = block[0], block[2:]
    else:
        header, body = [], block
    units: list[tuple[str, str]] = []
    group = ""
    for cells in body:
        if _is_rule(cells) or not any(cells):
            continue
        label, values = cells[0], cells[1:]
        if not any(values):
            group = label
            continue
        shown = [
            f"{header[i + 1]}: {value}" if i + 1 < len(header) and header[i + 1] else value
            for i, value in enumerate(values)
            if value
        ]
        named = f"{group} {label}".strip() if group and group != label else label
        parts = [p for p in (breadcrumb, title, named, *shown) if p]
        units.append((" | ".join(parts)[:MAX_ROW_CHARS], label_text(label, group, title)))
    return units


def label_text(label: str, group: str, title: str) -> str:
    """What a row's vector embeds: its label, the group it sits under and the table's title
    ("" for a row without a label: a vector of numbers alone would match nothing)."""
    if not any(ch.isalpha() for ch in label):
        return ""
    text = f"{label} ({group})" if group and group != label else label
    title = title.lstrip("#").strip()
    return f"{text} — {title}"[:MAX_LABEL_CHARS] if title else text[:MAX_LABEL_CHARS]


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [" ".join(cell.replace("\\|", "|").split()) for cell in inner.split("|")]


def _is_rule(cells: list[str]) -> bool:
    return bool(cells) and all(set(cell) <= set("-: ") and cell for cell in cells)
