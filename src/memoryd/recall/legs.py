"""Recall's second stage: run the legs (SPEC §4). Each leg reads the store for one kind of
evidence and may fail alone; :func:`run_legs` runs the vector, text, entity and time legs for a
:class:`~memoryd.recall.read.Query` and hands on :class:`Evidence`, every candidate with what
the gates will judge. The episode leg (:func:`episode_leg`) runs later, from the ranking's best
event (:mod:`memoryd.recall.score`)."""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from memoryd.memory.model import Kind, Memory, Status
from memoryd.providers.embedder import Embedder, query_side, span_vectors
from memoryd.providers.embedding_beside import embedding_begun
from memoryd.recall.address_policy import about_owner, definite_reference
from memoryd.recall.evidence_policy import Candidate, QueryFacts, handed_on
from memoryd.recall.names_policy import unknown_names
from memoryd.recall.read import LegPlan, NameContext, Query
from memoryd.recall.sides_policy import yes_or_no_words
from memoryd.recall.text_legs import searched_text
from memoryd.recall.time_legs import WindowLeg, window_leg
from memoryd.recall.vector_legs import (
    awaited_vectors,
    cosines_of,
    late_begun,
    more_cosines,
    sentence_vector_leg,
    vector_leg,
    vectors_begun,
)
from memoryd.storage.protocols import Store, TextResult, VectorHit
from memoryd.words import query_terms

if TYPE_CHECKING:
    from memoryd.providers.embedder import Matrix, Vector

log = logging.getLogger("memoryd")

# At most this many events of one day are read for the episode leg.
EPISODE_READ = 500
# Query vectors kept by QueryEmbedder (1.5 kB each at 384 dimensions); 0 keeps none.
QUERY_VECTORS_KEPT = 256


def selective_names(names: NameContext, text: TextResult | None, plan: LegPlan) -> NameContext:
    """``names`` without the one-word "names" that are plain words of the store ("Long" from
    "Long time no see"), judged by how many memories hold the word (``text``)."""
    if text is None or not names.selective:
        return names
    plain = plain_word_names(
        {entity: names.keys[entity] for entity in names.selective},
        names.counts,
        text.document_frequency,
        plan.plain_word_ratio,
    )
    if not plain:
        return names
    return replace(names, selective=names.selective - plain)


def plain_word_names(
    keys: Mapping[int, str],
    tagged: Mapping[int, int],
    word_frequency: Mapping[str, int],
    ratio: float,
) -> frozenset[int]:
    """Entities whose one-word name (``keys``) more memories hold as a word than are tagged
    with it (``tagged``), by more than ``ratio``: a plain word, not a name."""
    plain = set()
    for entity, key in keys.items():
        held = word_frequency.get(key)
        if " " in key or held is None:
            continue
        if held > ratio * max(1, tagged.get(entity, 0)):
            plain.add(entity)
    return frozenset(plain)


def _begin(embedder: Embedder, text: str) -> Future[Vector]:
    """The message's embedding, begun on a worker thread by a :class:`QueryEmbedder`, else done
    here."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.begin(text)
    done: Future[Vector] = Future()
    try:
        done.set_result(query_vector(embedder, text))
    except Exception as error:  # the vector leg fails alone, as when it is awaited
        done.set_exception(error)
    return done


def query_vector(embedder: Embedder, query: str) -> Vector:
    """The message's embedding (the vector leg's query, and what every candidate's cosine is
    measured against)."""
    vector: Vector = embedder.embed([query])[0]
    return vector


class QueryEmbedder:
    """An embedder that keeps the vectors of the last few single-text queries: the same
    message recalled twice (recall then ``search_memory``, a retried turn) embeds once. It
    embeds with the embedder's query side (:func:`query_side`: the local MiniLM's
    int8-products model when the settings keep it on).
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

        embedder = self._current()
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

    def embed_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[Vector, Matrix] | None:
        """The current embedder's vectors of ``text`` and its spans from one run (None: it
        cannot pool spans); not kept."""
        return span_vectors(self._current(), text, spans)

    def _current(self) -> Embedder:
        """What embeds the queries now: the service's embedder's query side."""
        return query_side(self._embedder())

    def begin(self, text: str) -> Future[Vector]:
        """``text``'s vector, embedded on a worker thread (at once, from the kept vectors,
        when seen): the caller reads the store meanwhile."""
        embedder = self._current()
        with self._lock:
            seen = self._owner is embedder and text in self._vectors
        if not seen:
            return embedding_begun(self, text)
        done: Future[Vector] = Future()
        done.set_result(self.embed([text])[0])
        return done


def awaited_vector(pending: Future[Vector]) -> Vector:
    """The message's vector, once its embedding (begun with the legs) is done."""
    return pending.result()


def text_leg(
    store: Store, words: Sequence[str], depth: int, kinds: Sequence[Kind] = ()
) -> TextResult:
    """Active memories by BM25 over the query's content ``words``, with the words each holds."""
    return store.text.search(words, depth, kinds)


def entity_leg(store: Store, names: NameContext, depth: int) -> list[str]:
    """Active memories tagged with the selective names the message mentions: more names
    first, rarer names weighing more, then newer."""
    if not names.selective:
        return []
    # Rarer names say more: each weighs 1 / the number of memories it tags.
    weights = {entity: 1.0 / max(1, names.counts.get(entity, 1)) for entity in names.selective}
    return store.entities.rank_by_entities(weights, depth)


def episode_leg(
    store: Store,
    anchor: Memory,
    zone: tzinfo,
    depth: int,
    vector: Vector | None,
    known: Mapping[str, float],
    neighbours: int = 0,
) -> tuple[list[Memory], dict[str, float]]:
    """The other active events of the anchor event's day (in the owner's zone), up to
    ``depth``: what happened together is recalled together. The ``neighbours`` made just
    before and after the anchor come first (the turns around it), nearest first; then the
    closest in meaning to the query when there is a query ``vector`` (cosines returned,
    ``known`` ones reused), else the closest in time to the anchor."""
    assert anchor.occurred_at is not None
    day = anchor.occurred_at.astimezone(zone).date()
    start = datetime.combine(day, datetime.min.time(), tzinfo=zone)
    # A day holds few events; read them all (bounded) to rank them by meaning.
    events = [
        m
        for m in store.memories.events_between(start, start + timedelta(days=1), EPISODE_READ)
        if m.id != anchor.id
    ]
    first = _adjacent(anchor, events, neighbours)
    if vector is None:
        when = anchor.occurred_at
        events.sort(key=lambda m: (first.get(m.id, neighbours + 1), _distance(m, when)))
        return events[:depth], {}
    cosines = cosines_of(store, vector, [m.id for m in events], known)
    events.sort(key=lambda m: (first.get(m.id, neighbours + 1), -cosines.get(m.id, -1.0)))
    return events[:depth], cosines


def feedback_leg(
    store: Store, vector: Vector, top: Sequence[str], beta: float, depth: int
) -> list[VectorHit]:
    """Active memories closest to the message's vector moved toward the mean of the ``top``
    ranked memories' vectors (Rocchio: q/|q| + ``beta`` × their mean), with their cosines to
    that vector; none when no top memory has a vector."""
    import numpy as np

    stored = store.memories.vectors(list(top))
    if not stored:
        return []
    query = np.asarray(vector, dtype=np.float32)
    centroid = np.mean(np.asarray([stored[i] for i in top if i in stored]), axis=0)
    moved = query / max(float(np.linalg.norm(query)), 1e-12) + beta * centroid
    moved /= max(float(np.linalg.norm(moved)), 1e-12)
    return store.vectors.nearest(moved.astype(np.float32), [Status.ACTIVE], depth)


def expansion_terms(
    store: Store,
    top: Sequence[Memory],
    words: Sequence[str],
    count: int,
    most: float,
    active: int,
) -> list[str]:
    """Up to ``count`` words the ``top`` memories hold and the message does not, most
    telling first (how many of them hold it × its inverse document frequency among the
    ``active`` memories); words held by more than ``most`` active memories are left out."""
    # Words in the order the memories first hold them, ties by the word itself: never in a
    # set's order, which moves with Python's hash seed.
    held = Counter(w for m in top for w in dict.fromkeys(query_terms(m.content)) if w not in words)
    ranked = sorted(held, key=lambda w: (-held[w], w))
    shared = [w for w in ranked if held[w] >= min(2, len(top))][: 4 * count]
    if not shared:
        return []
    frequency = store.text.search(shared, 0).document_frequency
    total = max(1, active)
    scored = {
        w: held[w] * math.log(1.0 + total / (frequency[w] + 0.5))
        for w in shared
        if 0 < frequency.get(w, 0) <= most
    }
    return sorted(scored, key=lambda w: (-scored[w], w))[:count]


def _adjacent(anchor: Memory, events: Sequence[Memory], within: int) -> dict[str, int]:
    """The events made up to ``within`` places before or after ``anchor`` (ids sort in the
    order memories were made), by id, with their distance."""
    if within <= 0:
        return {}
    ordered = sorted([anchor, *events], key=lambda m: (m.created_at, m.id))
    at = ordered.index(anchor)
    return {m.id: abs(i - at) for i, m in enumerate(ordered) if 0 < abs(i - at) <= within}


def _distance(memory: Memory, middle: datetime) -> float:
    assert memory.occurred_at is not None
    return abs((memory.occurred_at - middle).total_seconds())


@dataclass(frozen=True)
class Evidence:
    """What the legs found for one message: every candidate with its evidence, what recall
    knows about the message, each leg's state ("ok", "empty", "failed: …") and ranking."""

    candidates: dict[str, Candidate]
    facts: QueryFacts
    legs: dict[str, str]
    rankings: dict[str, list[str]]
    vector: Vector | None
    # The legs' ranks of the memories a leg read but did not hand on (RecallPolicy's
    # entity_leg_depth, time_leg_depth): one the episode leg brings regains them.
    held_back: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def run_legs(store: Store, embedder: Embedder, query: Query) -> Evidence:
    """Run the vector, text, entity and time legs; each may fail without stopping the others.
    A :class:`QueryEmbedder` embeds the message on a worker thread while the text, entity and
    time legs read the store; what each leg found is recorded in the same order either way."""
    plan = query.plan
    depth, kinds = plan.depth, plan.kinds
    names = query.names
    # No active memory, nothing to find: the model is not loaded (a cold recall on a new
    # store costs no embedding).
    active = store.memories.count(status=Status.ACTIVE)
    # Why beside: the embedding (~6 ms, onnxruntime) and the legs' SQL both release the GIL;
    # one after the other they were a third of a recall's critical path (bench/README.md).
    # A message's sentences: one more call beside it (in the message's call, each would be
    # padded to the message's length: twice the time, bench/README.md), or pooled from its run.
    sentences = list(query.sentences) if active else []
    beside = isinstance(embedder, QueryEmbedder)
    late = None
    if sentences and plan.sentence_late:
        late = late_begun(embedder, query.vector_text, sentences, beside)
    pending, many = late or (
        _begin(embedder, query.vector_text) if active else None,
        vectors_begun(embedder, sentences, beside) if sentences else None,
    )
    # Each leg's ids, or the error it failed with.
    found: dict[str, list[str] | Exception] = {}
    words = query.words
    text: TextResult | None = None
    try:
        text, words = searched_text(store, words, plan.text_depth or depth, kinds, plan.stand_ins)
        found["text"] = [hit.memory_id for hit in text.hits]
    except Exception as error:  # each leg may fail alone; the others still answer
        found["text"] = error
    if names is not None:
        try:
            names = selective_names(names, text, plan)
            found["entity"] = entity_leg(store, names, depth)
        except Exception as error:
            found["entity"] = error
    window = WindowLeg()
    if query.window is not None:
        try:
            window = window_leg(store, query.window, depth, plan.named_day_window_days, kinds)
            found["time"] = list(window.ranked)
        except Exception as error:
            found["time"] = error
    # Still beside the embedding: the rows of what the other legs hand on so far (a deep
    # name or time hit the vector leg also finds is read after it).
    bounds = plan.bounds
    so_far = {leg: ids for leg, ids in found.items() if not isinstance(ids, Exception)}
    early = sorted({i for ids in handed_on(so_far, bounds).values() for i in ids})
    fetched = {i: window.read[i] for i in early if i in window.read}
    fetched.update(store.memories.get_many([i for i in early if i not in fetched]))
    vector: Vector | None = None
    vectors: list[Vector] = []  # the message's and its sentences', when they were embedded
    cosines: dict[str, float] = {}
    try:
        vector = awaited_vector(pending) if pending is not None else None
        if many is not None and vector is not None:
            vectors = [vector, *awaited_vectors(many)]
            found["vector"], cosines = sentence_vector_leg(store, vectors, plan, kinds)
        else:
            hits = vector_leg(store, vector, depth, kinds) if vector is not None else []
            found["vector"] = [hit.memory_id for hit in hits]
            cosines = {hit.memory_id: hit.cosine for hit in hits}
    except Exception as error:
        found["vector"] = error
    legs: dict[str, str] = {}
    if query.names_failed is not None:
        legs["entity"] = query.names_failed
    rankings: dict[str, list[str]] = {}
    for leg in ("vector", "text", "entity", "time"):
        outcome = found.get(leg)
        if isinstance(outcome, Exception):
            leg_failed(legs, leg, outcome)
        elif outcome is not None:
            rankings[leg] = outcome
    for leg, ids in rankings.items():
        legs[leg] = "ok" if ids else "empty"
    # Every leg's own ranks; the entity and time legs hand on their first few and, below
    # them, only what another leg found too (RecallPolicy.entity_leg_depth, time_leg_depth).
    read = rankings
    rankings = handed_on(read, bounds)

    ids = sorted({i for ranked in rankings.values() for i in ranked})
    fetched.update(store.memories.get_many([i for i in ids if i not in fetched]))
    memories = {i: fetched[i] for i in ids if i in fetched}
    if vector is not None and text is not None:
        # The text gate weighs meaning too; entity and time hits need no cosine.
        hit_ids = [hit.memory_id for hit in text.hits]
        if vectors and plan.sentence_cosine:  # the best of the sentences' too
            cosines = more_cosines(store, vectors, hit_ids, cosines)
        else:
            cosines = cosines_of(store, vector, hit_ids, cosines)
    held = {hit.memory_id: hit.terms for hit in text.hits} if text is not None else {}
    ranks: dict[str, dict[str, int]] = {}
    held_back: dict[str, dict[str, int]] = {}
    for leg, ranked in read.items():
        for position, memory_id in enumerate(ranked, start=1):
            into = ranks if memory_id in memories else held_back
            into.setdefault(memory_id, {}).setdefault(leg, position)
    candidates = {
        memory_id: Candidate(
            memory, ranks[memory_id], cosines.get(memory_id), held.get(memory_id, frozenset())
        )
        for memory_id, memory in memories.items()
    }
    known = query.known
    facts = QueryFacts(
        words=words,
        word_frequency=dict(text.document_frequency) if text is not None else {},
        memory_count=active,
        unknown_names=unknown_names(
            query.message,
            known,
            text.document_frequency if text is not None else None,
            plan.name_forms,
            plan.name_lookalikes,
        )
        if known is not None
        else (),
        window=query.window,
        # The window's own events: a memory that only names one of its days joins the time
        # leg but does not make an empty window bound the others.
        window_events=window.events,
        window_named=frozenset(window.named),
        embedded=vector is not None,
        personal=about_owner(query.message, plan.how_much_modal),
        named=names is not None and bool(names.selective or names.common),
        definite=definite_reference(query.message),
        yes_or_no=yes_or_no_words(query.message),
        relatives=query.relatives,
    )
    return Evidence(candidates, facts, legs, rankings, vector, held_back)


def leg_failed(legs: dict[str, str], leg: str, error: Exception) -> None:
    log.warning("recall leg %s failed: %s", leg, error, exc_info=error)
    legs[leg] = f"failed: {error}"
