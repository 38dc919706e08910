"""A text match on the message's numbers and units alone is no evidence (SPEC §4): "What is
17 times 23?" shares two numbers with a memory about plants and books, not a subject. Once per
storage backend, through recall's block and its explanation.
"""

from __future__ import annotations

from memoryd.service import MemoryService

from .recall_support import NOW, remember
from .test_recall_relevance import OWNER_FACTS

SHELF = "Owner keeps 17 plants and 23 books on the balcony shelf"


def _store(service: MemoryService) -> None:
    # A small store (fewer memories than word shares are read in): every word is telling.
    for content in (*OWNER_FACTS[:10], SHELF):
        remember(service, content)


def test_arithmetic_on_numbers_a_memory_holds_recalls_nothing(service: MemoryService) -> None:
    _store(service)

    result = service.recall("What is 17 times 23?", now=NOW)

    assert result.packed.items == ()
    assert result.silence is not None and result.silence.startswith("no strong evidence")
    shelf = [d for d in result.to_json()["dropped"] if d["reason"].startswith("no strong")]
    assert shelf, "the shelf memory was found by its numbers and then silenced"
    assert all(d["contributions"]["coverage"] == 0.0 for d in shelf)


def test_the_same_memory_asked_about_by_its_subject_is_recalled(service: MemoryService) -> None:
    _store(service)

    result = service.recall("How many plants do I keep on the balcony?", now=NOW)

    [item] = [s for s in result.packed.items if s.memory.content == SHELF]
    assert "text" in item.gates
    assert item.contributions["coverage"] > 0.0
