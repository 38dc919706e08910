"""How much of a long message recall and search read: pure, no I/O.

A message can be a pasted document of 100,000 characters. Every leg's cost grows with the
message (the words searched, the names matched, the text embedded), so recall reads a bounded
part of it: its start and its end, where a question about a pasted document is asked. Within
those, a question (a sentence ending in "?", the last one of the end, else the first one of the
start) is what the legs search: read together with 2,000 characters of pasted report, the
question's words are a few of many and its meaning is mostly the report's. What was read is
named, for ``--explain`` and the JSON ``query`` part."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Between the start and the end that were read, so no word is made of the two.
GAP = "\n…\n"
# A "sentence" longer than this that happens to end in "?" is more paste than question.
QUESTION_MAX_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


@dataclass(frozen=True)
class BoundedQuery:
    """The part of a message that recall reads, and how to say which part it is."""

    text: str
    # Characters in the whole message.
    length: int
    head_chars: int
    tail_chars: int
    # The question asked in a long message, when one was found in what was read.
    question: str | None = None

    @property
    def query(self) -> str:
        """What the legs search: the question of a long message, else what was read."""
        return self.question or self.text

    @property
    def whole(self) -> bool:
        """Whether the whole message was read."""
        return self.head_chars + self.tail_chars >= self.length

    def describe(self) -> str:
        """Which part was read, in one sentence a user understands."""
        if self.whole:
            return f"the whole message ({self.length:,} characters)"
        return (
            f"the first {self.head_chars:,} and the last {self.tail_chars:,} of "
            f"{self.length:,} characters"
        )

    def to_json(self) -> dict[str, object]:
        """The JSON ``query.read`` part."""
        return {
            "chars": self.length,
            "whole": self.whole,
            "head_chars": self.head_chars,
            "tail_chars": self.tail_chars,
            "read": self.describe(),
            "question": self.question,
        }


def bound_query(message: str, head_chars: int, tail_chars: int) -> BoundedQuery:
    """The start and the end of ``message``, at most ``head_chars`` + ``tail_chars``
    characters, each cut at a word boundary; the whole message when it is that short."""
    if head_chars < 0 or tail_chars < 0:
        raise ValueError("the character bounds must be zero or more")
    length = len(message)
    if length <= head_chars + tail_chars:
        return BoundedQuery(message, length, length, 0)
    head = _cut_back(message[:head_chars], at_end=True)
    tail = _cut_back(message[length - tail_chars :], at_end=False) if tail_chars else ""
    return BoundedQuery(head + GAP + tail, length, len(head), len(tail), question_in(head, tail))


def question_in(head: str, tail: str) -> str | None:
    """The question a long message asks: the last sentence of its end that ends in "?",
    else the first of its start; None when neither holds one."""
    for part, last in ((tail, True), (head, False)):
        sentences = [s.strip() for s in _SENTENCE_END.split(part)]
        asked = [s for s in sentences if s.endswith("?") and len(s) <= QUESTION_MAX_CHARS]
        if asked:
            return asked[-1] if last else asked[0]
    return None


def _cut_back(part: str, *, at_end: bool) -> str:
    """``part`` without the word the cut split (kept when the part is one long word)."""
    if at_end:
        space = max(part.rfind(" "), part.rfind("\n"))
        return part[:space] if space > 0 else part
    space = min((i for i in (part.find(" "), part.find("\n")) if i >= 0), default=-1)
    return part[space + 1 :] if 0 <= space < len(part) - 1 else part
