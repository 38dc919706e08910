"""Tables without rules, as financial statements set them, rebuilt row by row (pure).

A table is a run of lines that end in numeric cells, with short label lines between them. Each
row keeps its label and its values; value columns are found by clustering the numbers' right
edges (figures are right-aligned); a lone "$" or "(" joins the number after it; a column few
rows use is a footnote mark and folds back into the label; a label continued on the next line
is merged; the header (the years, "in millions") comes from the lines above the first numeric
row, each piece in the column it sits over. A table whose columns cannot hold its rows is
written as lines "label: value, value" instead.
"""

from __future__ import annotations

import re
from collections import Counter

from memoryd.kb.hygiene import escape_markdown
from memoryd.kb.pdf.pages import Line, Span

# A long line without numbers ends a table; shorter ones inside it are row labels.
MAX_LABEL_CHARS = 120
# A value column must hold values of at least this share of a table's rows.
MIN_COLUMN_SHARE = 0.2
# A table is misaligned when more rows than this put two numbers in one column, or when it
# has more value columns than any printed statement does; it is then written as row lines.
MAX_COLLIDING_SHARE = 0.2
MAX_COLUMNS = 12

_NUMERIC = re.compile(
    r"^[(\[]?[-–—+]?\s*[$€£¥]?\s*[-–—+]?\(?\d[\d,]*(?:\.\d+)?\)?\s*(?:%|pts?|bps|x)?\)?\*?$"
    r"|^[-–—]+$|^n/?[ma]$|^nm$|^N/?[MA]$",
)
_CURRENCY = re.compile(r"^[$€£¥]$|^\($")
_SENTENCE_END = re.compile(r"[.;,]$")
_FOOTNOTE_MARKS = re.compile(r"^\d{1,2}(?:,\d{1,2})*$")  # "1", "1,2,3" after a value
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_MONTH_DAY = re.compile(
    r"^(?:(?:three|six|nine|twelve) months ended |year ended |as of )?"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2},?$",
    re.I,
)
_YEAR_IN = re.compile(r"\b(?:19|20)\d\d\b")
_UNITS = re.compile(r"\bin (millions|thousands|billions)\b", re.I)


def is_numeric(text: str) -> bool:
    """A table value: a number (with sign, currency, parentheses, percent) or a dash."""
    return bool(_NUMERIC.match(text.strip()))


def _cells(line: Line) -> list[Span]:
    """The line's spans with a lone "$" (or "(") joined to the number after it."""
    cells: list[Span] = []
    carry: Span | None = None
    for span in line.spans:
        if carry is not None:
            span = Span(carry.text + span.text, carry.x0, span.x1)
            carry = None
        if _CURRENCY.match(span.text.strip()):
            carry = span
            continue
        cells.append(span)
    if carry is not None:
        cells.append(carry)
    return cells


def _values(line: Line) -> tuple[str, list[Span]]:
    """(label, value cells): the trailing numeric cells and the text before them."""
    cells = _cells(line)
    cut = len(cells)
    while cut > 0 and is_numeric(cells[cut - 1].text):
        cut -= 1
    label = " ".join(c.text for c in cells[:cut])
    return label, cells[cut:]


def is_numeric_row(line: Line) -> bool:
    label, values = _values(line)
    if not values or all(_YEAR.match(v.text) for v in values):
        return False  # years alone head columns: "(in millions) 2023 2022"
    # A line of prose that merely ends with a number is no table row: rows have a gap.
    return len(line.spans) > 1 or not label


def table_runs(lines: list[Line]) -> list[tuple[int, int]]:
    """[start, end) of each table: numeric rows with short label lines between them, and the
    header lines right above the first row."""
    runs: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if not is_numeric_row(lines[index]):
            index += 1
            continue
        start = end = index
        rows = 0
        probe = index
        while probe < len(lines):
            line = lines[probe]
            if is_numeric_row(line):
                rows += 1
                end = probe + 1
                probe += 1
                continue
            if len(line.text) > MAX_LABEL_CHARS:
                break
            # Up to three label lines may sit between rows ("Current assets:").
            ahead = next(
                (k for k in range(probe, min(probe + 3, len(lines))) if is_numeric_row(lines[k])),
                None,
            )
            if ahead is None:
                break
            probe = ahead
        if rows >= 2:
            runs.append((_table_head(lines, start, runs[-1][1] if runs else 0), end))
            index = end
        else:
            index += 1
    return runs


def _table_head(lines: list[Line], start: int, floor: int) -> int:
    """Where a table starts above its first row: the column header lines (years, dates,
    units) and the row labels between them and the first row ("ASSETS", "Current assets:")."""
    probe = start
    labels = 0
    while probe > floor and labels < 4:
        line = lines[probe - 1]
        if _header_like(line):
            break
        if len(line.text) > 60 or _SENTENCE_END.search(line.text.strip()):
            return start
        labels += 1
        probe -= 1
    else:
        return start
    while probe > floor and start - probe < 8 and _header_like(lines[probe - 1]):
        probe -= 1
    return probe


def _header_like(line: Line) -> bool:
    """A column header line: short, with years, dates or a few column words."""
    text = line.text.strip()
    if not text or len(text) > 80 or text.endswith("."):
        return False
    if _YEAR_IN.search(text) or _UNITS.search(text) or _MONTH_DAY.search(text):
        return True
    return len(line.spans) >= 2 and all(len(s.text) <= 30 for s in line.spans)


def table_markdown(rows: list[Line], before: list[Line]) -> str:
    """A table as Markdown: the header from the lines above the first numeric row, then one
    row per label with its values in the columns their positions say."""
    first = next(i for i, line in enumerate(rows) if is_numeric_row(line))
    split = 0
    while split < first and _header_like(rows[split]):
        split += 1
    header_lines, body = rows[:split], rows[split:]
    split_rows = [_values(line) for line in body]
    columns = _columns([span for _, values in split_rows for span in values])
    # A "column" few rows use is a footnote mark after a label ("Revenues (1)"), not a column.
    support = Counter(
        _column_of(span, columns, nearest=True) for _, values in split_rows for span in values
    )
    numeric_rows = sum(1 for _, values in split_rows if values)
    needed = max(2, MIN_COLUMN_SHARE * numeric_rows)
    keep = [i for i in range(len(columns)) if support[i] >= needed]
    kept = [columns[i] for i in keep]
    # Labels continued over two lines ("Trade receivables, net of …" / "respectively 6,915").
    merged: list[tuple[str, list[Span]]] = []
    carry = ""
    for (label, found), line in zip(split_rows, body, strict=True):
        values = []
        for span in found:
            if _column_of(span, columns, nearest=True) in keep:
                values.append(span)
            else:
                label = f"{label} {span.text}".strip()
        if not values:
            if carry:
                merged.append((carry, []))
            carry = label or line.text
            continue
        if carry and label[:1].islower():
            label = f"{carry} {label}"
        elif carry:
            merged.append((carry, []))
        carry = ""
        merged.append((label, values))
    if carry:
        merged.append((carry, []))
    columns = kept
    if _misaligned(merged, columns):
        return _row_lines(header_lines, merged)
    titles = [""] * len(columns)
    stub: list[str] = []
    for line in header_lines:
        for span in line.spans:
            column = _column_of(span, columns)
            if column is None:
                stub.append(span.text)
            else:
                titles[column] = f"{titles[column]} {span.text}".strip()
    header = [" ".join(stub), *titles]
    out = ["| " + " | ".join(_cell(c) for c in header) + " |", "|" + "---|" * len(header)]
    for label, values in merged:
        cells = [""] * len(columns)
        for span in values:
            column = _column_of(span, columns, nearest=True)
            if column is not None:
                cells[column] = f"{cells[column]} {span.text}".strip()
        out.append("| " + " | ".join(_cell(c) for c in [label, *cells]) + " |")
    return "\n".join(out)


def _misaligned(rows: list[tuple[str, list[Span]]], columns: list[tuple[float, float]]) -> bool:
    """Whether the columns fail the rows: too many of them, or numbers sharing a column."""
    if len(columns) > MAX_COLUMNS:
        return True
    colliding = 0
    valued = 0
    for _, values in rows:
        if not values:
            continue
        valued += 1
        seen = Counter(
            _column_of(span, columns, nearest=True)
            for span in values
            if any(ch.isdigit() for ch in span.text) and not _FOOTNOTE_MARKS.match(span.text)
        )
        colliding += any(count > 1 for count in seen.values())
    return valued > 0 and colliding > MAX_COLLIDING_SHARE * valued


def _row_lines(header_lines: list[Line], rows: list[tuple[str, list[Span]]]) -> str:
    """A table the columns cannot hold, as lines "label: value, value" under its header."""
    out = [escape_markdown(" ".join(line.text.split())) for line in header_lines]
    for label, values in rows:
        cells = [_cell(span.text) for span in values]
        text = f"{label}: {', '.join(cells)}" if cells and label else label or ", ".join(cells)
        out.append(escape_markdown(" ".join(text.split())))
    return "\n\n".join(line for line in out if line)


def _columns(spans: list[Span]) -> list[tuple[float, float]]:
    """Value columns as x ranges: spans grouped by their right edges (numbers align right)."""
    ranges: list[list[float]] = []
    for span in sorted(spans, key=lambda s: s.x1):
        if ranges and span.x1 - ranges[-1][2] <= 12.0:
            ranges[-1][0] = min(ranges[-1][0], span.x0)
            ranges[-1][1] = max(ranges[-1][1], span.x1)
            ranges[-1][2] = span.x1
        else:
            ranges.append([span.x0, span.x1, span.x1])
    return [(r[0], r[1]) for r in ranges]


def _column_of(span: Span, columns: list[tuple[float, float]], nearest: bool = False) -> int | None:
    """The column a span sits in: overlapping its x range (else the nearest, if asked)."""
    best: int | None = None
    best_distance = float("inf")
    for index, (x0, x1) in enumerate(columns):
        overlap = min(x1, span.x1) - max(x0, span.x0)
        if overlap > 0:
            return index
        distance = min(abs(span.x1 - x1), abs(span.x0 - x0))
        if distance < best_distance:
            best, best_distance = index, distance
    if nearest or best_distance <= 12.0:
        return best
    return None


def _cell(text: str) -> str:
    text = " ".join(text.split())
    compact = text.replace(" ", "")
    if " " in text and is_numeric(compact) and not compact.endswith("%"):
        text = compact  # "(27,620 )" as set with a hanging parenthesis
    return text.replace("|", "\\|")
