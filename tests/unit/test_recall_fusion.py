"""Recall policy (SPEC §4), pure: fusion is monotone (Hypothesis properties)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from memoryd.memory.model import Kind, Memory
from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.score_policy import extend_ranking, rank_candidates

from .recall_policy_support import (
    EVER,
    LEGS,
    NOW,
    PLAIN,
    candidates,
    fused,
    fusion,
    leg_rankings,
    memory,
    memory_sets,
)

# ---------------------------------------------------------------------------------------------
# Fusion is monotone


def _score_of(legs: dict[str, list[str]], found: dict[str, Memory], memory_id: str) -> float:
    """The memory's fused score, or 0 when it is not a candidate."""
    return next((s.score for s in fused(legs, found) if s.memory.id == memory_id), 0.0)


@fusion
@given(data=st.data())
def test_a_better_rank_in_a_leg_never_lowers_a_memorys_score(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=2, content=PLAIN, max_size=15))
    legs = data.draw(leg_rankings(sorted(found)))
    movable = [(leg, ids) for leg, ids in legs.items() if len(ids) >= 2]
    if not movable:
        legs = {"text": sorted(found)}
        movable = list(legs.items())
    leg, ids = data.draw(st.sampled_from(movable))
    old_position = data.draw(st.integers(1, len(ids) - 1))
    new_position = data.draw(st.integers(0, old_position - 1))
    target = ids[old_position]
    promoted = [i for i in ids if i != target]
    promoted.insert(new_position, target)

    before = _score_of(legs, found, target)
    after = _score_of({**legs, leg: promoted}, found, target)

    assert after >= before


@fusion
@given(data=st.data())
def test_one_more_leg_finding_a_memory_never_lowers_its_score(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    ids = sorted(found)
    legs = data.draw(leg_rankings(ids))
    new_leg = data.draw(st.sampled_from(LEGS))
    legs.pop(new_leg, None)
    target = data.draw(st.sampled_from(ids))
    others = data.draw(st.permutations([i for i in ids if i != target]))
    position = data.draw(st.integers(0, len(others)))
    ranking = [*others[:position], target, *others[position:]]
    with_leg = {**legs, new_leg: ranking}

    before = _score_of(legs, found, target)
    after = _score_of(with_leg, found, target)

    assert after >= before
    if found[target].confidence > 0:
        assert after > before


@fusion
@given(data=st.data(), newer_by_days=st.floats(0.001, 600))
def test_a_newer_confirmation_never_lowers_a_memorys_score(
    data: st.DataObject, newer_by_days: float
) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    ids = sorted(found)
    legs = data.draw(leg_rankings(ids))
    ranked = sorted({i for r in legs.values() for i in r})
    if not ranked:
        legs = {"text": ids}
        ranked = ids
    target = data.draw(st.sampled_from(ranked))
    old = found[target]
    reconfirmed = replace(
        old, last_confirmed_at=old.last_confirmed_at + timedelta(days=newer_by_days)
    )

    before = _score_of(legs, found, target)
    after = _score_of(legs, {**found, target: reconfirmed}, target)

    assert after >= before
    if reconfirmed.last_confirmed_at <= NOW and old.kind is not Kind.INFERENCE:
        assert after > before


@fusion
@given(data=st.data())
def test_extending_a_ranking_equals_ranking_everything_at_once(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    ids = sorted(found)
    pool = candidates(data.draw(leg_rankings(ids)), found)
    later = data.draw(st.lists(st.sampled_from(ids), unique=True))
    joined = {
        i: replace(pool[i], ranks={**pool[i].ranks, "episode": n})
        if i in pool
        else Candidate(found[i], {"episode": n}, 0.5)
        for n, i in enumerate(later, start=1)
    }

    first = rank_candidates(pool, EVER, NOW)
    extended = extend_ranking(first, joined, EVER, NOW)
    at_once = rank_candidates({**pool, **joined}, EVER, NOW)

    assert [s.memory.id for s in extended.items] == [s.memory.id for s in at_once.items]
    assert [s.score for s in extended.items] == [s.score for s in at_once.items]
    assert {d.memory_id for d in extended.dropped} == {d.memory_id for d in at_once.dropped}


@fusion
@given(data=st.data())
def test_a_candidate_no_gate_admits_never_changes_the_others(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    legs = data.draw(leg_rankings(sorted(found)))
    pool = candidates(legs, found)
    stray = Candidate(memory("stray"), {"vector": 1, "text": 2}, 0.1, frozenset({"owner"}))

    before = rank_candidates(pool, EVER, NOW)
    after = rank_candidates({**pool, "stray": stray}, EVER, NOW)

    assert after.items == before.items
    assert "stray" in {d.memory_id for d in after.dropped}
