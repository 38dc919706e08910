"""How much of a long message recall and search read: pure, no I/O.

A message can be a pasted document of 100,000 characters. Every leg's cost grows with the
message (the words searched, the names matched, the text embedded), so recall reads a bounded
part of it: its start and its end, where a question about a pasted document is asked. What was
read is named, for ``--explain`` and the JSON ``query`` part."""

from __future__ import annotations

from dataclasses import dataclass

# Between the start and the end that were read, so no word is made of the two.
GAP = "\n…\n"


@dataclass(frozen=True)
class BoundedQuery:
    """The part of a message that recall reads, and how to say which part it is."""

    text: str
    # Characters in the whole message.
    length: int
    head_chars: int
    tail_chars: int

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
    return BoundedQuery(head + GAP + tail, length, len(head), len(tail))


def _cut_back(part: str, *, at_end: bool) -> str:
    """``part`` without the word the cut split (kept when the part is one long word)."""
    if at_end:
        space = max(part.rfind(" "), part.rfind("\n"))
        return part[:space] if space > 0 else part
    space = min((i for i in (part.find(" "), part.find("\n")) if i >= 0), default=-1)
    return part[space + 1 :] if 0 <= space < len(part) - 1 else part
