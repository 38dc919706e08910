"""Markdown cut into blocks (headings, paragraphs, lists, tables, fenced code) with the page each
starts on: pure, no I/O. The chunker and the converters read Markdown through this one parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["heading", "paragraph", "list", "table", "code"]

# A closing run of '#' counts only after a space ("# Why C#" keeps its '#').
HEADING = re.compile(r"^(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+")
_PAGE_MARK = re.compile(r"^<!-- page (\d+) -->$")
# A heading longer than this is text set large, not a heading (one or two lines at most).
MAX_HEADING_CHARS = 150


@dataclass(frozen=True)
class Block:
    """One Markdown block: a heading, a paragraph, a list, a table or a fenced code block,
    and the page it starts on (when the document has pages)."""

    kind: BlockKind
    text: str
    level: int = 0
    page: int | None = None


def parse_blocks(markdown: str) -> list[Block]:
    """Split Markdown into blocks; never splits inside a fenced code block or a table."""
    blocks: list[Block] = []
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    index = 0
    paragraph: list[str] = []
    kind: BlockKind = "paragraph"
    page: int | None = None

    def flush() -> None:
        nonlocal paragraph, kind
        text = "\n".join(paragraph).strip("\n")
        if text.strip():
            blocks.append(Block(kind, text, page=page))
        paragraph = []
        kind = "paragraph"

    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            flush()
            marker = fence.group(2)
            body = [line]
            index += 1
            while index < len(lines):
                body.append(lines[index])
                index += 1
                if lines[index - 1].strip().startswith(marker[0] * len(marker)) and len(body) > 1:
                    break
            blocks.append(Block("code", "\n".join(body), page=page))
            continue
        mark = _PAGE_MARK.match(line.strip())
        if mark:
            flush()
            page = int(mark.group(1))
            index += 1
            continue
        heading = HEADING.match(line)
        if heading and len(heading.group(2).strip()) <= MAX_HEADING_CHARS:
            flush()
            level = len(heading.group(1))
            blocks.append(Block("heading", heading.group(2).strip(), level, page))
            index += 1
            continue
        if heading:  # text set as a heading but far too long for one: a paragraph
            flush()
            paragraph.append(heading.group(2).strip())
            flush()
            index += 1
            continue
        if line.lstrip().startswith("|"):
            flush()
            rows = []
            while index < len(lines) and lines[index].lstrip().startswith("|"):
                rows.append(lines[index].rstrip())
                index += 1
            blocks.append(Block("table", "\n".join(rows), page=page))
            continue
        if not line.strip():
            flush()
            index += 1
            continue
        if _LIST_ITEM.match(line) and kind != "list":
            flush()
            kind = "list"
        paragraph.append(line.rstrip())
        index += 1
    flush()
    return blocks
