"""The vector index read for several query vectors at once (``VectorSearch.nearest_each``: a
message and its sentences, recall/vector_legs.py) answers, on both backends, exactly what one
``nearest`` per vector answers: the same memories in the same order with the same cosines,
statuses and kinds respected, nothing from an empty store, the whole store when the depth is
larger than it.
"""

from __future__ import annotations

from memoryd.memory.model import Kind, Status
from memoryd.providers.embedder import Vector
from memoryd.service import MemoryService

from .recall_support import FOODS, event, november, remember

QUESTIONS = (
    "What did I cook for dinner?",
    "Which dessert did I bake for the party?",
    "Where did we eat noodles in November?",
    "What did I cook for dinner?",  # twice: the same vector asked twice answers twice
)
# The depths: one hit, fewer than the store holds, more than it holds.
DEPTHS = (1, 7, 100)


def _fill(service: MemoryService) -> tuple[list[str], str]:
    """Facts and events about food, one archived fact; returns the active ids and the
    archived one."""
    ids = [remember(service, f"The owner likes {food}.").id for food in FOODS[:12]]
    ids += [
        event(service, f"The owner cooked {food} for dinner.", november(day)).id
        for day, food in enumerate(FOODS[12:20], start=2)
    ]
    archived = ids.pop(3)
    service.archive(archived)
    return ids, archived


def _vectors(service: MemoryService) -> list[Vector]:
    return list(service.embedder.embed(list(QUESTIONS)))


def test_each_vector_gets_what_nearest_gives_it(service: MemoryService) -> None:
    active, archived = _fill(service)
    vectors = _vectors(service)
    index = service.store.vectors
    asked = 0
    for statuses in ([Status.ACTIVE], [Status.ACTIVE, Status.ARCHIVED], [Status.ARCHIVED]):
        for kinds in ((), (Kind.EVENT,), (Kind.FACT, Kind.LESSON)):
            for depth in DEPTHS:
                found = index.nearest_each(vectors, statuses, depth, kinds)
                assert found == [index.nearest(v, statuses, depth, kinds) for v in vectors]
                asked += 1
    assert asked == 27

    everything = index.nearest_each(vectors, [Status.ACTIVE], 100)
    for hits in everything:
        # Deeper than the store: every active memory once, closest first.
        assert sorted(hit.memory_id for hit in hits) == sorted(active)
        assert [hit.cosine for hit in hits] == sorted((hit.cosine for hit in hits), reverse=True)
    assert everything[0] == everything[3] != everything[1]
    assert [h.memory_id for h in index.nearest_each(vectors, [Status.ARCHIVED], 5)[2]] == [archived]


def test_kinds_and_statuses_are_kept_for_every_vector(service: MemoryService) -> None:
    active, archived = _fill(service)
    events = {
        m.id for m in service.store.memories.get_many(active).values() if m.kind is Kind.EVENT
    }
    assert len(events) == 8
    index = service.store.vectors
    for hits in index.nearest_each(_vectors(service), [Status.ACTIVE], 100, [Kind.EVENT]):
        assert {hit.memory_id for hit in hits} == events
    for hits in index.nearest_each(_vectors(service), [Status.ACTIVE, Status.ARCHIVED], 100):
        assert archived in {hit.memory_id for hit in hits}
        assert len(hits) == len(active) + 1


def test_an_empty_store_no_vectors_or_no_depth_find_nothing(service: MemoryService) -> None:
    index = service.store.vectors
    vectors = _vectors(service)
    assert index.nearest_each(vectors, [Status.ACTIVE], 10) == [[], [], [], []]
    _fill(service)
    assert index.nearest_each([], [Status.ACTIVE], 10) == []
    assert index.nearest_each(vectors, [Status.ACTIVE], 0) == [[], [], [], []]
    assert index.nearest_each(vectors, [], 10) == [[], [], [], []]
    assert index.nearest_each(vectors[:1], [Status.PENDING], 10) == [[]]
