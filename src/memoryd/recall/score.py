"""Recall's third stage: score and gate (SPEC §4). The gates (:mod:`memoryd.recall.gate_policy`)
and the score (:mod:`memoryd.recall.score_policy`) judge the legs' :class:`Evidence`; then the
best event's day joins through the episode leg and is judged against the same measures. The
result, a :class:`~memoryd.recall.score_policy.Ranking`, is what the relative cut and packing
read."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, tzinfo

from memoryd.memory.model import Memory
from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.gate_policy import most_holding, read_query
from memoryd.recall.kin_policy import kin_names, mentions, relative_first
from memoryd.recall.legs import (
    Evidence,
    episode_leg,
    expansion_terms,
    feedback_leg,
    leg_failed,
    text_leg,
)
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.proximity_policy import text_reranked, with_passages
from memoryd.recall.score_policy import (
    Ranking,
    diversify,
    episode_anchor,
    extend_ranking,
    lift_novel,
    rank_candidates,
)
from memoryd.recall.sides_policy import FIRST, other_side
from memoryd.recall.vector_legs import cosines_of
from memoryd.storage.protocols import Store

log = logging.getLogger(__name__)
# How many memories holding a kinship word are read for the names the store gives it.
KIN_READ = 20


def rank(
    store: Store,
    evidence: Evidence,
    now: datetime,
    policy: RecallPolicy,
    zone: tzinfo,
    keep: Callable[[Candidate], bool] | None = None,
) -> tuple[Ranking, Evidence]:
    """Gate and rank the gathered candidates (those ``keep`` accepts); when the block opened
    and ``feedback_depth`` is set (off as shipped), let the feedback leg join; then let the
    best event's day join through the episode leg and rank again."""
    evidence = _proximity(evidence, policy)
    ranking = rank_candidates(_kept(evidence.candidates, keep), evidence.facts, now, policy)
    if ranking.items and evidence.vector is not None and policy.feedback_depth > 0:
        ranking, evidence = _with_feedback(store, evidence, ranking, now, policy, keep)
    anchor = episode_anchor(ranking.items)
    if anchor is None or policy.episode_depth <= 0:
        return _reranked(store, ranking, evidence, policy), evidence
    try:
        joined = _episode(store, evidence, anchor, zone, policy)
    except Exception as error:  # the episode leg may fail alone too
        legs = {**evidence.legs}
        leg_failed(legs, "episode", error)
        return _reranked(store, ranking, evidence, policy), replace(evidence, legs=legs)
    candidates = {**evidence.candidates, **joined}
    evidence = replace(
        evidence,
        candidates=candidates,
        legs={**evidence.legs, "episode": "ok" if joined else "empty"},
        rankings={**evidence.rankings, "episode": list(joined)},
    )
    extended = extend_ranking(ranking, _kept(joined, keep), evidence.facts, now, policy)
    return _reranked(store, extended, evidence, policy), evidence


def _proximity(evidence: Evidence, policy: RecallPolicy) -> Evidence:
    """``evidence`` with the text leg's first ranked again by the message's words they hold in
    one passage, and their coverage read there (recall/proximity_policy.py; both off as
    shipped)."""
    depth, width = policy.text_window_depth, policy.coverage_window_chars
    if depth <= 0 and width <= 0:
        return evidence
    weights = read_query(evidence.facts, policy).weights
    candidates = evidence.candidates
    if depth > 0:
        ranked = evidence.rankings.get("text", [])
        width_of, apart = policy.text_window_chars, policy.text_window_scattered
        candidates = text_reranked(candidates, ranked, weights, depth, width_of, apart)
    if width > 0:
        candidates = with_passages(candidates, weights, width)
    return replace(evidence, candidates=candidates)


def _reranked(store: Store, ranking: Ranking, evidence: Evidence, policy: RecallPolicy) -> Ranking:
    """``ranking`` with its first items raised for a query word no better one holds
    (score_policy.lift_novel), then chosen for diversity (score_policy.diversify, their
    vectors read from the store), then both sides of a yes/no question in its first ten
    (sides_policy.other_side); as it is when none applies."""
    if policy.novelty_bonus > 0 and len(ranking.items) > 1:
        known = evidence.candidates
        first = [s.memory.id for s in ranking.items[: policy.novelty_depth]]
        held = {i: known[i].words for i in first if i in known}
        ranking = replace(ranking, items=lift_novel(ranking.items, held, policy))
    if policy.diversity_weight > 0 and len(ranking.items) >= 2:
        top = [s.memory.id for s in ranking.items[: policy.diversity_depth]]
        vectors = store.memories.vectors(top)
        ranking = replace(ranking, items=diversify(ranking.items, vectors, policy))
    ranking = _both_sides(ranking, policy, evidence.facts.yes_or_no)
    return _relative_first(store, ranking, evidence.facts.relatives, policy)


def _relative_first(
    store: Store, ranking: Ranking, relatives: tuple[str, ...], policy: RecallPolicy
) -> Ranking:
    """``ranking`` with the best of its first ``relative_first_depth`` that mentions a
    relative the message asks about moved to first place, at the first's score, when the
    first does not (kin_policy.relative_first); the relatives' names are read from the
    memories that hold the kinship words."""
    items = ranking.items
    depth = policy.relative_first_depth
    if depth <= 0 or not relatives or len(items) < 2:
        return ranking
    texts = [s.memory.content for s in items[:depth]]
    if mentions(texts[0], relatives, ()):
        return ranking
    try:
        hits = store.text.search(list(relatives), KIN_READ).hits
        found = store.memories.get_many([hit.memory_id for hit in hits])
        said = [memory.content for memory in found.values()]
    except Exception as error:  # the names then come from the ranking alone
        log.warning("recall: reading the relatives' names failed: %s", error, exc_info=error)
        said = []
    at = relative_first(texts, relatives, kin_names(relatives, [*texts, *said]), depth)
    if not at:
        return ranking
    lifted = replace(items[at], score=items[0].score)
    return replace(ranking, items=(lifted, *items[:at], *items[at + 1 :]))


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


def _with_feedback(
    store: Store,
    evidence: Evidence,
    ranking: Ranking,
    now: datetime,
    policy: RecallPolicy,
    keep: Callable[[Candidate], bool] | None,
) -> tuple[Ranking, Evidence]:
    """The feedback leg joined to an open ranking: its memories judged against the same
    context, by their cosine to the message itself (new ones read here)."""
    assert evidence.vector is not None
    top = [s.memory.id for s in ranking.items[: policy.feedback_top]]
    try:
        if policy.feedback_terms > 0:
            facts = evidence.facts
            words = facts.words
            firsts = [s.memory for s in ranking.items[: policy.feedback_top]]
            # Selective words only (every word, in a small store), as the text gate reads them.
            most = most_holding(facts, policy)
            more = expansion_terms(
                store, firsts, words, policy.feedback_terms, most, facts.memory_count
            )
            found = (
                [h.memory_id for h in text_leg(store, [*words, *more], policy.feedback_depth).hits]
                if more
                else []
            )
        else:
            hits = feedback_leg(
                store, evidence.vector, top, policy.feedback_beta, policy.feedback_depth
            )
            found = [hit.memory_id for hit in hits]
        skipped = set(top) if policy.feedback_skips_top else set()
        ids = [memory_id for memory_id in found if memory_id not in skipped]
        known = {i: c.cosine for i, c in evidence.candidates.items() if c.cosine is not None}
        cosines = cosines_of(store, evidence.vector, ids, known)
        fetched = store.memories.get_many([i for i in ids if i not in evidence.candidates])
    except Exception as error:  # the feedback leg may fail alone too
        legs = {**evidence.legs}
        leg_failed(legs, "feedback", error)
        return ranking, replace(evidence, legs=legs)
    joined: dict[str, Candidate] = {}
    for position, memory_id in enumerate(ids, start=1):
        current = evidence.candidates.get(memory_id)
        if current is None:
            memory = fetched.get(memory_id)
            if memory is None:
                continue
            current = Candidate(memory, {}, cosines.get(memory_id))
        joined[memory_id] = replace(current, ranks={**current.ranks, "feedback": position})
    evidence = replace(
        evidence,
        candidates={**evidence.candidates, **joined},
        legs={**evidence.legs, "feedback": "ok" if joined else "empty"},
        rankings={**evidence.rankings, "feedback": list(joined)},
    )
    extended = extend_ranking(ranking, _kept(joined, keep), evidence.facts, now, policy)
    return extended, evidence


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
