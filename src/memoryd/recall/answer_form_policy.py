"""A message's sentences about the answer's form, left out of what recall searches (SPEC §4):
pure, no I/O.

A question may end with an instruction to the assistant about the shape of its answer
("Mention ONLY and ONLY five items.", "Answer in three sentences.", "Use bullet points.",
"No more than 50 words, please."). Such a sentence names nothing the owner said: its words
("items", "mention", "five") match memories about items and lists, and its meaning pulls
the message's one embedding away from the topic asked about. A sentence is about the
answer's form when every content word of it is a word of the answer's form (a verb of
answering, a unit of an answer, its length or layout, a number) and at least one is a unit,
a length or a layout, not only a verb: "List them in order." and "Tell me more." stay.
A message that is nothing but such sentences ("Keep it short.") is searched as it is.
"""

from __future__ import annotations

import re

from memoryd.words import query_terms

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")

# Verbs of answering and words of politeness: allowed in such a sentence, never enough alone.
_VERBS = frozenset(
    """
    answer reply respond mention list name give keep limit use write include format make
    provide say tell show stick please
    """.split()
)
# A unit of an answer, its length or its layout: what makes a sentence about the form.
_FORM = frozenset(
    """
    item items point points bullet bullets bulleted word words sentence sentences line lines
    paragraph paragraphs numbered brief briefly short shorter concise concisely exactly
    maximum max minimum total markdown json table plain
    """.split()
)
_NUMBERS = frozenset(
    """
    two three four five six seven eight nine ten eleven twelve fifteen twenty fifty hundred
    first single
    """.split()
)


def is_answer_form(sentence: str) -> bool:
    """True when ``sentence`` says only how the answer should look (the module says how)."""
    words = query_terms(sentence)
    allowed = _VERBS | _FORM | _NUMBERS
    if not words or any(w not in allowed and not w.isdigit() for w in words):
        return False
    return any(w in _FORM for w in words)


def without_answer_form(message: str) -> str:
    """``message`` without its sentences about the answer's form; as it is when it has none
    (or nothing but them)."""
    pieces = [p for p in (piece.strip() for piece in _SENTENCE_END.split(message)) if p]
    kept = [p for p in pieces if not is_answer_form(p)]
    return message if not kept or len(kept) == len(pieces) else " ".join(kept)
