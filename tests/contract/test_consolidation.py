"""The daily consolidation job through the service: dry run, stages, idempotence, audit."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memoryd.memory.model import Kind, Source, Status
from memoryd.service import MemoryService
from tests.builders import item

START = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)


def test_a_year_later_every_stage_acts_once_and_only_once(service: MemoryService) -> None:
    fact = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon", now=START
    ).memory
    event = service.remember(
        "Owner ran a half marathon in Porto", kind=Kind.EVENT, now=START
    ).memory
    [weak, doubt] = [
        r.memory
        for r in service.propose(
            {"memories": [
                item("Owner might like jazz", kind="fact", confidence=0.3),
                item("Owner seems to prefer trains over planes", kind="inference", confidence=0.8),
            ]},
            source=Source.TURN,
            now=START,
        )
    ]  # fmt: skip
    assert fact and event and weak and doubt
    service.confirm(doubt.id, now=START)
    later = START + timedelta(days=370)

    before = {m.id: (m.status, m.confidence) for m in service.list_memories()}
    plan = service.consolidate(now=later, dry_run=True)
    assert {(s.stage.value, s.memory_id) for s in plan.steps} == {
        ("archive-episodic", event.id),
        ("decay-semantic", fact.id),
        ("decay-inferences", doubt.id),
        ("demote-pending", weak.id),
    }
    assert {m.id: (m.status, m.confidence) for m in service.list_memories()} == before

    report = service.consolidate(now=later)
    assert len(report.steps) == 4
    assert service.get(event.id).status is Status.ARCHIVED
    assert service.get(weak.id).status is Status.ARCHIVED
    old_fact = service.get(fact.id)
    assert old_fact.status is Status.ARCHIVED and old_fact.superseded_by is not None
    new_fact = service.get(old_fact.superseded_by)
    assert new_fact.status is Status.ACTIVE and abs(new_fact.confidence - 0.8) < 1e-9
    assert new_fact.content == fact.content
    # The inference is four half-lives old: 0.8 / 16 < 0.3, so it is archived.
    assert service.get(doubt.id).status is Status.ARCHIVED
    audit = service.show(new_fact.id).audit
    assert {"decay-semantic"} <= {entry.rule for entry in audit}

    again = service.consolidate(now=later)
    assert again.steps == ()
    assert [m.id for m in service.reconfirmation_queue()] == [new_fact.id]
    service.reconfirm(new_fact.id, now=later)
    assert service.reconfirmation_queue() == []


def test_the_newer_of_two_pending_duplicates_is_rejected(service: MemoryService) -> None:
    older = service.propose(
        {"memories": [item("Owner's sister is called Marta", kind="fact", confidence=0.9)]},
        source=Source.TURN,
        now=START,
    )[0].memory
    assert older is not None and older.status is Status.PENDING
    # Write-time dedupe keeps this from happening through propose; an import or an older
    # version could still leave two pending copies, so put one in through the store.
    twin = replace(older, id="01TWINOFMARTA00000000000000"[:26], created_at=START + timedelta(1))
    with service.store.transaction():
        service.store.memories.insert(twin, service.embedder.embed([twin.content])[0])

    plan = service.consolidate(now=START + timedelta(days=2), dry_run=True)
    assert [(s.stage.value, s.memory_id) for s in plan.steps] == [("dedupe-pending", twin.id)]
    report = service.consolidate(now=START + timedelta(days=2))
    assert [s.memory_id for s in report.steps] == [twin.id]
    assert service.get(twin.id).status is Status.REJECTED
    assert service.get(older.id).status is Status.PENDING
    assert service.consolidate(now=START + timedelta(days=2)).steps == ()
