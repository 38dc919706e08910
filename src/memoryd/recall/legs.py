"""The recall legs (SPEC §4). Each reads the store for one kind of evidence and may fail alone;
what they find is judged by the gates in :mod:`memoryd.recall.policy`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from memoryd.memory.entity_policy import (
    EntityMatcher,
    extract_entities,
    names_within_sentences,
    normalize_name,
    without_names,
)
from memoryd.memory.model import Kind, Memory, Status
from memoryd.providers.embedder import Embedder
from memoryd.recall.policy import RecallPolicy, plain_word_names
from memoryd.recall.time_window_policy import TimeWindow
from memoryd.storage.protocols import Store, TextResult, VectorHit
from memoryd.words import query_terms

if TYPE_CHECKING:
    from memoryd.providers.embedder import Matrix, Vector

# At most this many events of one day are read for the episode leg.
EPISODE_READ = 500
# Query vectors kept by QueryEmbedder (1.5 kB each at 384 dimensions); 0 keeps none.
QUERY_VECTORS_KEPT = 256


@dataclass(frozen=True)
class NameContext:
    """The known names a message mentions, split by how selective each is, and the message
    with the unselective ones taken out (the query the vector and text legs use)."""

    counts: Mapping[int, int]
    selective: frozenset[int]
    common: frozenset[int]
    query: str
    # The words each mentioned entity was found by ("ana" for Ana), for telling a one-word
    # name from a plain word.
    keys: Mapping[int, str]


def split_by_selectivity(
    counts: Mapping[int, int], total: int, policy: RecallPolicy
) -> tuple[frozenset[int], frozenset[int]]:
    """(selective, common) entity ids: common ones tag more than ``entity_max_share`` of the
    ``total`` memories (only once the store holds ``min_memories_for_shares`` of them)."""
    if total < policy.min_memories_for_shares:
        return frozenset(counts), frozenset()
    limit = max(1.0, policy.entity_max_share * total)
    selective = frozenset(e for e, n in counts.items() if n <= limit)
    return selective, frozenset(counts) - selective


def name_context(
    store: Store, matcher: EntityMatcher, message: str, policy: RecallPolicy
) -> NameContext:
    """Find the names in ``message`` and how many active memories each tags."""
    words = normalize_name(message).split()
    keys = {m.entity_id: " ".join(words[m.start : m.end]) for m in matcher.mentions(words)}
    # A name written another way ("Mohammed" for the store's "Muhhamed") is that name.
    for name in extract_entities(message):
        entity = matcher.spelt_like(name) if normalize_name(name) not in matcher.keys else None
        if entity is not None:
            keys.setdefault(entity, normalize_name(name))
    if not keys:
        return NameContext({}, frozenset(), frozenset(), message, {})
    # Shares over all memories, not only active ones: close enough for telling a name that
    # tags everything from a rare one, and an index-only count.
    counts = store.entities.mention_counts(sorted(keys))
    selective, common = split_by_selectivity(counts, store.memories.count(), policy)
    query = without_names(message, matcher, set(common))
    return NameContext(counts, selective, common, query, keys)


def selective_names(
    names: NameContext, text: TextResult | None, policy: RecallPolicy
) -> NameContext:
    """``names`` without the one-word "names" that are plain words of the store ("Long" from
    "Long time no see"), judged by how many memories hold the word (``text``)."""
    if text is None or not names.selective:
        return names
    plain = plain_word_names(
        {entity: names.keys[entity] for entity in names.selective},
        names.counts,
        text.document_frequency,
        policy,
    )
    if not plain:
        return names
    return NameContext(names.counts, names.selective - plain, names.common, names.query, names.keys)


def unknown_names(message: str, matcher: EntityMatcher, text: TextResult | None) -> tuple[str, ...]:
    """Names the message mentions that no memory holds: neither a known name or alias (nor a
    close spelling of one), nor a word of any active memory. None are judged without the text
    leg."""
    if text is None:
        return ()
    unknown = []
    for name in names_within_sentences(message):
        key = normalize_name(name)
        if not key or matcher.spelt_like(key) is not None:
            continue
        words = [w for w in query_terms(key) if w in text.document_frequency]
        if words and all(text.document_frequency[w] == 0 for w in words):
            unknown.append(name)
    return tuple(unknown)


def query_vector(embedder: Embedder, query: str) -> Vector:
    """The message's embedding (the vector leg's query, and what every candidate's cosine is
    measured against)."""
    vector: Vector = embedder.embed([query])[0]
    return vector


class QueryEmbedder:
    """An embedder that keeps the vectors of the last few single-text queries: the same
    message recalled twice (recall then ``search_memory``, a retried turn) embeds once.
    Embedding is deterministic; the cache follows ``embedder()``, so replacing the service's
    embedder empties it."""

    def __init__(self, embedder: Callable[[], Embedder], kept: int | None = None) -> None:
        self._embedder = embedder
        self._kept = QUERY_VECTORS_KEPT if kept is None else kept
        self._owner: Embedder | None = None
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        """The current embedder's model id."""
        return self._embedder().model

    @property
    def dimension(self) -> int:
        """The current embedder's dimension."""
        return self._embedder().dimension

    def embed(self, texts: list[str]) -> Matrix:
        """The current embedder's vectors; one text is answered from the cache when seen."""
        import numpy as np

        embedder = self._embedder()
        if len(texts) != 1:
            return embedder.embed(texts)
        text = texts[0]
        with self._lock:
            if self._owner is not embedder:
                self._owner, self._vectors = embedder, OrderedDict()
            found = self._vectors.get(text)
            if found is not None:
                self._vectors.move_to_end(text)
        if found is None:
            found = np.array(embedder.embed([text])[0], dtype=np.float32)
            found.setflags(write=False)
            with self._lock:
                if self._owner is embedder and self._kept > 0:
                    self._vectors[text] = found
                    while len(self._vectors) > self._kept:
                        self._vectors.popitem(last=False)
        return np.asarray([found])


def vector_leg(
    store: Store, vector: Vector, depth: int, kinds: Sequence[Kind] = ()
) -> list[VectorHit]:
    """Active memories closest to the query's embedding, with their cosines."""
    return store.vectors.nearest(vector, [Status.ACTIVE], depth, kinds)


def text_leg(store: Store, query: str, depth: int, kinds: Sequence[Kind] = ()) -> TextResult:
    """Active memories by BM25 over the query's content words, with the words each holds."""
    return store.text.search(query_terms(query), depth, kinds)


def entity_leg(store: Store, names: NameContext, depth: int) -> list[str]:
    """Active memories tagged with the selective names the message mentions: more names
    first, rarer names weighing more, then newer."""
    if not names.selective:
        return []
    # Rarer names say more: each weighs 1 / the number of memories it tags.
    weights = {entity: 1.0 / max(1, names.counts.get(entity, 1)) for entity in names.selective}
    return store.entities.rank_by_entities(weights, depth)


def time_leg_events(store: Store, window: TimeWindow, depth: int) -> list[Memory]:
    """Active events inside the window, closest to its middle first (recall keeps them as
    candidates instead of reading their rows again)."""
    events = store.memories.events_between(window.start, window.end, max(depth * 4, depth))
    return sorted(events, key=lambda m: _distance(m, window.middle))[:depth]


def episode_leg(
    store: Store,
    anchor: Memory,
    zone: tzinfo,
    depth: int,
    vector: Vector | None,
    known: Mapping[str, float],
) -> tuple[list[Memory], dict[str, float]]:
    """The other active events of the anchor event's day (in the owner's zone), up to
    ``depth``: what happened together is recalled together. Closest in meaning to the query
    first when there is a query ``vector`` (cosines returned, ``known`` ones reused), else
    closest in time to the anchor."""
    assert anchor.occurred_at is not None
    day = anchor.occurred_at.astimezone(zone).date()
    start = datetime.combine(day, datetime.min.time(), tzinfo=zone)
    # A day holds few events; read them all (bounded) to rank them by meaning.
    events = [
        m
        for m in store.memories.events_between(start, start + timedelta(days=1), EPISODE_READ)
        if m.id != anchor.id
    ]
    if vector is None:
        when = anchor.occurred_at
        events.sort(key=lambda m: _distance(m, when))
        return events[:depth], {}
    cosines = cosines_of(store, vector, [m.id for m in events], known)
    events.sort(key=lambda m: -cosines.get(m.id, -1.0))
    return events[:depth], cosines


def cosines_of(
    store: Store, vector: Vector, memory_ids: Sequence[str], known: Mapping[str, float]
) -> dict[str, float]:
    """Every memory's cosine to the query vector: ``known`` ones as given, the others from
    their stored vectors (memories without one are left out)."""
    import numpy as np

    result = dict(known)
    missing = [i for i in memory_ids if i not in result]
    if missing:
        stored = store.memories.vectors(missing)
        if stored:
            ids = list(stored)
            matrix = np.asarray([stored[i] for i in ids], dtype=np.float32)
            values = matrix @ np.asarray(vector, dtype=np.float32)
            result.update(zip(ids, (float(v) for v in values), strict=True))
    return result


def _distance(memory: Memory, middle: datetime) -> float:
    assert memory.occurred_at is not None
    return abs((memory.occurred_at - middle).total_seconds())
