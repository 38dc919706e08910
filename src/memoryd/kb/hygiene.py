"""Text hygiene for extracted documents (pure): ligatures become letters, control characters
and unmapped glyphs never reach a chunk.

A PDF font may draw "ti" or "fi" with one glyph that has no Unicode mapping: pdfium reports it
as U+0000 ("Par\\x00cipant"). The document's own words tell which letters it stood for:
"Participant" written plainly elsewhere in the same document.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

# What an unmapped glyph inside a word most often stands for, tried in this order.
LIGATURES = ("ti", "fi", "fl", "ff", "ffi", "ffl", "tt", "ft", "th")
_UNKNOWN = "\x00"
_WORD_WITH_UNKNOWN = re.compile(r"[^\W\d_]*\x00[^\W\d_\x00]*(?:\x00[^\W\d_\x00]*)*")
_WORD = re.compile(r"[^\W\d_]+")


def clean_char(char: str) -> str:
    """One extracted character as text: ligatures and other presentation forms as their
    letters (NFKC for U+FB00–FB4F), control and private-use characters dropped, an unmapped
    glyph kept as U+0000 for :func:`repair_unknown_glyphs`."""
    if char == _UNKNOWN:
        return char
    if "\ufb00" <= char <= "\ufb4f":
        return unicodedata.normalize("NFKC", char)
    category = unicodedata.category(char)
    if category in ("Cc", "Cs", "Co", "Cn") or char == "\ufffd":
        return ""
    if category == "Cf" and char not in ("\u00ad",):
        return ""
    if char == "\u00ad":  # a soft hyphen is a line-break hint, never a letter
        return ""
    return char


def repair_unknown_glyphs(text: str) -> str:
    """``text`` with every U+0000 inside a word replaced by the ligature that makes a word the
    document uses elsewhere; failing that, by the ligature that did so most often here (else
    "ti"); and any other U+0000 dropped."""
    if _UNKNOWN not in text:
        return text
    vocabulary = {word.casefold() for word in _WORD.findall(text.replace(_UNKNOWN, " "))}
    chosen: dict[str, str] = {}
    wins: Counter[str] = Counter()
    for match in _WORD_WITH_UNKNOWN.finditer(text):
        word = match.group()
        if word in chosen or word == _UNKNOWN * len(word):
            continue
        for ligature in LIGATURES:
            candidate = word.replace(_UNKNOWN, ligature)
            if candidate.casefold() in vocabulary:
                chosen[word] = candidate
                wins[ligature] += 1
                break
    fallback = wins.most_common(1)[0][0] if wins else LIGATURES[0]

    def mend(match: re.Match[str]) -> str:
        word = match.group()
        if word == _UNKNOWN * len(word):  # no letter beside it: not part of a word
            return ""
        return chosen.get(word) or word.replace(_UNKNOWN, fallback)

    mended = _WORD_WITH_UNKNOWN.sub(mend, text)
    return mended.replace(_UNKNOWN, "")


# Markdown that would change meaning at the start of an extracted line.
_MARKDOWN_OPENER = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|>|\||```|~~~|[-*+](?=\s)|\d{1,9}[.)](?=\s))")


def escape_markdown(text: str) -> str:
    """Text safe as a Markdown paragraph: an opening '#', '>', '|', list marker or code
    fence is literal."""
    return "\n".join(_MARKDOWN_OPENER.sub(r"\1\\\2", line) for line in text.split("\n"))
