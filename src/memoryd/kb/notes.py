"""Markdown notes as notes (pure): YAML front matter becomes the document's metadata and title,
``#tags`` and ``[[wiki links]]`` stay in the text (searchable, shown in results) and are listed
in the metadata; headings stay headings, so they are the note's sections for read_kb.

Front matter is the owner's, but a note may come from anywhere: it is read with the safe loader,
bounded in size, and only plain values (text, numbers, dates, lists of them) are kept, so an
alias bomb or a custom tag can cost neither memory nor trust.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

# Front matter past this is not a note's header but a document in YAML: left as text.
MAX_FRONT_MATTER_CHARS = 16_000
# Kept per note: enough for any real header, bounded for a hostile one.
MAX_VALUES = 64
MAX_VALUE_CHARS = 300
_FRONT_MATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FENCE = re.compile(r"^\s*(```|~~~)")
# "#tag", "#area/sub-topic" — not a heading ("# Title"), an anchor ("page#part"), an entity
# ("&#39;") nor a number ("#1").
_TAG = re.compile(r"(?<![\w#&/])#([^\W\d_][\w/-]*)")
_WIKI_LINK = re.compile(r"!?\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")


@dataclass(frozen=True)
class Note:
    """A Markdown note read: its text with the front matter replaced by a short properties
    block, the title its front matter gives ('' when none), and its metadata."""

    markdown: str
    title: str
    metadata: dict[str, Any]


def read_note(text: str) -> Note:
    """Split a note into its front matter (as metadata) and its body, and collect its tags
    and wiki links. Front matter that is not valid YAML, or not a mapping, stays as text."""
    header, body = _front_matter(text)
    metadata: dict[str, Any] = {}
    title = ""
    properties: list[str] = []
    if header is not None:
        title = _text(header.get("title"))
        for key, value in list(header.items())[:MAX_VALUES]:
            name = str(key)[:64]
            plain = _plain(value)
            if plain in (None, "", []) or name == "title":
                continue
            metadata[name] = plain
            shown = " ".join(f"#{t}" for t in _tag_list(plain)) if name == "tags" else _shown(plain)
            properties.append(f"{name.capitalize()}: {shown}")
    prose = _outside_code(body)
    tags = _unique([*_tag_list(metadata.get("tags")), *_TAG.findall(prose)])
    links = _unique(m.strip() for m in _WIKI_LINK.findall(prose))
    if tags:
        metadata["tags"] = tags
    if links:
        metadata["links"] = links
    if title:
        metadata["title"] = title
    return Note(_with_properties(body, properties), title, metadata)


def _with_properties(body: str, properties: list[str]) -> str:
    """The properties block under the note's opening heading (so it joins that section's
    chunk instead of making a tiny one of its own), else at the top."""
    if not properties:
        return body
    block = "\n".join(properties)
    lines = body.lstrip("\n").split("\n", 1)
    if lines[0].startswith("# "):
        rest = lines[1] if len(lines) > 1 else ""
        return f"{lines[0]}\n\n{block}\n\n{rest.lstrip(chr(10))}"
    return f"{block}\n\n{body}"


def _front_matter(text: str) -> tuple[dict[Any, Any] | None, str]:
    match = _FRONT_MATTER.match(text)
    if match is None or len(match.group(0)) > MAX_FRONT_MATTER_CHARS:
        return None, text
    import yaml

    try:
        loaded = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError:
        return None, text
    if loaded is None:
        return {}, text[match.end() :]
    if not isinstance(loaded, dict):
        return None, text
    return loaded, text[match.end() :]


def _plain(value: Any, depth: int = 0) -> Any:
    """A front-matter value as plain JSON data (text, number, ISO date, list), bounded; None
    for anything else (nested mappings, custom objects)."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return " ".join(value.split())[:MAX_VALUE_CHARS]
    if isinstance(value, list | tuple) and depth == 0:
        items = [_plain(v, 1) for v in value[:MAX_VALUES]]
        return [v for v in items if v not in (None, "")]
    return None


def _text(value: Any) -> str:
    plain = _plain(value, 1)
    return plain if isinstance(plain, str) else ""


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _tag_list(value: Any) -> list[str]:
    """Tags as front matter writes them: a list, or one string of words or commas."""
    if isinstance(value, str):
        value = re.split(r"[,\s]+", value)
    if not isinstance(value, list):
        return []
    return [str(v).strip().lstrip("#") for v in value if str(v).strip().lstrip("#")]


def _unique(values: Any) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(str(value).casefold(), str(value))
    return list(seen.values())[:MAX_VALUES]


def _outside_code(text: str) -> str:
    """The note without its fenced code blocks and inline code (a '#include' is no tag)."""
    kept: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`[^`\n]*`", " ", line))
    return "\n".join(kept)
