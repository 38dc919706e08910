"""The consolidation stages as pure plans: boundaries, idempotence and the merge guard."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.consolidation.policy import (
    MAX_UNANSWERED_CUES,
    Action,
    ConsolidationPolicy,
    Stage,
    merge_guard,
    plan_archive_episodic,
    plan_decay_inferences,
    plan_decay_semantic,
    plan_dedupe_pending,
    plan_demote_pending,
    reflection_due,
    unanswered_cues,
    with_unanswered,
)
from memoryd.memory.model import Kind, Memory, Source, Status

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
POLICY = ConsolidationPolicy()


def memory(
    memory_id: str,
    kind: Kind,
    *,
    age_days: float,
    status: Status = Status.ACTIVE,
    confirmed_days: float | None = None,
    retrieved_days: float | None = None,
    confidence: float = 0.9,
    hits: int = 0,
) -> Memory:
    created = NOW - timedelta(days=age_days)
    confirmed = NOW - timedelta(days=confirmed_days) if confirmed_days is not None else created
    return Memory(
        id=memory_id,
        kind=kind,
        status=status,
        content=f"memory {memory_id}",
        source=Source.TURN,
        created_at=created,
        last_confirmed_at=confirmed,
        last_retrieved_at=NOW - timedelta(days=retrieved_days) if retrieved_days else None,
        confidence=confidence,
        retrieval_hits=hits,
    )


@pytest.mark.parametrize(("days", "archived"), [(179, False), (180.5, True), (181, True)])
def test_events_are_archived_only_past_180_idle_days(days: float, archived: bool) -> None:
    steps = plan_archive_episodic([memory("e", Kind.EVENT, age_days=days)], NOW, POLICY)
    assert [s.memory_id for s in steps] == (["e"] if archived else [])


def test_a_retrieval_keeps_an_old_event_alive() -> None:
    old = memory("e", Kind.EVENT, age_days=400, retrieved_days=20)
    assert plan_archive_episodic([old], NOW, POLICY) == []


def test_only_active_events_are_archived() -> None:
    items = [
        memory("f", Kind.FACT, age_days=400),
        memory("p", Kind.EVENT, age_days=400, status=Status.PENDING),
    ]
    assert plan_archive_episodic(items, NOW, POLICY) == []


@pytest.mark.parametrize(("days", "decays"), [(364, False), (366, True)])
def test_facts_decay_only_past_365_unconfirmed_days(days: int, decays: bool) -> None:
    steps = plan_decay_semantic([memory("f", Kind.FACT, age_days=days)], NOW, POLICY)
    assert len(steps) == (1 if decays else 0)
    if decays:
        assert steps[0].action is Action.SUPERSEDE
        assert steps[0].new_confidence == pytest.approx(0.9 * 0.8)


def test_semantic_decay_is_idempotent_within_a_day() -> None:
    fact = memory("f", Kind.FACT, age_days=400)
    (step,) = plan_decay_semantic([fact], NOW, POLICY)
    # The supersede writes a new row created now, carrying the old confirmation time.
    successor = replace(fact, id="g", created_at=NOW, confidence=step.new_confidence or 0.0)
    assert plan_decay_semantic([successor], NOW, POLICY) == []
    assert plan_decay_semantic([successor], NOW + timedelta(days=366), POLICY) != []


def test_reconfirmed_facts_do_not_decay() -> None:
    fact = memory("f", Kind.FACT, age_days=900, confirmed_days=10)
    assert plan_decay_semantic([fact], NOW, POLICY) == []


@pytest.mark.parametrize(
    ("days", "confidence", "expected"),
    [(89, 0.9, None), (91, 0.9, 0.45), (181, 0.9, "archive"), (91, 0.5, "archive")],
)
def test_inferences_halve_per_90_days_and_are_archived_below_point_three(
    days: int, confidence: float, expected: float | str | None
) -> None:
    item = memory("i", Kind.INFERENCE, age_days=days, confidence=confidence)
    steps = plan_decay_inferences([item], NOW, POLICY)
    if expected is None:
        assert steps == []
    elif expected == "archive":
        assert [s.action for s in steps] == [Action.ARCHIVE]
    else:
        assert steps[0].action is Action.SUPERSEDE
        assert steps[0].new_confidence == pytest.approx(expected)


@pytest.mark.parametrize(
    ("days", "confidence", "hits", "demoted"),
    [(59, 0.3, 0, False), (61, 0.3, 0, True), (61, 0.7, 0, False), (61, 0.3, 2, False)],
)
def test_stale_low_confidence_pending_items_are_demoted(
    days: int, confidence: float, hits: int, demoted: bool
) -> None:
    item = memory(
        "p", Kind.FACT, age_days=days, status=Status.PENDING, confidence=confidence, hits=hits
    )
    steps = plan_demote_pending([item], NOW, POLICY)
    assert [s.stage for s in steps] == ([Stage.DEMOTE_PENDING] if demoted else [])


def test_the_newer_of_two_pending_duplicates_is_rejected_once() -> None:
    older = memory("a", Kind.FACT, age_days=5, status=Status.PENDING)
    newer = memory("b", Kind.FACT, age_days=1, status=Status.PENDING)
    third = memory("c", Kind.FACT, age_days=0, status=Status.PENDING)
    steps = plan_dedupe_pending(
        [(newer, older, 0.97), (older, third, 0.96), (newer, third, 0.99)], POLICY
    )
    assert {(s.memory_id, s.action) for s in steps} == {("b", Action.REJECT), ("c", Action.REJECT)}
    assert plan_dedupe_pending([(older, newer, 0.94)], POLICY) == []


def test_reflection_needs_ten_events_in_seven_days() -> None:
    nine = [memory(f"e{i}", Kind.EVENT, age_days=i * 0.5) for i in range(9)]
    assert not reflection_due(nine, NOW, POLICY)
    assert reflection_due([*nine, memory("e9", Kind.EVENT, age_days=6)], NOW, POLICY)
    assert not reflection_due([*nine, memory("old", Kind.EVENT, age_days=8)], NOW, POLICY)


@pytest.mark.parametrize("dropped", ["Lisbon", "2026-08-27"])
def test_the_merge_guard_rejects_a_merge_that_drops_a_name_or_a_date(dropped: str) -> None:
    originals = [
        "The owner moved to Lisbon on 2026-08-27",
        "Owner moved to Lisbon (2026-08-27), near the river",
    ]
    merged = "The owner moved to Lisbon on 2026-08-27, near the river".replace(dropped, "")
    reason = merge_guard(originals, merged, POLICY)
    assert reason is not None and dropped in reason


def test_the_merge_guard_accepts_a_faithful_merge_and_rejects_a_bloated_one() -> None:
    originals = ["Ana likes green tea", "Ana likes green tea a lot"]
    assert merge_guard(originals, "Ana likes green tea a lot", POLICY) is None
    bloated = "Ana likes green tea a lot, " + "and many other things besides " * 3
    assert "length" in (merge_guard(originals, bloated, POLICY) or "")
    assert merge_guard(originals, "  ", POLICY) == "the merged text is empty"


def test_memories_without_usable_cues_are_kept_per_model_newest_first_and_bounded() -> None:
    stored = with_unanswered(None, "openai small", ["m1", "m2"])
    assert unanswered_cues(stored, "openai small") == {"m1", "m2"}
    assert unanswered_cues(stored, "openai bigger") == frozenset()  # another model asks again
    for broken in ("", "not json", "[1, 2]", '{"model": "openai small", "ids": 7}'):
        assert unanswered_cues(broken, "openai small") == frozenset()
    # Another model's list is replaced, not merged.
    assert unanswered_cues(with_unanswered(stored, "openai bigger", ["m3"]), "openai bigger") == {
        "m3"
    }
    many = with_unanswered(None, "m", [f"id{i}" for i in range(MAX_UNANSWERED_CUES + 5)])
    kept = unanswered_cues(with_unanswered(many, "m", ["id0"]), "m")
    assert len(kept) == MAX_UNANSWERED_CUES and "id0" in kept and "id5" not in kept
