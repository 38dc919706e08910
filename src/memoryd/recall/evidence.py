"""Retrieval: run the recall legs against the store and rank what they found (SPEC §4).

The I/O half of recall and ``search_memory``: each leg reads the store and may fail alone; the
pure :mod:`memoryd.recall.policy` policy then gates, fuses and ranks. The episode leg runs after a
first
ranking, from the best event it found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

from memoryd.memory.entity_policy import EntityMatcher
from memoryd.memory.model import Kind, Memory, Status
from memoryd.providers.embedder import Embedder
from memoryd.recall.legs import (
    NameContext,
    cosines_of,
    entity_leg,
    episode_leg,
    name_context,
    query_vector,
    selective_names,
    text_leg,
    time_leg_events,
    unknown_names,
    vector_leg,
)
from memoryd.recall.policy import (
    Candidate,
    QueryFacts,
    Ranking,
    RecallPolicy,
    episode_anchor,
    extend_ranking,
    rank_candidates,
)
from memoryd.recall.time_window_policy import TimeWindow
from memoryd.storage.protocols import Store, TextResult
from memoryd.words import query_terms

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

log = logging.getLogger("memoryd")


@dataclass(frozen=True)
class Evidence:
    """What the legs found for one message: every candidate with its evidence, what recall
    knows about the message, each leg's state ("ok", "empty", "failed: …") and ranking."""

    candidates: dict[str, Candidate]
    facts: QueryFacts
    legs: dict[str, str]
    rankings: dict[str, list[str]]
    vector: Vector | None


def gather(
    store: Store,
    embedder: Embedder,
    matcher: Callable[[], EntityMatcher],
    message: str,
    window: TimeWindow | None,
    kinds: Sequence[Kind],
    policy: RecallPolicy,
) -> Evidence:
    """Run the vector, text, entity and time legs; each may fail without stopping the others."""
    depth = policy.leg_depth
    legs: dict[str, str] = {}
    rankings: dict[str, list[str]] = {}
    names: NameContext | None = None
    known: EntityMatcher | None = None
    try:
        known = matcher()
        names = name_context(store, known, message, policy)
    except Exception as error:  # the entity index failing must not stop the other legs
        log.warning("recall: entity lookup failed: %s", error, exc_info=True)
        legs["entity"] = f"failed: {error}"
    query = names.query if names is not None else message

    vector: Vector | None = None
    cosines: dict[str, float] = {}
    active = store.memories.count(status=Status.ACTIVE)
    try:
        # No active memory, nothing to find: the model is not loaded (a cold recall on a new
        # store costs no embedding).
        vector = query_vector(embedder, query) if active else None
        hits = vector_leg(store, vector, depth, kinds) if vector is not None else []
        rankings["vector"] = [hit.memory_id for hit in hits]
        cosines = {hit.memory_id: hit.cosine for hit in hits}
    except Exception as error:  # each leg may fail alone; the others still answer
        _failed(legs, "vector", error)
    text: TextResult | None = None
    try:
        text = text_leg(store, query, depth, kinds)
        rankings["text"] = [hit.memory_id for hit in text.hits]
    except Exception as error:
        _failed(legs, "text", error)
    if names is not None:
        try:
            names = selective_names(names, text, policy)
            rankings["entity"] = entity_leg(store, names, depth)
        except Exception as error:
            _failed(legs, "entity", error)
    # Rows a leg already read are not read again.
    read: dict[str, Memory] = {}
    if window is not None:
        try:
            events = time_leg_events(store, window, depth)
            rankings["time"] = [m.id for m in events]
            read.update((m.id, m) for m in events)
        except Exception as error:
            _failed(legs, "time", error)
    for leg, ids in rankings.items():
        legs[leg] = "ok" if ids else "empty"

    ids = sorted({i for ranked in rankings.values() for i in ranked})
    fetched = store.memories.get_many([i for i in ids if i not in read])
    memories = {i: read.get(i) or fetched[i] for i in ids if i in read or i in fetched}
    if vector is not None and text is not None:
        # The text gate weighs meaning too; entity and time hits need no cosine.
        cosines = cosines_of(store, vector, [hit.memory_id for hit in text.hits], cosines)
    words = {hit.memory_id: hit.terms for hit in text.hits} if text is not None else {}
    ranks: dict[str, dict[str, int]] = {}
    for leg, ranked in rankings.items():
        for position, memory_id in enumerate(ranked, start=1):
            ranks.setdefault(memory_id, {}).setdefault(leg, position)
    candidates = {
        memory_id: Candidate(
            memory, ranks[memory_id], cosines.get(memory_id), words.get(memory_id, frozenset())
        )
        for memory_id, memory in memories.items()
    }
    facts = QueryFacts(
        words=tuple(query_terms(query)),
        word_frequency=dict(text.document_frequency) if text is not None else {},
        memory_count=active,
        unknown_names=unknown_names(message, known, text) if known is not None else (),
        window=window,
        window_events=len(rankings.get("time", [])),
        embedded=vector is not None,
    )
    return Evidence(candidates, facts, legs, rankings, vector)


def rank(
    store: Store,
    evidence: Evidence,
    now: datetime,
    policy: RecallPolicy,
    zone: tzinfo,
    keep: Callable[[Candidate], bool] | None = None,
) -> tuple[Ranking, Evidence]:
    """Gate and rank the gathered candidates (those ``keep`` accepts), then let the best
    event's day join through the episode leg and rank again."""
    ranking = rank_candidates(_kept(evidence.candidates, keep), evidence.facts, now, policy)
    anchor = episode_anchor(ranking.items)
    if anchor is None or policy.episode_depth <= 0:
        return ranking, evidence
    try:
        joined = _episode(store, evidence, anchor, zone, policy)
    except Exception as error:  # the episode leg may fail alone too
        legs = {**evidence.legs}
        _failed(legs, "episode", error)
        return ranking, replace(evidence, legs=legs)
    candidates = {**evidence.candidates, **joined}
    evidence = replace(
        evidence,
        candidates=candidates,
        legs={**evidence.legs, "episode": "ok" if joined else "empty"},
        rankings={**evidence.rankings, "episode": list(joined)},
    )
    extended = extend_ranking(ranking, _kept(joined, keep), evidence.facts, now, policy)
    return extended, evidence


def _episode(
    store: Store, evidence: Evidence, anchor: Memory, zone: tzinfo, policy: RecallPolicy
) -> dict[str, Candidate]:
    """The episode leg's candidates, best first: new ones, and known ones with the episode
    rank added."""
    known = {i: c.cosine for i, c in evidence.candidates.items() if c.cosine is not None}
    events, cosines = episode_leg(store, anchor, zone, policy.episode_depth, evidence.vector, known)
    joined: dict[str, Candidate] = {}
    for position, memory in enumerate(events, start=1):
        current = evidence.candidates.get(memory.id) or Candidate(
            memory, {}, cosines.get(memory.id)
        )
        joined[memory.id] = replace(current, ranks={**current.ranks, "episode": position})
    return joined


def _kept(
    candidates: dict[str, Candidate], keep: Callable[[Candidate], bool] | None
) -> dict[str, Candidate]:
    if keep is None:
        return candidates
    return {i: c for i, c in candidates.items() if keep(c)}


def _failed(legs: dict[str, str], leg: str, error: Exception) -> None:
    log.warning("recall leg %s failed: %s", leg, error, exc_info=True)
    legs[leg] = f"failed: {error}"
