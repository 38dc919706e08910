"""Heading-aware chunking of Markdown: pure, no I/O.

A document is cut at its headings first; a section longer than the target is packed into
chunks of about ``target_tokens`` o200k tokens, each starting with the tail of the one before
(``overlap`` of the target). Tables are cut between rows (the header row is repeated), code
blocks between lines, prose between sentences, and a single unit is cut by tokens only when
nothing else fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from memoryd.kb.blocks import HEADING, Block, parse_blocks

BREADCRUMB_SEPARATOR = " › "

_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)")
# Breadcrumb parts and the whole breadcrumb stay short.
MAX_CRUMB_PART = 80
MAX_CRUMB = 200
# Why 8: o200k averages about 4 characters a token in English prose; twice that leaves a window
# that usually holds a whole piece on the first try.
_CHARS_PER_TOKEN = 8


@dataclass(frozen=True)
class ChunkPolicy:
    """How big chunks are and how much of the previous chunk each repeats."""

    # Why 500: long enough to hold a section's argument, short enough that one chunk of a long
    # document does not crowd the context window; MiniLM reads it in two windows.
    target_tokens: int = 500
    overlap: float = 0.15
    # Why 40: the last few sentences of a long section say too little to be found or to be
    # worth a result of their own; they join the chunk before them.
    min_tokens: int = 40
    # A heading with less than this under it ("Item 6. [Reserved]") joins what follows.
    min_content_tokens: int = 8

    @property
    def overlap_tokens(self) -> int:
        """The overlap as a token count."""
        return int(self.target_tokens * self.overlap)


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it is stored: its place, heading path and text.

    ``overlap_chars`` is the length of the prefix repeated from the previous chunk (or a
    repeated table header), so a reader can join consecutive chunks without doubling text.
    ``pages`` says where pages begin in ``text``: (page, character offset) pairs, the first at
    offset 0 (empty when the document has no pages).
    """

    position: int
    headings: tuple[str, ...]
    text: str
    tokens: int
    overlap_chars: int = 0
    pages: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class _Unit:
    """The smallest piece packing moves as a whole: a sentence, a list item, a table row, a
    run of code lines."""

    text: str
    tokens: int
    joiner: str
    # The table a row belongs to (its header rows; a header unit names itself), "" for prose.
    header: str = ""
    # Table rows and code lines are never cut by tokens (the overlap skips them instead).
    cuttable: bool = True
    # A heading never ends a chunk: it stays with what follows it.
    sticky: bool = False
    page: int | None = None


TokenCount = Callable[[str], int]
TokenTail = Callable[[str, int], str]


def breadcrumb(title: str, headings: tuple[str, ...]) -> str:
    """``Title › Heading › Subheading`` (the title alone when there is no heading), each part
    cut to ``MAX_CRUMB_PART`` characters and, past ``MAX_CRUMB``, the middle headings left out
    (the title and the nearest heading say the most)."""
    parts = [title.strip()] if title.strip() else []
    parts += [h for h in headings if h and h != title.strip()]
    parts = [_shorten(p, MAX_CRUMB_PART) for p in parts]
    while len(parts) > 2 and len(BREADCRUMB_SEPARATOR.join(parts)) > MAX_CRUMB:
        parts.pop(1)
    return _shorten(BREADCRUMB_SEPARATOR.join(parts), MAX_CRUMB)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


def chunk_markdown(
    markdown: str,
    count: TokenCount,
    tail: TokenTail,
    policy: ChunkPolicy | None = None,
) -> list[ChunkDraft]:
    """Heading-aware chunks of ``markdown``, none over the target (plus a repeated table
    header), chunks under ``policy.min_tokens`` merged into a neighbour. ``count`` measures
    tokens; ``tail(text, n)`` returns the last ``n`` tokens of ``text`` (for a unit too long
    for any other cut)."""
    policy = policy or ChunkPolicy()
    drafts: list[ChunkDraft] = []
    for headings, section in _sections(parse_blocks(markdown)):
        units = [
            replace(unit, page=block.page)
            for block in section
            for unit in _fitting(_units(block, count, tail, policy), count, tail, policy)
        ]
        for text, overlap_chars, pages in _pack(units, policy, count, tail):
            if text[overlap_chars:].strip():
                drafts.append(
                    ChunkDraft(len(drafts), headings, text, count(text), overlap_chars, pages)
                )
    return _merge_small(drafts, count, policy)


def _fitting(
    units: list[_Unit], count: TokenCount, tail: TokenTail, policy: ChunkPolicy
) -> list[_Unit]:
    """Units no chunk could hold (a table row or code line longer than a chunk) cut by
    tokens: the ceiling holds whatever the source looks like."""
    room = max(1, policy.target_tokens - policy.overlap_tokens) - 1
    out: list[_Unit] = []
    for unit in units:
        if unit.tokens <= room + 1 or unit.sticky:
            out.append(unit)
            continue
        glue = unit.joiner
        for piece in _token_pieces(unit.text, count, tail, max(1, room - 1)):
            out.append(replace(unit, text=piece, tokens=count(glue + piece), joiner=glue))
            glue = "\n" if unit.header else " "
    return out


def _merge_small(
    drafts: list[ChunkDraft], count: TokenCount, policy: ChunkPolicy
) -> list[ChunkDraft]:
    """Near-empty chunks joined to a neighbour: the short tail of a long section (under
    ``min_tokens`` of its own) to the chunk before it; a heading with next to nothing under it
    ("Item 6. [Reserved]"), or a short section whose subsections follow, to the chunk after it.
    Each only when the two stay under the ceiling (the target plus the overlap). A short
    section with content of its own among its siblings keeps its chunk, so that its
    breadcrumb names it and ``read_kb`` finds it by heading."""
    ceiling = policy.target_tokens + policy.overlap_tokens
    merged: list[ChunkDraft] = []
    index = 0
    while index < len(drafts):
        draft = drafts[index]
        own = count(draft.text[draft.overlap_chars :])
        tail = draft.overlap_chars > 0 or not draft.text.startswith("#")
        if (
            tail
            and own < policy.min_tokens
            and merged
            and (merged[-1].headings == draft.headings and merged[-1].tokens + own <= ceiling)
        ):
            merged[-1] = _joined(merged[-1], draft, draft.overlap_chars, count)
            index += 1
            continue
        following = drafts[index + 1] if index + 1 < len(drafts) else None
        # A heading with next to nothing under it, or a short introduction to subsections,
        # opens the chunk after it: the subsection's breadcrumb names the parent too.
        opens_next = _content_tokens(draft.text, count) < policy.min_content_tokens or (
            own < policy.min_tokens
            and following is not None
            and len(following.headings) > len(draft.headings)
            and following.headings[: len(draft.headings)] == draft.headings
        )
        if (
            not tail
            and opens_next
            and following is not None
            and following.overlap_chars == 0
            and draft.tokens + following.tokens <= ceiling
        ):
            joined = _joined(draft, following, 0, count)
            merged.append(replace(joined, headings=following.headings))
            index += 2
            continue
        merged.append(draft)
        index += 1
    return [replace(d, position=i) for i, d in enumerate(merged)]


def _content_tokens(text: str, count: TokenCount) -> int:
    """Tokens of a chunk's text outside its heading lines."""
    body = "\n".join(line for line in text.split("\n") if not HEADING.match(line))
    return count(body) if body.strip() else 0


def _joined(first: ChunkDraft, second: ChunkDraft, skip: int, count: TokenCount) -> ChunkDraft:
    """``first`` followed by ``second`` (less its first ``skip`` characters, a repeat)."""
    rest = second.text[skip:]
    lead = len(rest) - len(rest.lstrip("\n"))
    base = len(first.text) + 2
    text = first.text + "\n\n" + rest[lead:]
    pages = list(first.pages)
    for page, offset in second.pages:
        if not pages or pages[-1][0] != page:
            pages.append((page, base + max(0, offset - skip - lead)))
    return replace(first, text=text, tokens=count(text), pages=tuple(pages))


def join_chunks(texts: list[tuple[str, int]]) -> str:
    """Consecutive chunks (text, overlap_chars) as one text, each repeated prefix dropped."""
    parts = [text if i == 0 else text[overlap:] for i, (text, overlap) in enumerate(texts)]
    return "\n\n".join(part.strip("\n") for part in parts if part.strip())


def _sections(blocks: list[Block]) -> Iterator[tuple[tuple[str, ...], list[Block]]]:
    """Blocks grouped under their heading path; each section starts with its heading."""
    path: list[tuple[int, str]] = []
    current: list[Block] = []
    for block in blocks:
        if block.kind == "heading":
            if any(b.kind != "heading" for b in current):
                yield tuple(text for _, text in path), current
                current = []
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, block.text))
            # A heading directly under another heading travels with the section below it.
            current.append(block)
            continue
        current.append(block)
    if any(b.kind != "heading" for b in current):
        yield tuple(text for _, text in path), current


def _units(block: Block, count: TokenCount, tail: TokenTail, policy: ChunkPolicy) -> list[_Unit]:
    """A block as packable units: whole when it fits, else cut at its natural seams."""
    if block.kind == "heading":
        text = "#" * block.level + " " + block.text
        return [_Unit(text, count(text) + 1, "\n\n", sticky=True)]
    tokens = count(block.text) + 1  # and the blank line before it
    if tokens <= policy.target_tokens:
        return [_Unit(block.text, tokens, "\n\n")]
    if block.kind == "table":
        rows = block.text.split("\n")
        header_rows = 2 if len(rows) > 1 and _TABLE_SEPARATOR.match(rows[1]) else 1
        header = "\n".join(rows[:header_rows])
        units = [_Unit(header, count(header) + 1, "\n\n", header, cuttable=False)]
        units += [
            _Unit(row, count(row) + 1, "\n", header, cuttable=False) for row in rows[header_rows:]
        ]
        return units
    if block.kind == "code":
        lines = block.text.split("\n")
        return [
            _Unit(line, count("\n" + line), "\n\n" if i == 0 else "\n", cuttable=False)
            for i, line in enumerate(lines)
        ]
    if block.kind == "list":
        items = re.split(r"\n(?=\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+)", block.text)
        units = []
        for index, item in enumerate(items):
            units.extend(_prose_units(item, "\n\n" if index == 0 else "\n", count, tail, policy))
        return units
    return _prose_units(block.text, "\n\n", count, tail, policy)


def _prose_units(
    text: str, joiner: str, count: TokenCount, tail: TokenTail, policy: ChunkPolicy
) -> list[_Unit]:
    """Sentences; a sentence longer than the target is cut by tokens (nothing else fits), into
    pieces that leave room for the overlap."""
    units: list[_Unit] = []
    piece_size = max(1, policy.target_tokens - policy.overlap_tokens)
    for index, sentence in enumerate(_SENTENCE_END.split(text)):
        glue = joiner if index == 0 else " "
        tokens = count(glue + sentence)
        if tokens <= piece_size:
            units.append(_Unit(sentence, tokens, glue))
            continue
        for piece in _token_pieces(sentence, count, tail, piece_size - 1):
            units.append(_Unit(piece, count(glue + piece), glue))
            glue = ""
    return units


def _token_pieces(text: str, count: TokenCount, tail: TokenTail, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` tokens, front to back.

    Each piece is cut from a window at the front of what is left, a few times the piece's
    likely length (widened while it holds no more than ``size`` tokens), never from the whole
    rest: the tokenizer reads each character a bounded number of times, so cutting is linear
    in the text's length (a 50 MB log without a full stop took a day when each cut re-read
    the rest)."""
    pieces: list[str] = []
    start = 0  # where what is left begins (never sliced off: copying the rest is quadratic)
    width = max(64, size * _CHARS_PER_TOKEN)
    while start < len(text):
        window = text[start : start + width]
        tokens = count(window)
        if tokens <= size:
            if start + len(window) >= len(text):
                break
            width *= 2
            continue
        end = _suffix(window, tail(window, tokens - size))
        head = window[: len(window) - len(end)]
        if not head:
            break
        pieces.append(head)
        start += len(head)
        width = max(64, size * _CHARS_PER_TOKEN)
    if start < len(text) or not pieces:
        pieces.append(text[start:])
    return pieces


def _pack(
    units: list[_Unit], policy: ChunkPolicy, count: TokenCount, tail: TokenTail
) -> Iterator[tuple[str, int, tuple[tuple[int, int], ...]]]:
    """Units packed into chunks of at most the target, each new chunk opening with the tail
    of the previous one (whole units when they fit in the overlap). A heading stays with what
    follows it; table rows carry their header; rows and prose never overlap each other.
    Yields (text, overlap characters, where pages begin)."""
    current: list[_Unit] = []
    used = 0
    overlap_count = 0
    for unit in units:
        only_headings = all(u.sticky for u in current[overlap_count:])
        # Headings stay with what follows them, unless they alone would fill the chunk.
        full = used + unit.tokens > policy.target_tokens
        if current and full and (not only_headings or used > policy.target_tokens // 2):
            yield _rendered(current, overlap_count)
            carried = _carry(current, unit, policy, count, tail)
            current, overlap_count = carried, len(carried)
            used = sum(u.tokens for u in current)
        current.append(unit)
        used += unit.tokens
    if current and len(current) > overlap_count:
        yield _rendered(current, overlap_count)


def _rendered(
    units: list[_Unit], overlap_count: int
) -> tuple[str, int, tuple[tuple[int, int], ...]]:
    """(text, overlap characters, (page, offset) where each page begins in the text)."""
    text = ""
    pages: list[tuple[int, int]] = []
    for index, unit in enumerate(units):
        if index:
            text += unit.joiner
        if unit.page is not None and (not pages or pages[-1][0] != unit.page):
            pages.append((unit.page, len(text) if pages else 0))
        text += unit.text
    overlap = len(_render(units[:overlap_count])) if overlap_count else 0
    return text, overlap, tuple(pages)


def _carry(
    previous: list[_Unit], unit: _Unit, policy: ChunkPolicy, count: TokenCount, tail: TokenTail
) -> list[_Unit]:
    """What the next chunk repeats before ``unit``: the overlap of the same kind of content
    (prose after prose, rows of the same table after rows), a table row's header, and never
    so much that ``unit`` no longer fits."""
    starts_table = bool(unit.header) and unit.text == unit.header
    wanted = "" if starts_table else unit.header
    carried = [u for u in _overlap(previous, policy, tail) if u.header == wanted]
    if unit.header and not starts_table:
        carried = [u for u in carried if u.text != unit.header]
        carried = [_Unit(unit.header, count(unit.header) + 1, "\n\n", unit.header, False,
                         page=unit.page), *carried]  # fmt: skip
    keep = 1 if unit.header and not starts_table else 0
    while len(carried) > keep and (
        sum(u.tokens for u in carried) + unit.tokens > policy.target_tokens
    ):
        carried.pop(keep)
    return carried


def _overlap(previous: list[_Unit], policy: ChunkPolicy, tail: TokenTail) -> list[_Unit]:
    """The end of the previous chunk to repeat: whole trailing units up to the overlap; a
    table row or code line is never cut, a long sentence gives its last tokens."""
    budget = policy.overlap_tokens
    if budget <= 0:
        return []
    taken: list[_Unit] = []
    for unit in reversed(previous):
        if unit.tokens > budget or unit.sticky:
            break
        taken.insert(0, unit)
        budget -= unit.tokens
    if taken:
        return taken
    last = previous[-1]
    if not last.cuttable or last.sticky:
        return []
    piece = _suffix(last.text, tail(last.text, policy.overlap_tokens)).lstrip()
    return [_Unit(piece, policy.overlap_tokens, "", page=last.page)] if piece else []


def _suffix(text: str, end: str) -> str:
    """``end`` as an exact suffix of ``text``: a token cut inside a character (an emoji is
    several tokens) decodes to U+FFFD, which is dropped so no character is mangled."""
    while end and not text.endswith(end):
        end = end[1:]
    return end


def _render(units: list[_Unit]) -> str:
    """Units joined with their own glue (none before the first)."""
    text = ""
    for index, unit in enumerate(units):
        text += unit.text if index == 0 else unit.joiner + unit.text
    return text
