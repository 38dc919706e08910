"""Word-level helpers shared by the full-text legs: stop words and query terms."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_TERM = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've
    if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off
    on once only or other ought our ours ourselves out over own same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves also just get got like one would will s t
    did does do
    """.split()
)


def query_terms(text: str) -> list[str]:
    """Lower-cased content words of ``text``, stop words removed, first occurrence order."""
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text.casefold()):
        word = match.group().replace("’", "'")
        if (word not in STOPWORDS and len(word) > 1) or word.isdigit():
            seen.setdefault(word.split("'")[0], None)
    return [w for w in seen if w]


def word_set(text: str) -> set[str]:
    """The distinct words :func:`query_terms` would give for ``text`` (order not kept): each
    distinct token is looked at once, so a long text costs one regex pass."""
    kept: set[str] = set()
    for token in set(_TERM.findall(text.casefold())):
        word = token.replace("’", "'")
        if (word not in STOPWORDS and len(word) > 1) or word.isdigit():
            kept.add(word.split("'")[0])
    kept.discard("")
    return kept


# Letters from other scripts that look like Latin ones: a tag name or an instruction written with
# them must still be recognised.
CONFUSABLE_LETTERS = {
    # Cyrillic
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k",
    "ӏ": "l", "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "г": "r", "ѕ": "s", "т": "t",
    "ц": "u", "ѵ": "v", "ԝ": "w", "х": "x", "у": "y", "ү": "y", "з": "3", "ё": "e", "ї": "i",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "μ": "u", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
    # Armenian and others often used in spoofing
    "օ": "o", "ս": "u", "ց": "g", "հ": "h", "ո": "n", "ɑ": "a", "ı": "i", "ȷ": "j",
}  # fmt: skip


def is_invisible(char: str) -> bool:
    """Format characters (zero-width spaces and joiners, BOM, soft hyphen), combining marks
    (grapheme joiner, variation selectors) and other marks that draw nothing by themselves."""
    return unicodedata.category(char) in ("Cf", "Mn", "Me") or "\ufe00" <= char <= "\ufe0f"


def fold_char(char: str, *, letters: bool = True) -> str:
    """One character as a reader would take it: invisible → "", compatibility forms
    (full-width, mathematical letters) → plain, lookalike letters → Latin (unless
    ``letters`` is false), lower-cased."""
    if is_invisible(char):
        return ""
    folded = unicodedata.normalize("NFKC", char).casefold()
    if not letters:
        return folded
    return "".join(CONFUSABLE_LETTERS.get(c, c) for c in folded)


def fold_text(text: str) -> str:
    """``text`` with every character folded as by :func:`fold_char` (for screening)."""
    if text.isascii():
        return text.casefold()
    return "".join(fold_char(char) for char in text)


def has_lone_surrogate(value: Any) -> bool:
    """Whether a string (or any string inside lists and dicts) holds a lone UTF-16 surrogate,
    which no storage, tokenizer or encoder accepts (JSON can still smuggle one in as \\ud800)."""
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_lone_surrogate(item) for item in value)
    return False


# Characters a terminal or a text renderer acts on instead of showing: C0 controls but tab and
# newline (ESC starts the sequences that erase a line or retitle the window), DEL, C1 controls
# (U+009B is a one-character ESC [), and the bidirectional overrides, embeddings, isolates and
# marks that make text read differently from how it is stored.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
CONTROL_POINTS = frozenset(
    [*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, *range(0x80, 0xA0), *_BIDI]
)
_STRIPPED: dict[int, None] = dict.fromkeys(CONTROL_POINTS)
_VISIBLE = {point: f"\\u{point:04x}" for point in CONTROL_POINTS}
_CONTROL = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(CONTROL_POINTS)) + "]")


def strip_controls(text: str) -> str:
    """``text`` without control characters, bidi overrides or NUL (a CR-LF line end becomes a
    newline); what the store keeps of any text written into it."""
    if _CONTROL.search(text) is None:
        return text
    return text.replace("\r\n", "\n").translate(_STRIPPED)


def visible_controls(text: str) -> str:
    """``text`` with every control character, bidi override and NUL shown as ``\\uXXXX``
    (tab and newline kept): what a terminal is given, so stored text can neither move the
    cursor, erase a line nor reorder what the owner reads. In JSON the escape reads back as
    the same character."""
    if _CONTROL.search(text) is None:
        return text
    return text.translate(_VISIBLE)
