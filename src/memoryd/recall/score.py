"""Recall's third stage: score and gate (SPEC §4). The gates (:mod:`memoryd.recall.gate_policy`)
and the score (:mod:`memoryd.recall.score_policy`) judge the legs' :class:`Evidence`; then the
best event's day joins through the episode leg and is judged against the same measures. The
result, a :class:`~memoryd.recall.score_policy.Ranking`, is what the relative cut and packing
read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, tzinfo

from memoryd.memory.model import Memory
from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.legs import Evidence, episode_leg, leg_failed
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score_policy import (
    Ranking,
    diversify,
    episode_anchor,
    extend_ranking,
    rank_candidates,
)
from memoryd.recall.sides_policy import FIRST, other_side
from memoryd.storage.protocols import Store


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
        return _diverse(store, ranking, policy, evidence.facts.yes_or_no), evidence
    try:
        joined = _episode(store, evidence, anchor, zone, policy)
    except Exception as error:  # the episode leg may fail alone too
        legs = {**evidence.legs}
        leg_failed(legs, "episode", error)
        return _diverse(store, ranking, policy, evidence.facts.yes_or_no), replace(
            evidence, legs=legs
        )
    candidates = {**evidence.candidates, **joined}
    evidence = replace(
        evidence,
        candidates=candidates,
        legs={**evidence.legs, "episode": "ok" if joined else "empty"},
        rankings={**evidence.rankings, "episode": list(joined)},
    )
    extended = extend_ranking(ranking, _kept(joined, keep), evidence.facts, now, policy)
    return _diverse(store, extended, policy, evidence.facts.yes_or_no), evidence


def _diverse(
    store: Store, ranking: Ranking, policy: RecallPolicy, asked: frozenset[str]
) -> Ranking:
    """``ranking`` with its first items chosen for diversity (score_policy.diversify), their
    vectors read from the store, then both sides of a yes/no question in its first ten
    (sides_policy.other_side); as it is when neither applies."""
    if policy.diversity_weight > 0 and len(ranking.items) >= 2:
        top = [s.memory.id for s in ranking.items[: policy.diversity_depth]]
        vectors = store.memories.vectors(top)
        ranking = replace(ranking, items=diversify(ranking.items, vectors, policy))
    return _both_sides(ranking, policy, asked)


def _both_sides(ranking: Ranking, policy: RecallPolicy, asked: frozenset[str]) -> Ranking:
    """``ranking`` with the memory that says otherwise moved to the tenth place, at the
    tenth's score (the relative cut reads scores), when sides_policy.other_side finds one."""
    items = ranking.items
    if not asked:
        return ranking
    depth = policy.other_side_depth
    found = other_side([s.memory.content for s in items[:depth]], asked, policy)
    if found is None:
        return ranking
    lifted = replace(items[found], score=items[FIRST - 1].score)
    rest = [s for at, s in enumerate(items) if at != found]
    return replace(ranking, items=(*rest[: FIRST - 1], lifted, *rest[FIRST - 1 :]))


def _episode(
    store: Store, evidence: Evidence, anchor: Memory, zone: tzinfo, policy: RecallPolicy
) -> dict[str, Candidate]:
    """The episode leg's candidates, best first: new ones (with the ranks a leg found them at
    when it held them back), and known ones with the episode rank added."""
    known = {i: c.cosine for i, c in evidence.candidates.items() if c.cosine is not None}
    events, cosines = episode_leg(
        store,
        anchor,
        zone,
        policy.episode_depth,
        evidence.vector,
        known,
        policy.episode_neighbours,
    )
    joined: dict[str, Candidate] = {}
    for position, memory in enumerate(events, start=1):
        held = evidence.held_back.get(memory.id)
        # One a leg held back joins as it would have been judged had it been handed on: with
        # that leg's rank and, found by a name or a time alone, no cosine of its own.
        current = evidence.candidates.get(memory.id) or Candidate(
            memory, held or {}, None if held else cosines.get(memory.id)
        )
        joined[memory.id] = replace(current, ranks={**current.ranks, "episode": position})
    return joined


def _kept(
    candidates: dict[str, Candidate], keep: Callable[[Candidate], bool] | None
) -> dict[str, Candidate]:
    if keep is None:
        return candidates
    return {i: c for i, c in candidates.items() if keep(c)}
