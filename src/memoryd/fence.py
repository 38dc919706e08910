"""Trust fences: wrap data for the model so nothing inside can open or close a fence.

Data is escaped against every lookalike of a fence tag: any case, spacing, HTML/numeric entities,
full-width and other confusable brackets and slashes, and zero-width characters hidden inside.
"""

from __future__ import annotations

import html
import re
import unicodedata

# The tag names memoryd uses for fences; a lookalike of any of them is neutralised in data.
FENCE_NAMES: tuple[str, ...] = ("memory", "untrusted_content", "conversation")

_BRACKET_LOOKALIKES = {
    "<": "<",
    "\uff1c": "<",  # FULLWIDTH LESS-THAN SIGN
    "\ufe64": "<",  # SMALL LESS-THAN SIGN
    "\u2039": "<",  # SINGLE LEFT-POINTING ANGLE QUOTATION MARK
    "\u27e8": "<",  # MATHEMATICAL LEFT ANGLE BRACKET
    "\u2329": "<",  # LEFT-POINTING ANGLE BRACKET
    "\u3008": "<",  # LEFT ANGLE BRACKET (CJK)
    "\u276e": "<",  # HEAVY LEFT-POINTING ANGLE QUOTATION MARK ORNAMENT
    "\u02c2": "<",  # MODIFIER LETTER LEFT ARROWHEAD
    "\u1438": "<",  # CANADIAN SYLLABICS PA
    "\u00ab": "<",  # LEFT-POINTING DOUBLE ANGLE QUOTATION MARK
    "\u226a": "<",  # MUCH LESS-THAN
    "\u2264": "<",  # LESS-THAN OR EQUAL TO
}
_SLASH_LOOKALIKES = {
    "\uff0f": "/",  # FULLWIDTH SOLIDUS
    "\u2044": "/",  # FRACTION SLASH
    "\u2215": "/",  # DIVISION SLASH
    "\u29f8": "/",  # BIG SOLIDUS
    "\u2571": "/",  # BOX DRAWINGS LIGHT DIAGONAL
    "\\": "/",
}
_ENTITY = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};?)")
_TAG = re.compile(
    r"<[\s/]*(?:"
    + "|".join(re.escape(n) for n in FENCE_NAMES)
    # Attributes are swallowed only up to a closing bracket; an unclosed lookalike keeps the
    # words that follow it.
    + r")(?![a-z0-9])(?:[^<>]{0,200}>)?"
)


def escape_data(text: str) -> str:
    """Neutralise every fence-tag lookalike in ``text``; everything else is left as written."""
    if not _could_hold_tag(text):
        return text
    for _ in range(8):
        escaped = _escape_once(text)
        if escaped == text:
            return escaped
        text = escaped
    # Why a final blunt pass: pathological nesting could outlast the loop; then every bracket
    # lookalike goes, which is always safe.
    return "".join("[" if _canonical_char(c) == "<" else c for c in text)


def contains_fence_tag(text: str) -> bool:
    """Whether ``text`` holds anything a reader could take for a fence tag (used by tests)."""
    view, _ = _canonical_view(text)
    return _TAG.search(view) is not None


def fence(tag: str, body: str, attributes: dict[str, str]) -> str:
    """Wrap already-escaped ``body`` in ``<tag attr="…">`` … ``</tag>``."""
    attrs = "".join(f' {key}="{_attribute(value)}"' for key, value in attributes.items())
    return f"<{tag}{attrs}>\n{body}\n</{tag}>"


def _could_hold_tag(text: str) -> bool:
    """Cheap pre-check: a tag needs an opening bracket, written plainly, as an entity (``&``) or
    as a character that folds to one; text with none of those is returned as is."""
    if "<" in text or "&" in text:
        return True
    if text.isascii():
        return False
    return any(not char.isascii() and _canonical_char(char) == "<" for char in text)


def _escape_once(text: str) -> str:
    view, origin = _canonical_view(text)
    pieces: list[str] = []
    cursor = 0
    for match in _TAG.finditer(view):
        start = origin[match.start()]
        end = origin[match.end() - 1][1]
        pieces.append(text[cursor : start[0]])
        closing = "/" in match.group()[: match.group().find(_name_in(match.group()))]
        pieces.append(f"[{'/' if closing else ''}{_name_in(match.group())}]")
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _name_in(tag_text: str) -> str:
    for name in FENCE_NAMES:
        if name in tag_text:
            return name
    return FENCE_NAMES[0]


def _canonical_view(text: str) -> tuple[str, list[tuple[int, int]]]:
    """A lower-cased, entity-decoded, confusable-folded view of ``text``, with each view
    character's (start, end) span in the original."""
    view: list[str] = []
    origin: list[tuple[int, int]] = []
    index = 0
    while index < len(text):
        entity = _ENTITY.match(text, index)
        if entity is not None:
            decoded = html.unescape(entity.group())
            if decoded != entity.group():
                for char in decoded:
                    for folded in _canonical_char(char):
                        view.append(folded)
                        origin.append((index, entity.end()))
                index = entity.end()
                continue
        # One character may fold into several ("ß" → "ss"): each maps back to its source.
        for folded in _canonical_char(text[index]):
            view.append(folded)
            origin.append((index, index + 1))
        index += 1
    return "".join(view), origin


def _canonical_char(char: str) -> str:
    if char in _BRACKET_LOOKALIKES:
        return "<"
    if char in _SLASH_LOOKALIKES:
        return "/"
    if char in ("\uff1e", "\ufe65", "\u203a", "\u27e9", "\u232a", "\u3009", "\u276f", "\u00bb"):
        return ">"
    # Zero-width and other invisible format characters hide inside tag names.
    if unicodedata.category(char) == "Cf":
        return ""
    normalized = unicodedata.normalize("NFKC", char).casefold()
    if normalized == "\uff3f" or normalized == "_":
        return "_"
    return normalized


def _attribute(value: str) -> str:
    return escape_data(value).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
