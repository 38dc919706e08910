"""Trust fences: wrap data for the model so nothing inside can open or close a fence.

Data is escaped against every lookalike of a fence tag: any case, spacing, HTML/numeric entities,
full-width and other confusable brackets and slashes, and zero-width characters hidden inside.
"""

from __future__ import annotations

import html
import re
import unicodedata

from memoryd.words import fold_char, is_invisible

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
    "\u276c": "<",  # MEDIUM LEFT-POINTING ANGLE BRACKET ORNAMENT
    "\u2770": "<",  # HEAVY LEFT-POINTING ANGLE BRACKET ORNAMENT
    "\u29fc": "<",  # LEFT-POINTING CURVED ANGLE BRACKET
    "\u16b2": "<",  # RUNIC LETTER KAUNA
    "\u2a79": "<",  # LESS-THAN WITH CIRCLE INSIDE
}
_SLASH_LOOKALIKES = {
    "\uff0f": "/",  # FULLWIDTH SOLIDUS
    "\u2044": "/",  # FRACTION SLASH
    "\u2215": "/",  # DIVISION SLASH
    "\u29f8": "/",  # BIG SOLIDUS
    "\u2571": "/",  # BOX DRAWINGS LIGHT DIAGONAL
    "\u27cb": "/",  # MATHEMATICAL RISING DIAGONAL
    "\\": "/",
    "\uff3c": "/",  # FULLWIDTH REVERSE SOLIDUS
    "\ufe68": "/",  # SMALL REVERSE SOLIDUS
    "\u2216": "/",  # SET MINUS
    "\u29f5": "/",  # REVERSE SOLIDUS OPERATOR
    "\u29f9": "/",  # BIG REVERSE SOLIDUS
}
_BACKSLASHES = frozenset({"\\", "\uff3c", "\ufe68", "\u2216", "\u29f5", "\u29f9"})
# Leading zeros do not count against the length: "&#00000060;" is "<" to a browser.
_ENTITY = re.compile(r"&(?:#0*[0-9]{1,7};?|#[xX]0*[0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};?)")
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
    return any(
        _TAG.search(_canonical_view(text, fold_letters=fold)[0]) is not None
        for fold in (True, False)
    )


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
    """Replace every tag lookalike, seen with lookalike letters folded to Latin ("memоry" with a
    Cyrillic o) and without (so "<memoryК" still ends at the name)."""
    spans: list[tuple[int, int, str]] = []
    for fold in (True, False):
        view, origin = _canonical_view(text, fold_letters=fold)
        for match in _TAG.finditer(view):
            closing = "/" in match.group()[: match.group().find(_name_in(match.group()))]
            label = f"[{'/' if closing else ''}{_name_in(match.group())}]"
            spans.append((origin[match.start()][0], origin[match.end() - 1][1], label))
    pieces: list[str] = []
    cursor = 0
    for start, end, label in sorted(spans):
        if start < cursor:
            continue  # overlaps a span already replaced; the next pass sees what is left
        pieces.append(text[cursor:start])
        pieces.append(label)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _name_in(tag_text: str) -> str:
    for name in FENCE_NAMES:
        if name in tag_text:
            return name
    return FENCE_NAMES[0]


def _canonical_view(text: str, *, fold_letters: bool = True) -> tuple[str, list[tuple[int, int]]]:
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
                    for folded in _canonical_char(char, fold_letters):
                        view.append(folded)
                        origin.append((index, entity.end()))
                index = entity.end()
                continue
        # A Markdown escape ("\\_", "\\<") is the escaped character to a Markdown reader.
        if (
            text[index] in _BACKSLASHES
            and index + 1 < len(text)
            and text[index + 1].isascii()
            and not text[index + 1].isalnum()
            and not text[index + 1].isspace()
        ):
            index += 1
            continue
        # One character may fold into several ("ß" → "ss"): each maps back to its source.
        for folded in _canonical_char(text[index], fold_letters):
            view.append(folded)
            origin.append((index, index + 1))
        index += 1
    return "".join(view), origin


_CLOSING_LOOKALIKES = frozenset(
    "\uff1e\ufe65\u203a\u27e9\u232a\u3009\u276f\u00bb\u276d\u2771\u29fd"
)


def _canonical_char(char: str, fold_letters: bool = True) -> str:
    for candidate in (char, unicodedata.normalize("NFKC", char)):
        if candidate in _BRACKET_LOOKALIKES:
            return "<"
        if candidate in _SLASH_LOOKALIKES:
            return "/"
        if candidate in _CLOSING_LOOKALIKES:
            return ">"
    # Zero-width characters, variation selectors and lookalike letters hide tag names. The
    # literal view keeps an invisible character as a separator, so "<memory" + U+FE00 + "0"
    # still ends at the name there.
    if not fold_letters and is_invisible(char):
        return " "
    folded = fold_char(char, letters=fold_letters)
    if folded == "\uff3f":
        return "_"
    return folded


def _attribute(value: str) -> str:
    return escape_data(value).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
