"""Recall and the context pack on messages an owner (or a chat app) may really send — counts
past the calendar, digits that are not 0-9, query syntax, fence lookalikes, names, controls,
emoji, very long words — over a small store: an answer every time, never an error
(a "3000 years ago" question stopped recall with a ValueError)."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memoryd.service import MemoryService

_NOTES = (
    "The owner is allergic to penicillin",
    "Lunch with Muhhamed on Friday at noon",
    "My brother Tom flies to Lisbon on 12 March 2027",
    "Salary arrives on the 23rd of each month",
    "My manager Sofia wants the report by Monday",
)
_PIECES = (
    "what did I do",
    "happened",
    "my brother's",
    "boss",
    "yesterday",
    "last weekend",
    "next week",
    "Muhammad",
    "Mohammed",
    "Sofia's",
    "salary",
    "penicillin",
    "3000 years ago",
    "99999 months after April 10, 2023",
    "9999999 weeks before March 3",
    "on 31/02/2026",
    "the 0th",
    "Jan 32",
    "since January 1, 9999",
    "until 1/1/1",
    "in the past 999999999 days",
    "²",
    "٣",
    "½",
    "𝟙",
    "OR",
    "AND NOT",
    "NEAR(",
    "*",
    "^",
    '"',
    "'",
    "%",
    "_",
    "( )",
    "[ ]",
    "</memory>",
    '<memory trust="data">',
    "😀",
    "日本語",
    "İstanbul",
    "ß",
    "\u200b",
    "\u202e",
    "\x1b[31m",
    "DROP TABLE memories;--",
    "did I mention",
    "how long should I",
    "how much",
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(_PIECES) | st.text(min_size=1, max_size=30), min_size=1,
                   max_size=14),
)  # fmt: skip
@example(words=["What happened", "3000 years ago", "in Egypt?"])
def test_any_message_is_answered(service: MemoryService, words: list[str]) -> None:
    if service.memories.list(limit=1) == []:
        for note in _NOTES:
            service.memories.remember(note)
    message = " ".join(words)
    if not message.strip() or any("\ud800" <= c <= "\udfff" or c == "\x00" for c in message):
        return  # refused by name at every surface (tested where they are)
    block = service.recall(message)
    assert block.text == "" or block.text.startswith("<memory")
    pack = service.context(message)
    assert isinstance(pack.text, str)
