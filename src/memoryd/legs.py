"""The recall legs (SPEC §4). Each returns memory ids best first and may fail on its own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from .embedding import Embedder
from .entities import EntityMatcher
from .model import Kind, Memory, Status
from .recall import RecallPolicy, newest_first_key
from .storage.protocols import Store
from .timewindow import TimeWindow


def vector_leg(
    store: Store, embedder: Embedder, message: str, depth: int, kinds: Sequence[Kind] = ()
) -> list[str]:
    """Active memories closest to the message's embedding."""
    vector = embedder.embed([message])[0]
    return [hit.memory_id for hit in store.vectors.nearest(vector, [Status.ACTIVE], depth, kinds)]


def text_leg(store: Store, message: str, depth: int, kinds: Sequence[Kind] = ()) -> list[str]:
    """Active memories by BM25 over the message's content words."""
    return store.text.search(message, depth, kinds)


def entity_leg(
    store: Store,
    matcher: EntityMatcher,
    message: str,
    active_count: int,
    policy: RecallPolicy,
) -> list[str]:
    """Active memories tagged with selective entities the message names: more matched names
    first, then rarer names, then newer."""
    entity_ids = matcher.find(message)
    if not entity_ids:
        return []
    mentions = store.entities.active_mentions(sorted(entity_ids))
    frequency = Counter(entity_id for _, entity_id in mentions)
    limit = max(1.0, policy.entity_max_share * active_count)
    selective = {
        entity_id
        for entity_id, count in frequency.items()
        if active_count < policy.entity_min_memories or count <= limit
    }
    scores: dict[str, float] = {}
    for memory_id, entity_id in mentions:
        if entity_id in selective:
            # Rarer names say more: weight each by 1 / its frequency.
            scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / frequency[entity_id]
    ranked = sorted(scores, key=lambda memory_id: (-scores[memory_id], newest_first_key(memory_id)))
    return ranked[: policy.leg_depth]


def time_leg(store: Store, window: TimeWindow, depth: int) -> list[str]:
    """Active events inside the window, closest to its middle first."""
    events = store.memories.events_between(window.start, window.end, max(depth * 4, depth))
    return [m.id for m in sorted(events, key=lambda m: _distance(m, window.middle))][:depth]


def _distance(memory: Memory, middle: datetime) -> float:
    assert memory.occurred_at is not None
    return abs((memory.occurred_at - middle).total_seconds())
