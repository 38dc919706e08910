"""The recall legs (SPEC §4). Each returns memory ids best first and may fail on its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .embedding import Embedder
from .entities import EntityMatcher, without_names
from .model import Kind, Memory, Status
from .recall import RecallPolicy
from .storage.protocols import Store
from .timewindow import TimeWindow


@dataclass(frozen=True)
class NameContext:
    """The known names a message mentions, split by how selective each is, and the message
    with the unselective ones taken out (the query the vector and text legs use)."""

    counts: Mapping[int, int]
    selective: frozenset[int]
    common: frozenset[int]
    query: str


def split_by_selectivity(
    counts: Mapping[int, int], total: int, policy: RecallPolicy
) -> tuple[frozenset[int], frozenset[int]]:
    """(selective, common) entity ids: common ones tag more than ``entity_max_share`` of the
    ``total`` memories (only once the store holds ``entity_min_memories`` of them)."""
    if total < policy.entity_min_memories:
        return frozenset(counts), frozenset()
    limit = max(1.0, policy.entity_max_share * total)
    selective = frozenset(e for e, n in counts.items() if n <= limit)
    return selective, frozenset(counts) - selective


def name_context(
    store: Store, matcher: EntityMatcher, message: str, policy: RecallPolicy
) -> NameContext:
    """Find the names in ``message`` and how many active memories each tags."""
    mentioned = matcher.find(message)
    if not mentioned:
        return NameContext({}, frozenset(), frozenset(), message)
    # Shares over all memories, not only active ones: close enough for telling a name that
    # tags everything from a rare one, and an index-only count.
    counts = store.entities.mention_counts(sorted(mentioned))
    selective, common = split_by_selectivity(counts, store.memories.count(), policy)
    return NameContext(counts, selective, common, without_names(message, matcher, set(common)))


def vector_leg(
    store: Store, embedder: Embedder, query: str, depth: int, kinds: Sequence[Kind] = ()
) -> list[str]:
    """Active memories closest to the query's embedding."""
    vector = embedder.embed([query])[0]
    return [hit.memory_id for hit in store.vectors.nearest(vector, [Status.ACTIVE], depth, kinds)]


def text_leg(store: Store, query: str, depth: int, kinds: Sequence[Kind] = ()) -> list[str]:
    """Active memories by BM25 over the query's content words."""
    return store.text.search(query, depth, kinds)


def entity_leg(store: Store, names: NameContext, depth: int) -> list[str]:
    """Active memories tagged with the selective names the message mentions: more names
    first, rarer names weighing more, then newer."""
    if not names.selective:
        return []
    # Rarer names say more: each weighs 1 / the number of memories it tags.
    weights = {entity: 1.0 / max(1, names.counts.get(entity, 1)) for entity in names.selective}
    return store.entities.rank_by_entities(weights, depth)


def time_leg(store: Store, window: TimeWindow, depth: int) -> list[str]:
    """Active events inside the window, closest to its middle first."""
    events = store.memories.events_between(window.start, window.end, max(depth * 4, depth))
    return [m.id for m in sorted(events, key=lambda m: _distance(m, window.middle))][:depth]


def _distance(memory: Memory, middle: datetime) -> float:
    assert memory.occurred_at is not None
    return abs((memory.occurred_at - middle).total_seconds())
