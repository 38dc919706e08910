"""A time window that holds a single event bounds nothing (SPEC §4, ``window_min_events``): "How
many days after I started limiting work emails did I block time on Tuesday?" names a Tuesday
that holds one event, and the memory the question is about happened before it. Once per
storage backend.
"""

from __future__ import annotations

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

from .recall_support import NOW, event, item_ids, november, recall_under

QUESTION = "How many days after I started limiting work emails did I block time on Tuesday?"


def test_a_window_of_one_event_keeps_the_memory_the_question_is_about(
    service: MemoryService,
) -> None:
    emails = event(service, "Started limiting work emails after 7 PM", november(10, 19))
    tuesday = event(service, "Blocked Tuesday morning for self-care", november(24, 8))
    event(service, "Went hiking in the Sintra hills with Bruno", november(17, 9))
    event(service, "Had dinner with colleagues at a ramen bar", november(19, 20))

    result = service.recall(QUESTION, now=NOW)
    bounded = item_ids(recall_under(service, RecallPolicy(window_min_events=1), QUESTION))

    assert result.window is not None and result.window.start.date() == tuesday.occurred_at.date()
    assert {emails.id, tuesday.id} <= set(item_ids(result))
    # Bounded by the window, as before the rule: the one event of that Tuesday, and no more.
    assert bounded == [tuesday.id]
