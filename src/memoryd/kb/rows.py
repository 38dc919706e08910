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

from dataclasses import dataclass

# A line before a table longer than this is running text, not the table's title.
MAX_TITLE_CHARS = 200
# A row's unit is cut at this many characters (a table of many columns).
MAX_ROW_CHARS = 600
# A row's label text (what its vector embeds) is cut at this many characters.
MAX_LABEL_CHARS = 300


@dataclass(frozen=True)
class TableRow:
    """One table row of a chunk as a search unit: its order within the chunk, its text (what
    the rows' full-text index holds) and its label text (what its vector embeds)."""

    index: int
    text: str
    label: str = ""


def table_rows(breadcrumb: str, text: str) -> list[TableRow]:
    """The rows with at least one value of every Markdown table in ``text``, each as a unit."""
    lines = text.split("\n")
    rows: list[TableRow] = []
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
        for unit, label in _units(breadcrumb, title, block):
            rows.append(TableRow(len(rows), unit, label))
        title = ""
    return rows


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
