"""PDF pages → Markdown (pure): what a reader sees on the page, as structure.

The PDF reader (:mod:`memoryd.kb.pdf`) hands over each page's text lines — cut into spans where
a wide gap separates them, with font size and weight — and the text of its pictures. This module:

- drops **page furniture**: lines repeated at the top or bottom of many pages (running headers,
  footers, "Table of Contents" links) and bare page numbers;
- finds **headings** by more than font size: a size clearly larger than the body's (unless that
  size holds much of the text: an exhibit set large is body text); numbered items ("PART II",
  "Item 7.", "Note 12 —"); short bold or capitalised lines standing alone; the outline
  (bookmarks) when the PDF has one. A heading is at most a line or two;
- rebuilds **tables** row by row: a row is a label and its numbers, "$" joined to the number it
  belongs to, each value in the column its position says, the column headers (the years) taken
  from the lines above, so every row keeps its label and every chunk of the table can repeat
  the header;
- escapes Markdown control characters that open extracted lines ("# Denotes …" is a footnote,
  not a heading), and marks where each page begins (``<!-- page N -->``).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# A line set at least this much larger than the body text is a heading by size …
HEADING_RATIO = 1.15
# … when its lines are short: at most this share of a body line's median length.
HEADING_LINE_SHARE = 0.6
# A heading is a line or two: longer text is prose, whatever it looks like.
MAX_HEADING_CHARS = 120
MAX_HEADING_LINES = 2
# Lines heavier than the body by this much (font weight) are bold.
BOLD_MARGIN = 150.0
# Furniture: a line in the top or bottom lines of at least this share of pages (and of at
# least three pages) is a running header or footer.
FURNITURE_LINES = 3
FURNITURE_MARGIN = 0.1
FURNITURE_SHARE = 0.3
FURNITURE_MIN_PAGES = 3
# A long line without numbers ends a table; shorter ones inside it are row labels.
MAX_LABEL_CHARS = 120
# A value column must hold values of at least this share of a table's rows.
MIN_COLUMN_SHARE = 0.2
# A table is misaligned when more rows than this put two numbers in one column, or when it
# has more value columns than any printed statement does; it is then written as row lines.
MAX_COLLIDING_SHARE = 0.2
MAX_COLUMNS = 12

PAGE_MARK = "<!-- page {} -->"
PAGE_MARK_PATTERN = re.compile(r"^<!-- page (\d+) -->$")

_NUMERIC = re.compile(
    r"^[(\[]?[-–—+]?\s*[$€£¥]?\s*[-–—+]?\(?\d[\d,]*(?:\.\d+)?\)?\s*(?:%|pts?|bps|x)?\)?\*?$"
    r"|^[-–—]+$|^n/?[ma]$|^nm$|^N/?[MA]$",
)
_CURRENCY = re.compile(r"^[$€£¥]$|^\($")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?[-–—]?\s*(?:\d{1,4}|[ivxlcdm]{1,6})\s*[-–—]?(?:\s+of\s+\d{1,4})?$", re.I
)
_STRUCTURE = (
    (re.compile(r"^PART\s+[IVX]+\b", re.I), 1),
    (re.compile(r"^ITEM\s+\d{1,2}[A-Z]?\s*[.:—–-]", re.I), 2),
    (re.compile(r"^NOTE\s+\d{1,2}\s*[.:—–-]", re.I), 4),
)
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
# Markdown that would change meaning at the start of an extracted line.
_MARKDOWN_OPENER = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|>|\||```|~~~|[-*+](?=\s)|\d{1,9}[.)](?=\s))")


@dataclass(frozen=True)
class Span:
    """A run of text on a line with no wide gap inside; ``x0``/``x1`` in points."""

    text: str
    x0: float
    x1: float


@dataclass(frozen=True)
class Line:
    """One text line of a page: spans left to right, its font size and weight."""

    top: float
    spans: tuple[Span, ...]
    size: float
    weight: float = 0.0

    @property
    def text(self) -> str:
        """The spans joined by single spaces."""
        return " ".join(span.text for span in self.spans)


@dataclass(frozen=True)
class Picture:
    """The text read from a picture (or a whole scanned page), placed at ``top``."""

    top: float
    text: str


@dataclass(frozen=True)
class Page:
    """One page's lines (top to bottom) and pictures; ``number`` is 1-based."""

    number: int
    lines: tuple[Line, ...]
    pictures: tuple[Picture, ...] = ()
    # The page's height in points (0 when unknown: then its first and last lines are its
    # edges, in reading order).
    height: float = 0.0


@dataclass(frozen=True)
class OutlineEntry:
    """A bookmark: its title, the page it points to and its depth (1 = top)."""

    title: str
    page: int
    level: int


@dataclass(frozen=True)
class LaidOut:
    """The Markdown of the pages and what the layout found."""

    markdown: str
    headings: tuple[str, ...]
    furniture_lines: int


@dataclass(frozen=True)
class _Style:
    """What the whole document says about its text: body size and weight, heading sizes."""

    body_size: float
    body_weight: float
    levels: dict[float, int]


def layout_markdown(pages: Sequence[Page], outline: Sequence[OutlineEntry] = ()) -> LaidOut:
    """The pages as Markdown with headings, tables and page marks."""
    furniture = find_furniture(pages)
    kept = [
        Page(
            page.number,
            tuple(line for i, line in enumerate(page.lines) if (page.number, i) not in furniture),
            page.pictures,
        )
        for page in pages
    ]
    style = _style(kept)
    bookmarks = {(e.page, _fold(e.title)): e.level for e in outline if e.title.strip()}
    out: list[str] = []
    headings: list[str] = []
    for page in kept:
        out.append(PAGE_MARK.format(page.number))
        out.extend(_page_blocks(page, style, bookmarks, headings))
    markdown = "\n\n".join(part for part in out if part.strip()) + "\n"
    return LaidOut(markdown, tuple(headings), len(furniture))


# --------------------------------------------------------------------------- furniture


def furniture_key(text: str) -> str:
    """A line as furniture is recognised: case and digits folded ("Page 12" = "Page 7")."""
    return re.sub(r"\d+", "#", " ".join(text.casefold().split()))


def find_furniture(pages: Sequence[Page]) -> set[tuple[int, int]]:
    """(page, line index) of running headers and footers, page numbers and "Table of
    Contents" links: lines in a page's top or bottom margin (else among its first or last few
    lines) that recur on many pages."""
    edges: dict[int, list[int]] = {}
    seen: dict[str, set[int]] = {}
    for page in pages:
        edge = _edge_lines(page)
        edges[page.number] = edge
        for index in edge:
            seen.setdefault(furniture_key(page.lines[index].text), set()).add(page.number)
    threshold = max(FURNITURE_MIN_PAGES, FURNITURE_SHARE * len(pages))
    recurring = {key for key, where in seen.items() if len(where) >= threshold}
    found: set[tuple[int, int]] = set()
    for page in pages:
        count = len(page.lines)
        # A page number may sit just under the text, above the margin: the first or last
        # two lines of a page that read as one are dropped too.
        ends = {*range(min(2, count)), *range(max(0, count - 2), count)}
        for index in sorted({*edges[page.number], *ends}):
            text = page.lines[index].text.strip()
            if _PAGE_NUMBER.match(text) or (
                index in edges[page.number]
                and (
                    furniture_key(text) in recurring
                    or text.casefold() in ("table of contents", "index to financial statements")
                )
            ):
                found.add((page.number, index))
    return found


def _edge_lines(page: Page) -> list[int]:
    """Indexes of the lines in the page's margins: its top and bottom tenth, or, when the
    page's size is unknown, its first and last few lines."""
    count = len(page.lines)
    if page.height > 0:
        margin = FURNITURE_MARGIN * page.height
        return [
            i
            for i, line in enumerate(page.lines)
            if line.top < margin or line.top > page.height - margin
        ]
    first = range(min(FURNITURE_LINES, count))
    return sorted({*first, *range(max(0, count - FURNITURE_LINES), count)})


# ---------------------------------------------------------------------------- headings


def _style(pages: Sequence[Page]) -> _Style:
    sizes: Counter[float] = Counter()
    weights: Counter[float] = Counter()
    lengths: dict[float, list[int]] = {}
    for page in pages:
        for line in page.lines:
            letters = sum(c.isalpha() for c in line.text)
            sizes[line.size] += letters
            weights[line.weight] += letters
            lengths.setdefault(line.size, []).append(len(line.text))
    body_size = sizes.most_common(1)[0][0] if sizes else 0.0
    body_weight = weights.most_common(1)[0][0] if weights else 0.0
    body_length = statistics.median(lengths.get(body_size, [0]))
    # A larger size is a heading size only when its lines are short: an exhibit set large is
    # full lines of body text.
    large = sorted(
        (
            size
            for size in sizes
            if body_size
            and size >= body_size * HEADING_RATIO
            and statistics.median(lengths[size]) <= max(HEADING_LINE_SHARE * body_length, 40)
        ),
        reverse=True,
    )
    # Parts are level 1, items 2, notes 4; sizes rank from 3 down; bold or capitalised lines
    # at body size are the deepest, 6.
    levels = {size: min(3 + index, 6) for index, size in enumerate(large)}
    return _Style(body_size, body_weight, levels)


def heading_level(
    line: Line, style: _Style, bookmarks: dict[tuple[int, str], int], page: int
) -> int:
    """The heading level of a line (1 highest), or 0 when it is not a heading."""
    text = line.text.strip()
    if not text or len(text) > MAX_HEADING_CHARS or not any(c.isalpha() for c in text):
        return 0
    if _is_numeric_row(line):
        return 0
    marked = bookmarks.get((page, _fold(text)))
    if marked is not None:
        return min(marked, 6)
    for pattern, level in _STRUCTURE:
        if pattern.match(text):
            return level
    if line.size in style.levels:
        return style.levels[line.size]
    if text.endswith(":") or (_SENTENCE_END.search(text) and not _looks_like_title(text)):
        return 0
    letters = [c for c in text if c.isalpha()]
    capitals = sum(c.isupper() for c in letters) / len(letters)
    bold = style.body_weight > 0 and line.weight >= style.body_weight + BOLD_MARGIN
    if (bold or (capitals > 0.8 and len(letters) >= 4)) and len(text) <= 100:
        return 6
    return 0


def _continues(line: Line, following: Line) -> bool:
    """Whether ``following`` carries on ``line``'s sentence (starts in lower case, same size,
    right below it)."""
    text = following.text.lstrip()
    return (
        bool(text)
        and text[0].islower()
        and following.size == line.size
        and 0 < following.top - line.top <= 2.2 * max(line.size, 1.0)
    )


def _looks_like_title(text: str) -> bool:
    """ "Item 1. Business." still reads as a title; a sentence ending in a period does not."""
    return len(text.split()) <= 6 and text[:1].isupper()


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


# ----------------------------------------------------------------------------- a page


def _page_blocks(
    page: Page, style: _Style, bookmarks: dict[tuple[int, str], int], headings: list[str]
) -> list[str]:
    """The page's Markdown blocks in reading order."""
    items: list[tuple[float, str]] = []
    lines = list(page.lines)
    tables = _table_runs(lines)
    covered = {i for run in tables for i in range(run[0], run[1])}
    index = 0
    paragraph: list[Line] = []
    previous: Line | None = None

    def flush() -> None:
        if paragraph:
            items.append((paragraph[0].top, _escape(_join_lines([ln.text for ln in paragraph]))))
            paragraph.clear()

    # Heading lines being gathered: a heading is one line or two; three or more lines in a
    # row set alike are a paragraph set in bold (or capitals), not headings.
    pending: list[Line] = []
    pending_level = 0

    def flush_heading() -> None:
        nonlocal pending_level
        if not pending:
            return
        text = " ".join(ln.text for ln in pending)
        if len(pending) <= MAX_HEADING_LINES and len(text) <= MAX_HEADING_CHARS:
            headings.append(text)
            items.append((pending[0].top, "#" * pending_level + " " + _escape_inline(text)))
        else:
            items.append((pending[0].top, _escape(_join_lines([ln.text for ln in pending]))))
        pending.clear()
        pending_level = 0

    starts = {run[0]: run for run in tables}
    while index < len(lines):
        if index in starts:
            flush()
            flush_heading()
            start, end = starts[index]
            items.append((lines[start].top, _table_markdown(lines[start:end], lines[:start])))
            index = end
            previous = None
            continue
        if index in covered:  # header lines a table took
            index += 1
            continue
        line = lines[index]
        level = heading_level(line, style, bookmarks, page.number)
        following = lines[index + 1] if index + 1 < len(lines) else None
        if level >= 6 and following is not None and _continues(line, following):
            level = 0  # a bold lead-in whose sentence runs on: "Deposits increased, driven by"
        if level:
            flush()
            if pending and level != pending_level:
                flush_heading()
            pending.append(line)
            pending_level = level
            previous = line
            index += 1
            continue
        flush_heading()
        gap_break = previous is not None and (
            line.size != previous.size
            or line.top - previous.top > 2.2 * max(line.size, 1.0)
            or line.top < previous.top  # the next column
        )
        if paragraph and gap_break:
            flush()
        paragraph.append(line)
        previous = line
        index += 1
    flush()
    flush_heading()
    # Each picture goes before the first block that starts below it; content order stays.
    placed: list[tuple[int, int, str]] = [(i, 1, text) for i, (_, text) in enumerate(items)]
    for picture in page.pictures:
        if picture.text.strip():
            where = next((i for i, (top, _) in enumerate(items) if top > picture.top), len(items))
            placed.append((where, 0, _escape(picture.text.strip())))
    blocks = [text for _, _, text in sorted(placed, key=lambda p: (p[0], p[1]))]
    return blocks


def _join_lines(lines: list[str]) -> str:
    """Lines of one paragraph as one, mending words hyphenated at a line end."""
    text = ""
    for line in lines:
        if text.endswith("-") and line[:1].islower():
            text = text[:-1] + line
        else:
            text = f"{text} {line}" if text else line
    return " ".join(text.split())


def _escape(text: str) -> str:
    """Text safe as a Markdown paragraph: an opening '#', '>', '|', list marker or code
    fence is literal."""
    return "\n".join(_MARKDOWN_OPENER.sub(r"\1\\\2", line) for line in text.split("\n"))


def _escape_inline(text: str) -> str:
    return text.replace("|", "\\|")


# ------------------------------------------------------------------------------ tables


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


def _is_numeric_row(line: Line) -> bool:
    label, values = _values(line)
    if not values or all(_YEAR.match(v.text) for v in values):
        return False  # years alone head columns: "(in millions) 2023 2022"
    # A line of prose that merely ends with a number is no table row: rows have a gap.
    return len(line.spans) > 1 or not label


def _table_runs(lines: list[Line]) -> list[tuple[int, int]]:
    """[start, end) of each table: numeric rows with short label lines between them, and the
    header lines right above the first row."""
    runs: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if not _is_numeric_row(lines[index]):
            index += 1
            continue
        start = end = index
        rows = 0
        probe = index
        while probe < len(lines):
            line = lines[probe]
            if _is_numeric_row(line):
                rows += 1
                end = probe + 1
                probe += 1
                continue
            if len(line.text) > MAX_LABEL_CHARS:
                break
            # Up to three label lines may sit between rows ("Current assets:").
            ahead = next(
                (k for k in range(probe, min(probe + 3, len(lines))) if _is_numeric_row(lines[k])),
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


def _table_markdown(rows: list[Line], before: list[Line]) -> str:
    """A table as Markdown: the header from the lines above the first numeric row, then one
    row per label with its values in the columns their positions say."""
    first = next(i for i, line in enumerate(rows) if _is_numeric_row(line))
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
    out = [_escape(" ".join(line.text.split())) for line in header_lines]
    for label, values in rows:
        cells = [_cell(span.text) for span in values]
        text = f"{label}: {', '.join(cells)}" if cells and label else label or ", ".join(cells)
        out.append(_escape(" ".join(text.split())))
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


def median_size(lines: Sequence[Line]) -> float:
    """The median font size of some lines (0 when there are none)."""
    return statistics.median(line.size for line in lines) if lines else 0.0
