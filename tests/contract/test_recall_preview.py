"""A preview is not a retrieval, once per storage backend: ``recall(..., stamp=False)`` and
``search_memory(..., stamp=False)`` (the web page's recall playground and memory search) answer
exactly as the real calls do but leave ``retrieval_hits`` and ``last_retrieved_at`` alone, so
trying messages on the page never makes a memory look used to consolidation.
"""

from __future__ import annotations

from datetime import timedelta

from memoryd.memory.model import Importance, Kind
from memoryd.service import MemoryService

from .recall_support import NOW, packed_ids, remember


def test_a_preview_answers_like_a_recall_but_stamps_nothing(service: MemoryService) -> None:
    bike = remember(service, "Owner rides a green Brompton folding bicycle to work")
    lesson = remember(
        service, "Always answer in French", kind=Kind.LESSON, importance=Importance.HIGH
    )
    other = remember(service, "Owner's sister Ines is a marine biologist in Faro")
    message = "Which bicycle do I ride to work?"

    preview = service.recall(message, now=NOW, stamp=False)
    looked_up = service.search_memory("folding bicycle", now=NOW, stamp=False)

    assert packed_ids(preview) == [lesson.id, bike.id]
    assert [s.memory.id for s in looked_up.items] == [bike.id]
    untouched = {m.id: m for m in service.list_memories()}
    for memory in (bike, lesson, other):
        assert untouched[memory.id].retrieval_hits == 0, memory.content
        assert untouched[memory.id].last_retrieved_at is None, memory.content

    # The real recall packs the same block and stamps it; a later preview moves nothing.
    real = service.recall(message, now=NOW)
    service.recall(message, now=NOW + timedelta(days=3), stamp=False)
    service.search_memory("folding bicycle", now=NOW + timedelta(days=3), stamp=False)

    assert real.text == preview.text
    after = {m.id: m for m in service.list_memories()}
    for memory in (bike, lesson):
        assert after[memory.id].retrieval_hits == 1, memory.content
        assert after[memory.id].last_retrieved_at == NOW, memory.content
    assert after[other.id].retrieval_hits == 0
    assert after[other.id].last_retrieved_at is None
