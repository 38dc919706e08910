"""Each deterministic stage's day boundary, through the service: one day short nothing moves;
one day past, the memory changes by a status change or a supersede, audited with the stage's
name, and the old row keeps its content and confidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.service import MemoryService
from tests.builders import item

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def snapshot(service: MemoryService) -> list[tuple[object, ...]]:
    """Everything a user could see change in ``list``."""
    return [
        (m.id, m.status, m.content, m.confidence, m.superseded_by, m.supersedes)
        for m in service.list_memories()
    ]


def stage_audit(service: MemoryService, memory_id: str) -> list[tuple[str, str, Status]]:
    """(rule, action, to_status) of the system's consolidation entries for one row."""
    return [
        (e.rule, e.action, e.to_status)
        for e in service.store.audit.for_memories([memory_id])
        if e.rule is not None and e.actor.value == "system"
    ]


def check_unchanged(service: MemoryService, days: int) -> None:
    before = snapshot(service)
    report = service.consolidate(now=T0 + timedelta(days=days))
    assert report.steps == ()
    assert snapshot(service) == before


def check_status_change(
    service: MemoryService, original: Memory, days: int, stage: str, status: Status
) -> None:
    rows_before = len(service.list_memories())
    report = service.consolidate(now=T0 + timedelta(days=days))
    assert [(s.stage.value, s.memory_id) for s in report.steps] == [(stage, original.id)]
    after = service.get(original.id)
    assert after.status is status
    assert (after.content, after.confidence, after.superseded_by) == (
        original.content, original.confidence, None)  # fmt: skip
    assert stage_audit(service, original.id) == [(stage, "archive", status)]
    assert len(service.list_memories()) == rows_before  # no new row


def check_supersede(
    service: MemoryService, original: Memory, days: int, stage: str, confidence: float
) -> Memory:
    report = service.consolidate(now=T0 + timedelta(days=days))
    assert [(s.stage.value, s.memory_id) for s in report.steps] == [(stage, original.id)]
    old = service.get(original.id)
    assert old.status is Status.ARCHIVED and old.superseded_by is not None
    assert (old.content, old.confidence) == (original.content, original.confidence)
    new = service.get(old.superseded_by)
    assert new.status is Status.ACTIVE and new.supersedes == old.id
    assert new.content == original.content and new.kind is original.kind
    assert new.slot == original.slot
    assert new.confidence == pytest.approx(confidence, abs=1e-6)
    assert stage_audit(service, old.id) == [(stage, "supersede", Status.ARCHIVED)]
    assert stage_audit(service, new.id) == [(stage, "create", Status.ACTIVE)]
    active = service.list_memories(status=Status.ACTIVE, kind=original.kind)
    assert [m.id for m in active] == [new.id]
    return new


@pytest.mark.parametrize("days", [179, 181])
def test_an_event_is_archived_only_after_180_idle_days(service: MemoryService, days: int) -> None:
    event = service.remember(
        "Owner ran a half marathon in Porto", kind=Kind.EVENT, occurred_at=T0, now=T0
    ).memory
    assert event is not None
    if days < 180:
        check_unchanged(service, days)
    else:
        check_status_change(service, event, days, "archive-episodic", Status.ARCHIVED)


@pytest.mark.parametrize("days", [364, 366])
def test_a_fact_decays_only_after_365_unconfirmed_days(service: MemoryService, days: int) -> None:
    fact = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon",
        confidence=0.9, now=T0,
    ).memory  # fmt: skip
    assert fact is not None
    if days < 365:
        check_unchanged(service, days)
        assert service.reconfirmation_queue() == []
    else:
        new = check_supersede(service, fact, days, "decay-semantic", 0.72)
        assert [m.id for m in service.reconfirmation_queue()] == [new.id]


def test_a_reinforced_fact_counts_its_year_from_the_repetition(service: MemoryService) -> None:
    fact = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon", now=T0
    ).memory
    assert fact is not None
    service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon",
        now=T0 + timedelta(days=100),
    )  # fmt: skip
    check_unchanged(service, 366)
    check_supersede(service, fact, 466, "decay-semantic", 0.8)


def confirmed_inference(service: MemoryService, confidence: float) -> Memory:
    [result] = service.propose(
        {"memories": [item("Owner prefers trains to planes", kind="inference",
                           confidence=confidence)]},
        source=Source.TURN, now=T0,
    )  # fmt: skip
    assert result.memory is not None and result.memory.status is Status.PENDING
    return service.confirm(result.memory.id, now=T0)


@pytest.mark.parametrize("days", [89, 91])
def test_an_inference_halves_only_after_90_days(service: MemoryService, days: int) -> None:
    inference = confirmed_inference(service, 0.8)
    if days < 90:
        check_unchanged(service, days)
    else:
        check_supersede(service, inference, days, "decay-inferences", 0.4)


@pytest.mark.parametrize("days", [89, 91])
def test_an_inference_that_would_fall_under_point_three_is_archived(
    service: MemoryService, days: int
) -> None:
    inference = confirmed_inference(service, 0.5)
    if days < 90:
        check_unchanged(service, days)
    else:
        check_status_change(service, inference, days, "decay-inferences", Status.ARCHIVED)


@pytest.mark.parametrize("days", [59, 61])
def test_a_stale_low_confidence_pending_item_is_demoted_after_60_days(
    service: MemoryService, days: int
) -> None:
    weak, sure = (
        r.memory
        for r in service.propose(
            {"memories": [item("Owner might like jazz", kind="fact", confidence=0.3),
                          item("Owner's dentist is Dr Okafor", kind="fact", confidence=0.9)]},
            source=Source.TURN, now=T0,
        )
    )  # fmt: skip
    assert weak is not None and sure is not None
    assert (weak.status, sure.status) == (Status.PENDING, Status.PENDING)
    if days < 60:
        check_unchanged(service, days)
    else:
        # Only the low-confidence one: a confident proposal keeps waiting for the owner.
        check_status_change(service, weak, days, "demote-pending", Status.ARCHIVED)
        assert service.get(sure.id).status is Status.PENDING
