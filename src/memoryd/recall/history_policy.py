"""A question that asks for a history of the conversations, and its words about them (SPEC §4):
pure, no I/O.

"Can you list the order in which I brought up different aspects of my budget tracker
throughout our conversations?" asks what was said about one topic over many conversations.
Most of its words are about the asking, not the topic: the talking ("brought up",
"mentioned", "discussed"), the conversations themselves ("throughout our conversations"),
their order ("in order", "first") and the parts of a whole ("different aspects of"). In a
chat that follows one project they match a message as well as any other, and they outnumber
the topic's own words ("budget tracker"). For such a question the text leg searches the
other words only.

A message asks for a history when it names an order ("in what order", "the order in
which", "chronologically"), a span of the conversations ("throughout our conversations",
"across my sessions", "over time") or a change over them ("how has my plan changed",
"every time I").
"""

from __future__ import annotations

import re

_ASKS = re.compile(
    r"\b(?:in what order|the order (?:in which|of)|in (?:chronological )?order"
    r"|chronologically|over time"
    r"|(?:throughout|across|over|during) (?:all )?(?:of )?(?:our|the|these|my)"
    r" (?:conversations|chats|discussions|sessions|talks|messages)"
    r"|(?:every|each) time I"
    r"|how (?:has|have|did) .{1,80}?\b(?:changed|evolved|developed|progressed))\b",
    re.IGNORECASE,
)

# The words of such a question about the asking: talking, the conversations, their span
# and order, and the parts of a whole (never a topic's own word).
FRAME_WORDS = frozenset(
    """
    brought bring bringing mention mentioned mentioning raised raise discuss discussed
    discussing talked talk talking conversations conversation chats chat discussions
    discussion sessions session talks messages throughout across time times order ordered
    chronological chronologically sequence first later list walk different various aspects
    parts topics things concepts related
    """.split()
)


def asks_for_history(message: str) -> bool:
    """True when ``message`` asks for a history of the conversations (the module says how)."""
    return _ASKS.search(message) is not None


def topic_words(words: tuple[str, ...], message: str) -> tuple[str, ...]:
    """``words`` (the message's content words) without its words about the asking when it
    asks for a history; as they are when it does not, or when nothing else would be left."""
    if not asks_for_history(message):
        return words
    kept = tuple(w for w in words if w not in FRAME_WORDS)
    return kept or words
