"""Every field of a memory, a job and an audit entry comes back from the store as it went in,
on both backends: unicode text, None in every optional field, times given in any zone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from memoryd.jobs.model import Job, JobStatus
from memoryd.memory.model import (
    Actor,
    AuditEntry,
    Importance,
    Kind,
    Memory,
    Source,
    Status,
    fact_slot,
)
from memoryd.service import MemoryService

KOLKATA = timezone(timedelta(hours=5, minutes=30))
BEFORE_UTC = timezone(timedelta(hours=-7))
AT = datetime(2026, 3, 14, 9, 26, 53, 589793, tzinfo=KOLKATA)


def _full_memory() -> Memory:
    return Memory(
        id="mem_01_full",
        kind=Kind.FACT,
        status=Status.ACTIVE,
        content="Zoë prefers 日本語 docs — and “smart quotes”",
        source=Source.TURN,
        created_at=AT,
        last_confirmed_at=AT + timedelta(days=1),
        confidence=0.875,
        subject="Zoë",
        predicate="prefers",
        object="日本語 docs",
        slot=fact_slot("Zoë", "prefers"),
        entities=("Zoë", "Ōsaka"),
        cues=("reading material", "language, 本"),
        importance=Importance.CRITICAL,
        changes_behavior=True,
        occurred_at=datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=BEFORE_UTC),
        source_ref="turn:ü-42",
        extractor_model="model-é",
        prompt_version="extract-v9",
        last_retrieved_at=AT + timedelta(hours=3),
        retrieval_hits=7,
    )


def _bare_memory() -> Memory:
    return Memory(
        id="mem_02_bare",
        kind=Kind.LESSON,
        status=Status.PENDING,
        content="",
        source=Source.REMEMBER,
        created_at=AT,
        last_confirmed_at=AT,
    )


def test_every_memory_field_round_trips_on_every_read_path(service: MemoryService) -> None:
    store = service.store
    full, bare = _full_memory(), _bare_memory()
    with store.transaction():
        store.memories.insert(full, None)
        store.memories.insert(bare, None)
    assert store.memories.get(full.id) == full
    assert store.memories.get(bare.id) == bare
    assert store.memories.get_many([full.id, bare.id, "mem_missing"]) == {
        full.id: full,
        bare.id: bare,
    }
    assert store.memories.query(newest_first=False) == [full, bare]
    assert store.memories.in_slot(full.slot or "", Status.ACTIVE) == [full]
    read = store.memories.get(full.id)
    assert read is not None and read.created_at.utcoffset() == timedelta(0)


def test_supersede_links_and_purge_keep_every_other_field(service: MemoryService) -> None:
    store = service.store
    old, new = _full_memory(), _bare_memory()
    with store.transaction():
        store.memories.insert(old, None)
        store.memories.insert(new, None)
        store.memories.link_supersede(old.id, new.id)
        store.memories.purge(old.id, AT + timedelta(days=2))
    purged = store.memories.get(old.id)
    assert purged is not None
    assert (purged.content, purged.subject, purged.entities, purged.source_ref) == (
        "",
        None,
        (),
        None,
    )
    assert purged.purged_at == AT + timedelta(days=2)
    assert purged.superseded_by == new.id
    assert (purged.created_at, purged.importance, purged.retrieval_hits) == (
        old.created_at,
        old.importance,
        old.retrieval_hits,
    )
    linked = store.memories.get(new.id)
    assert linked is not None and linked.supersedes == old.id


def test_a_job_and_its_result_round_trip(service: MemoryService) -> None:
    store = service.store
    job = Job(
        id="job_01",
        kind="extract",
        payload={"turns": [{"role": "user", "text": "Grüße aus Köln 👋"}], "n": 2, "x": None},
        status=JobStatus.QUEUED,
        attempts=0,
        next_attempt_at=AT,
        created_at=AT - timedelta(minutes=1),
    )
    with store.transaction():
        store.jobs.enqueue(job)
    assert store.jobs.get(job.id) == job
    now = AT + timedelta(minutes=5)
    with store.transaction():
        claimed = store.jobs.claim(["extract"], now, lease_seconds=60)
    assert claimed == Job(**{**job.__dict__, "status": JobStatus.RUNNING, "attempts": 1,
                             "claimed_at": now})  # fmt: skip
    # A claim the database cut off is put back by the worker that made it, uncounted — once.
    later = now + timedelta(seconds=30)
    with store.transaction():
        assert store.jobs.release(job.id, now.astimezone(UTC), later) is True
        assert store.jobs.release(job.id, now, later) is False
    assert store.jobs.get(job.id) == Job(**{**job.__dict__, "next_attempt_at": later})
    with store.transaction():
        claimed = store.jobs.claim(["extract"], later, lease_seconds=60)
    assert claimed is not None and claimed.attempts == 1
    with store.transaction():
        store.jobs.finish(job.id, {"stored": ["mem_ü"], "empty": {}}, now)
        # The cut commit had landed: the job ended, and stays ended.
        assert store.jobs.release(job.id, later, later) is False
    done = store.jobs.get(job.id)
    assert done is not None
    assert (done.status, done.payload, done.result, done.finished_at) == (
        JobStatus.DONE,
        {},
        {"stored": ["mem_ü"], "empty": {}},
        now,
    )


def test_audit_entries_come_back_whole_and_in_write_order(service: MemoryService) -> None:
    store = service.store
    memory = _bare_memory()
    entries = [
        AuditEntry(
            memory_id=memory.id,
            at=AT + timedelta(seconds=i),
            actor=actor,
            action=action,
            from_status=from_status,
            to_status=to_status,
            reason=reason,
            rule=rule,
        )
        for i, (actor, action, from_status, to_status, reason, rule) in enumerate(
            [
                (Actor.TOOL, "create", None, Status.PENDING, "gesagt: „ja“", None),
                (Actor.POLICY, "promote", Status.PENDING, Status.ACTIVE, "", "rule-ü"),
                (Actor.OWNER, "archive", Status.ACTIVE, Status.ARCHIVED, "退役", None),
            ]
        )
    ]
    with store.transaction():
        store.memories.insert(memory, None)
        for entry in entries:
            store.audit.append(entry)
    assert store.audit.for_memories([memory.id, "mem_missing"]) == entries
    assert all(entry.at.tzinfo is not None for entry in store.audit.for_memories([memory.id]))


def test_leases_and_settings_hold_times_in_any_zone(service: MemoryService) -> None:
    store = service.store
    start = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
    with store.transaction():
        assert store.try_lock("consolidation", "a", start, lease_seconds=60)
        # The same instant written from another zone is still inside a's lease.
        assert not store.try_lock("consolidation", "b", start.astimezone(BEFORE_UTC), 60)
        assert store.try_lock(
            "consolidation", "b", start.astimezone(KOLKATA) + timedelta(seconds=61), 60
        )
    assert store.lock_holder("consolidation") == "b"
    store.set_meta("note", "ünïcödé")
    assert store.get_meta("note") == "ünïcödé"
    assert store.meta_items()["note"] == "ünïcödé"


def test_a_job_given_up_on_keeps_its_payload_when_asked_and_can_be_queued_again(
    service: MemoryService,
) -> None:
    store = service.store
    kept = Job("job_kept", "extract", {"turns": ["Grüße"]}, JobStatus.QUEUED, 0, AT, AT)
    dropped = Job("job_dropped", "extract", {"turns": ["secret"]}, JobStatus.QUEUED, 0, AT, AT)
    later = AT + timedelta(hours=1)
    with store.transaction():
        store.jobs.enqueue(kept)
        store.jobs.enqueue(dropped)
        store.jobs.claim(["extract"], AT, lease_seconds=60)
        store.jobs.claim(["extract"], AT, lease_seconds=60)
        store.jobs.fail(kept.id, "cannot reach the model", AT, keep_payload=True)
        store.jobs.fail(dropped.id, "broken answer", AT)
    assert store.jobs.get(kept.id).payload == {"turns": ["Grüße"]}  # type: ignore[union-attr]
    assert store.jobs.get(dropped.id).payload == {}  # type: ignore[union-attr]

    with store.transaction():
        assert store.jobs.requeue(kept.id, later) is True
    again = store.jobs.get(kept.id)
    assert again is not None
    assert (again.status, again.attempts, again.next_attempt_at, again.claimed_at) == (
        JobStatus.QUEUED, 0, later, None,
    )  # fmt: skip
    assert again.finished_at is None and again.last_error == "cannot reach the model"
    with store.transaction():
        claimed = store.jobs.claim(["extract"], later, lease_seconds=60)
        assert claimed is not None and claimed.id == kept.id
        assert store.jobs.requeue(kept.id, later) is False  # running: not queued twice


def test_event_times_are_the_events_rows_in_their_order_ties_included(
    service: MemoryService,
) -> None:
    store = service.store
    times = [AT - timedelta(hours=h % 5) for h in range(12)]  # every time held by 2–3 events
    events = [
        replace(
            _bare_memory(),
            id=f"mem_ev_{i:02d}",
            kind=Kind.EVENT,
            status=Status.ACTIVE if i != 5 else Status.ARCHIVED,
            content=f"event {i}",
            occurred_at=at,
        )
        for i, at in enumerate(times)
    ]
    with store.transaction():
        for memory in events:
            store.memories.insert(memory, None)
    start, end = AT - timedelta(hours=3, minutes=30), AT + timedelta(minutes=1)
    for limit in (1, 4, 7, 50):
        rows = store.memories.events_between(start, end, limit)
        assert store.memories.event_times_between(start, end, limit) == [
            (m.id, m.occurred_at) for m in rows
        ]
    assert len(store.memories.event_times_between(start, end, 50)) == 9
