"""One failing consolidation stage is reported by name and the other stages still apply; a
stage that fails half-way leaves nothing half-done."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import memoryd.consolidation.run
from memoryd.ids import IdGenerator
from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.service import MemoryService
from tests.builders import item

T0 = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=370)
DETERMINISTIC = ("dedupe-pending", "archive-episodic", "decay-semantic", "decay-inferences",
                 "demote-pending")  # fmt: skip


def seed_one_per_stage(service: MemoryService) -> dict[str, Memory]:
    """One memory due for each deterministic stage at LATER (plus the twin's older copy)."""
    fact = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon", now=T0
    ).memory
    event = service.remember("Owner ran a half marathon in Porto", kind=Kind.EVENT, now=T0).memory
    weak, hunch, sure = (
        r.memory
        for r in service.propose(
            {"memories": [
                item("Owner might like jazz", kind="fact", confidence=0.3),
                item("Owner seems to prefer trains over planes", kind="inference",
                     confidence=0.8),
                item("Owner's sister is called Marta", kind="fact", confidence=0.9),
            ]},
            source=Source.TURN, now=T0,
        )
    )  # fmt: skip
    assert fact and event and weak and hunch and sure
    service.confirm(hunch.id, now=T0)
    # A second pending copy cannot come in through propose; an import could leave one.
    twin = replace(sure, id=IdGenerator().new_id(T0 + timedelta(days=1)),
                   created_at=T0 + timedelta(days=1))  # fmt: skip
    with service.store.transaction():
        service.store.memories.insert(twin, service.embedder.embed([twin.content])[0])
    return {"fact": fact, "event": event, "weak": weak, "hunch": hunch, "sure": sure,
            "twin": twin}  # fmt: skip


def test_a_stage_whose_plan_fails_is_named_and_the_others_still_apply(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = seed_one_per_stage(service)

    def broken(*args: Any, **kwargs: Any) -> list[Any]:
        raise RuntimeError("decay planner exploded")

    monkeypatch.setattr(memoryd.consolidation.run, "plan_decay_semantic", broken)
    report = service.consolidate(now=LATER)

    assert report.stages["decay-semantic"].startswith("failed")
    assert "decay planner exploded" in report.stages["decay-semantic"]
    assert {s: report.stages[s] for s in DETERMINISTIC if s != "decay-semantic"} == {
        "dedupe-pending": "1 applied", "archive-episodic": "1 applied",
        "decay-inferences": "1 applied", "demote-pending": "1 applied",
    }  # fmt: skip
    fact = service.get(seeded["fact"].id)
    assert (fact.status, fact.superseded_by, fact.confidence) == (Status.ACTIVE, None, 1.0)
    assert service.get(seeded["event"].id).status is Status.ARCHIVED
    assert service.get(seeded["hunch"].id).status is Status.ARCHIVED
    assert service.get(seeded["weak"].id).status is Status.ARCHIVED
    assert service.get(seeded["twin"].id).status is Status.REJECTED

    # Once the stage works again, the next run catches up on it alone.
    monkeypatch.undo()
    again = service.consolidate(now=LATER)
    assert [(s.stage.value, s.memory_id) for s in again.steps] == [
        ("decay-semantic", seeded["fact"].id)
    ]


def test_a_vector_failure_in_dedupe_pending_does_not_stop_the_decays(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = seed_one_per_stage(service)

    def broken_vectors(memory_ids: Any) -> Any:
        raise RuntimeError("vector table unreadable")

    # Dedupe-pending compares the stored vectors of pending memories; make reading them fail.
    monkeypatch.setattr(service.store.memories, "vectors", broken_vectors)

    report = service.consolidate(now=LATER)

    assert report.stages["dedupe-pending"].startswith("failed")
    assert "vector table unreadable" in report.stages["dedupe-pending"]
    assert all(report.stages[s] == "1 applied" for s in DETERMINISTIC[1:]), report.stages
    assert service.get(seeded["twin"].id).status is Status.PENDING
    assert service.get(seeded["sure"].id).status is Status.PENDING
    old = service.get(seeded["fact"].id)
    assert old.status is Status.ARCHIVED and old.superseded_by is not None
    assert service.get(old.superseded_by).confidence == pytest.approx(0.8)


def test_a_stage_that_fails_half_way_leaves_nothing_half_done(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = [
        service.remember(text, subject="owner", predicate=predicate, object=value, now=T0).memory
        for text, predicate, value in (
            ("Owner lives in Lisbon", "lives in", "Lisbon"),
            ("Owner works as a luthier", "works as", "luthier"),
        )
    ]
    assert all(facts)
    real_insert = service.store.memories.insert
    calls: list[str] = []

    def insert_then_fail(memory: Memory, vector: Any) -> None:
        calls.append(memory.id)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        real_insert(memory, vector)

    monkeypatch.setattr(service.store.memories, "insert", insert_then_fail)
    report = service.consolidate(now=LATER)

    assert len(calls) == 2  # the first successor was written before the failure
    assert report.stages["decay-semantic"].startswith("failed")
    rows = service.list_memories()
    assert [(m.status, m.confidence, m.superseded_by) for m in rows] == [
        (Status.ACTIVE, 1.0, None)] * 2  # fmt: skip
    assert all(
        e.rule != "decay-semantic" for e in service.store.audit.for_memories([m.id for m in rows])
    )
