"""A time window that holds a single event (SPEC §4, ``window_min_events``): "How many days
after I started limiting work emails did I block time on Tuesday?" names a Tuesday that holds
one event, and the memory the question is about happened before it. Shipped, the window bounds
the block to its one event (in an owner's store that event is as often the answer: "What did I
eat yesterday?"); ``window_min_events`` 2 keeps the legs' matches outside it. Once per storage
backend.
"""

from __future__ import annotations

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

from .recall_support import NOW, event, item_ids, november, recall_under

QUESTION = "How many days after I started limiting work emails did I block time on Tuesday?"


def test_a_window_of_one_event_bounds_unless_the_policy_asks_for_two(
    service: MemoryService,
) -> None:
    emails = event(service, "Started limiting work emails after 7 PM", november(10, 19))
    tuesday = event(service, "Blocked Tuesday morning for self-care", november(24, 8))
    event(service, "Went hiking in the Sintra hills with Bruno", november(17, 9))
    event(service, "Had dinner with colleagues at a ramen bar", november(19, 20))

    result = service.recall(QUESTION, now=NOW)
    unbounded = recall_under(service, RecallPolicy(window_min_events=2), QUESTION)

    assert tuesday.occurred_at is not None
    assert result.window is not None and result.window.start.date() == tuesday.occurred_at.date()
    # Bounded by the window: the one event of that Tuesday, and no more.
    assert item_ids(result) == [tuesday.id]
    assert {emails.id, tuesday.id} <= set(item_ids(unbounded))
