"""PDF pages → Markdown (pure): what a reader sees on the page, as structure.

The PDF reader (:mod:`memoryd.kb.pdf.reader`) hands over each page's text lines — cut into spans
where
a wide gap separates them, with font size and weight — and the text of its pictures. This module:

- drops **page furniture**: lines repeated at the top or bottom of many pages (running headers,
  footers, "Table of Contents" links) and bare page numbers;
- finds **headings** by more than font size: a size clearly larger than the body's (unless that
  size holds much of the text: an exhibit set large is body text); numbered items ("PART II",
  "Item 7.", "Note 12 —"); short bold or capitalised lines standing alone; the outline
  (bookmarks) when the PDF has one. A heading is at most a line or two;
- rebuilds **tables** row by row (:mod:`memoryd.kb.tables`): a row is a label and its numbers,
  "$" joined to the number it belongs to, each value in the column its position says, the
  column headers (the years) taken from the lines above, so every row keeps its label and
  every chunk of the table can repeat the header;
- escapes Markdown control characters that open extracted lines ("# Denotes …" is a footnote,
  not a heading), and marks where each page begins (``<!-- page N -->``).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.kb.hygiene import escape_markdown
from memoryd.kb.pdf.pages import Line, OutlineEntry, Page
from memoryd.kb.tables import is_numeric_row, table_markdown, table_runs

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

PAGE_MARK = "<!-- page {} -->"

_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?[-–—]?\s*(?:\d{1,4}|[ivxlcdm]{1,6})\s*[-–—]?(?:\s+of\s+\d{1,4})?$", re.I
)
_STRUCTURE = (
    (re.compile(r"^PART\s+[IVX]+\b", re.I), 1),
    (re.compile(r"^ITEM\s+\d{1,2}[A-Z]?\s*[.:—–-]", re.I), 2),
    (re.compile(r"^NOTE\s+\d{1,2}\s*[.:—–-]", re.I), 4),
)
_SENTENCE_END = re.compile(r"[.;,]$")


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
    if is_numeric_row(line):
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
    tables = table_runs(lines)
    covered = {i for run in tables for i in range(run[0], run[1])}
    index = 0
    paragraph: list[Line] = []
    previous: Line | None = None

    def flush() -> None:
        if paragraph:
            items.append(
                (paragraph[0].top, escape_markdown(_join_lines([ln.text for ln in paragraph])))
            )
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
            items.append(
                (pending[0].top, escape_markdown(_join_lines([ln.text for ln in pending])))
            )
        pending.clear()
        pending_level = 0

    starts = {run[0]: run for run in tables}
    while index < len(lines):
        if index in starts:
            flush()
            flush_heading()
            start, end = starts[index]
            items.append((lines[start].top, table_markdown(lines[start:end], lines[:start])))
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
            placed.append((where, 0, escape_markdown(picture.text.strip())))
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


def _escape_inline(text: str) -> str:
    return text.replace("|", "\\|")
