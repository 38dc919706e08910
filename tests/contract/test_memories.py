"""The memory contract (SPEC §1-3), through the service object, once per storage backend."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memoryd.errors import (
    CredentialRefusedError,
    InvalidOperationError,
    MemoryNotFoundError,
    ProposalBatchError,
)
from memoryd.model import Kind, Memory, Source, Status
from memoryd.promotion import Outcome
from memoryd.service import MemoryService
from tests.builders import batch, item

from .conftest import Backend

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

API_KEY = "sk-proj-Q7vXr2Lm9TzK4pWn8YbC3dHs6FjG1aEu"
PRIVATE_KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    f"{PRIVATE_KEY_BODY}\n"
    "QyNTUxOQAAACD3kq9ZrWm4xVt8LpHc2sN6yBd0uFe1gJ5aTo7iKvRlXw==\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def at(minutes: int) -> datetime:
    """A fixed instant, ``minutes`` after T0: no test depends on the wall clock."""
    return T0 + timedelta(minutes=minutes)


def lives_in(service: MemoryService, city: str, minutes: int) -> Memory:
    result = service.remember(
        f"Owner lives in {city}",
        subject="owner",
        predicate="lives in",
        object=city,
        now=at(minutes),
    )
    assert result.memory is not None
    return result.memory


def by_id(service: MemoryService) -> dict[str, Memory]:
    return {memory.id: memory for memory in service.list_memories()}


# ------------------------------------------------------------------ supersede


def test_a_new_fact_value_supersedes_the_old_one(service: MemoryService) -> None:
    bali = lives_in(service, "Bali", 0)
    lisbon = lives_in(service, "Lisbon", 10)

    rows = by_id(service)
    assert len(rows) == 2
    assert rows[lisbon.id].status is Status.ACTIVE
    assert rows[lisbon.id].supersedes == bali.id
    assert rows[bali.id].status is Status.ARCHIVED
    assert rows[bali.id].superseded_by == lisbon.id
    assert [m.content for m in service.list_memories(status=Status.ACTIVE)] == [
        "Owner lives in Lisbon"
    ]

    for viewpoint in (bali.id, lisbon.id):
        shown = service.show(viewpoint)
        assert shown.memory.id == viewpoint
        assert [m.id for m in shown.chain] == [bali.id, lisbon.id]
        assert [(a.memory_id, a.from_status, a.to_status, a.at) for a in shown.audit] == [
            (bali.id, None, Status.ACTIVE, at(0)),
            (bali.id, Status.ACTIVE, Status.ARCHIVED, at(10)),
            (lisbon.id, None, Status.ACTIVE, at(10)),
        ]


def test_remembering_the_same_fact_value_reinforces_it(service: MemoryService) -> None:
    first = lives_in(service, "Lisbon", 0)
    again = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="lisbon", now=at(60)
    )

    assert again.outcome is Outcome.REINFORCED
    assert again.memory is not None and again.memory.id == first.id
    assert [m.id for m in service.list_memories()] == [first.id]
    assert service.get(first.id).last_confirmed_at == at(60)
    assert service.get(first.id).created_at == at(0)


def test_confirming_a_pending_fact_supersedes_the_slot_holder(service: MemoryService) -> None:
    bali = lives_in(service, "Bali", 0)
    [proposed] = service.propose(
        batch(
            item(
                "Owner lives in Lisbon",
                kind="fact",
                subject="owner",
                predicate="lives in",
                object="Lisbon",
            )
        ),
        source=Source.TURN,
        now=at(5),
    )
    assert proposed.outcome is Outcome.PENDING
    assert proposed.memory is not None
    [queued] = service.review_queue()
    assert queued.pending.id == proposed.memory.id
    assert queued.would_supersede is not None and queued.would_supersede.id == bali.id
    assert service.get(bali.id).status is Status.ACTIVE, "a pending fact must not displace"

    confirmed = service.confirm(proposed.memory.id, now=at(10))

    assert confirmed.status is Status.ACTIVE
    assert confirmed.supersedes == bali.id
    old = service.get(bali.id)
    assert old.status is Status.ARCHIVED
    assert old.superseded_by == confirmed.id
    assert service.review_queue() == []


def test_editing_supersedes_with_a_new_active_row(service: MemoryService) -> None:
    original = lives_in(service, "Lisbon", 0)

    edited = service.edit(original.id, "Owner lives in Porto", object="Porto", now=at(5))

    assert edited.id != original.id
    assert edited.status is Status.ACTIVE
    assert edited.content == "Owner lives in Porto"
    assert edited.supersedes == original.id
    old = service.get(original.id)
    assert old.status is Status.ARCHIVED
    assert old.content == "Owner lives in Lisbon", "the old row is kept, not edited in place"
    assert old.superseded_by == edited.id
    assert [m.id for m in service.show(original.id).chain] == [original.id, edited.id]


def test_editing_a_pending_fact_links_the_fact_it_replaces(service: MemoryService) -> None:
    bali = lives_in(service, "Bali", 0)
    [proposed] = service.propose(
        batch(
            item(
                "Owner lives in Lisbon",
                kind="fact",
                subject="owner",
                predicate="lives in",
                object="Lisbon",
            )
        ),
        source=Source.TURN,
        now=at(5),
    )
    assert proposed.memory is not None

    edited = service.edit(proposed.memory.id, "Owner lives in Porto", object="Porto", now=at(10))

    assert [m.id for m in service.list_memories(status=Status.ACTIVE)] == [edited.id]
    replaced = service.get(bali.id)
    assert replaced.status is Status.ARCHIVED
    # SPEC §2: superseded rows are archived *with superseded_by set*.
    assert replaced.superseded_by == edited.id


def test_archive_retires_a_memory(service: MemoryService) -> None:
    memory = lives_in(service, "Lisbon", 0)

    archived = service.archive(memory.id, now=at(1))

    assert archived.status is Status.ARCHIVED
    assert service.list_memories(status=Status.ACTIVE) == []
    assert service.show(memory.id).audit[-1].to_status is Status.ARCHIVED


def test_purge_erases_the_text_but_keeps_a_tombstone(
    backend: Backend, service: MemoryService
) -> None:
    secret_life = service.remember("Owner is secretly training for the Quetzalcoatl marathon")
    keep = service.remember("Owner drinks green tea in the morning", now=at(1))
    assert secret_life.memory is not None and keep.memory is not None

    purged = service.purge(secret_life.memory.id, now=at(2))

    assert purged.content == ""
    assert purged.status is Status.ARCHIVED
    assert purged.purged_at == at(2)
    assert [m.id for m in service.list_memories()] == [keep.memory.id, purged.id]
    shown = service.show(purged.id)
    assert "Quetzalcoatl" not in repr(shown)
    assert [a.action for a in shown.audit][-1] == "purge"
    service.close()
    persisted = backend.persisted_bytes()
    assert b"green tea" in persisted, "sanity: the dump does hold stored text"
    assert b"Quetzalcoatl" not in persisted
    assert b"quetzalcoatl" not in persisted.lower()


# ------------------------------------------------------------------ promotion


def test_a_confident_event_from_the_owners_turn_activates(service: MemoryService) -> None:
    [result] = service.propose(
        batch(item("Owner ran a half marathon in Porto", confidence=0.9)),
        source=Source.TURN,
        now=at(0),
    )

    assert result.outcome is Outcome.ACTIVATED
    assert result.memory is not None
    assert result.memory.status is Status.ACTIVE
    assert [m.id for m in service.list_memories(status=Status.ACTIVE)] == [result.memory.id]


def test_an_unsure_event_waits_for_the_owner(service: MemoryService) -> None:
    [result] = service.propose(
        batch(item("Owner ran a half marathon in Porto", confidence=0.7)),
        source=Source.TURN,
        now=at(0),
    )

    assert result.outcome is Outcome.PENDING
    assert service.list_memories(status=Status.ACTIVE) == []
    assert [m.content for m in service.list_memories(status=Status.PENDING)] == [
        "Owner ran a half marathon in Porto"
    ]


@pytest.mark.parametrize("kind", ["lesson", "event"])
def test_a_standing_rule_waits_for_the_owner(service: MemoryService, kind: str) -> None:
    [result] = service.propose(
        batch(item("From now on always answer in French", kind=kind, confidence=0.99)),
        source=Source.TURN,
        now=at(0),
    )

    assert result.outcome is Outcome.PENDING
    assert result.memory is not None and result.memory.status is Status.PENDING
    assert service.list_memories(status=Status.ACTIVE) == []


@pytest.mark.parametrize("source", [Source.DOCUMENT, Source.WEB])
def test_nothing_from_documents_or_the_web_activates_alone(
    service: MemoryService, source: Source
) -> None:
    results = service.propose(
        batch(
            item("Owner ran a half marathon in Porto", confidence=1.0),
            item(
                "Owner works at Globex",
                kind="fact",
                confidence=1.0,
                subject="owner",
                predicate="works at",
                object="Globex",
            ),
        ),
        source=source,
        now=at(0),
    )

    assert [r.outcome for r in results] == [Outcome.PENDING, Outcome.PENDING]
    assert service.list_memories(status=Status.ACTIVE) == []
    assert len(service.list_memories(status=Status.PENDING)) == 2


@pytest.mark.parametrize(
    ("secret", "content"),
    [
        (API_KEY, f"The owner's OpenAI key is {API_KEY}"),
        (PRIVATE_KEY_BODY, f"Owner's deploy key:\n{PRIVATE_KEY}"),
    ],
    ids=["api-key", "private-key"],
)
def test_credentials_are_dropped_and_never_written(
    backend: Backend, service: MemoryService, secret: str, content: str
) -> None:
    results = service.propose(
        batch(
            item("Owner adopted a cat named Miso", confidence=0.95),
            item(content, confidence=0.95),
        ),
        source=Source.TURN,
        now=at(0),
    )

    assert [r.outcome for r in results] == [Outcome.ACTIVATED, Outcome.DROPPED]
    assert results[1].memory is None
    assert [m.content for m in service.list_memories()] == ["Owner adopted a cat named Miso"]
    with pytest.raises(CredentialRefusedError):
        service.remember(content, now=at(1))
    assert len(service.list_memories()) == 1
    assert secret not in json.dumps([m.to_json() for m in service.list_memories()])
    service.close()
    persisted = backend.persisted_bytes()
    assert b"adopted a cat named Miso" in persisted, "sanity: the dump does hold stored text"
    assert secret.encode() not in persisted


# ------------------------------------------------------------- strict batches


@pytest.mark.parametrize(
    ("bad_item", "index", "field"),
    [
        ({**item("Owner visited Kyoto"), "mood": "happy"}, 1, "mood"),
        (item("Owner visited Kyoto", kind="opinion"), 1, "kind"),
        (item("Always greet in Greek", kind="lesson", importance="urgent"), 1, "importance"),
        (
            {k: v for k, v in item("Owner visited Kyoto").items() if k != "changes_behavior"},
            1,
            "changes_behavior",
        ),
    ],
    ids=["unknown-field", "bad-kind", "bad-importance", "missing-changes_behavior"],
)
def test_a_bad_item_rejects_the_whole_batch(
    service: MemoryService, bad_item: dict[str, Any], index: int, field: str
) -> None:
    good = item("Owner adopted a cat named Miso", confidence=0.95)
    text = batch(good, bad_item, item("Owner bought a red bicycle"))

    with pytest.raises(ProposalBatchError) as caught:
        service.propose(text, source=Source.TURN, now=at(0))

    assert caught.value.item == index
    assert caught.value.field == field
    message = str(caught.value)
    assert f"item {index}" in message
    assert field in message
    assert service.list_memories() == []


# ------------------------------------------------------ repetition, rejection


def test_a_rejected_memory_stays_rejected(service: MemoryService) -> None:
    [first] = service.propose(
        batch(item("The owner's dentist is Dr. Alvarez", kind="fact", confidence=0.9)),
        source=Source.TURN,
        now=at(0),
    )
    assert first.outcome is Outcome.PENDING and first.memory is not None
    service.reject(first.memory.id, now=at(1))

    [again] = service.propose(
        batch(item("the owner's dentist is Dr Alvarez.", kind="fact", confidence=0.95)),
        source=Source.TURN,
        now=at(2),
    )

    assert again.outcome is Outcome.DROPPED
    assert first.memory.id in again.reason
    assert [(m.id, m.status) for m in service.list_memories()] == [
        (first.memory.id, Status.REJECTED)
    ]


def test_proposing_an_active_memory_again_reinforces_it(service: MemoryService) -> None:
    [first] = service.propose(
        batch(item("Owner ran a half marathon in Porto")), source=Source.TURN, now=at(0)
    )
    assert first.outcome is Outcome.ACTIVATED and first.memory is not None

    [again] = service.propose(
        batch(item("Owner ran a half-marathon in Porto.")), source=Source.TURN, now=at(90)
    )

    assert again.outcome is Outcome.REINFORCED
    assert again.memory is not None and again.memory.id == first.memory.id
    rows = service.list_memories()
    assert [m.id for m in rows] == [first.memory.id]
    assert rows[0].last_confirmed_at == at(90)
    assert rows[0].created_at == at(0)
    assert rows[0].content == "Owner ran a half marathon in Porto"


def test_two_piano_lessons_on_different_days_are_two_memories(service: MemoryService) -> None:
    """A weekly lesson happens every week; told twice on the same day it is one event."""
    monday = datetime(2026, 11, 16, 17, tzinfo=UTC)
    next_monday = monday + timedelta(weeks=1)
    lesson = "Owner had a piano lesson with Mrs. Duarte"

    [first] = service.propose(
        batch(item(lesson, occurred_at=monday.isoformat())), source=Source.TURN, now=monday
    )
    [second] = service.propose(
        batch(item(lesson, occurred_at=next_monday.isoformat())),
        source=Source.TURN,
        now=next_monday,
    )
    [told_again] = service.propose(
        batch(item(lesson + ".", occurred_at=(next_monday + timedelta(hours=2)).isoformat())),
        source=Source.TURN,
        now=next_monday + timedelta(hours=3),
    )
    owner_twice = service.remember(
        lesson, kind=Kind.EVENT, occurred_at=monday + timedelta(weeks=2), now=at(0)
    )

    assert first.outcome is Outcome.ACTIVATED and second.outcome is Outcome.ACTIVATED
    assert first.memory is not None and second.memory is not None
    assert first.memory.id != second.memory.id
    assert told_again.outcome is Outcome.REINFORCED
    assert told_again.memory is not None and told_again.memory.id == second.memory.id
    assert owner_twice.outcome is Outcome.ACTIVATED
    events = [m for m in service.list_memories() if m.kind is Kind.EVENT]
    assert len(events) == 3
    assert sorted(m.occurred_at.date() for m in events if m.occurred_at) == [
        monday.date(),
        next_monday.date(),
        (monday + timedelta(weeks=2)).date(),
    ]


def test_the_same_fact_told_twice_is_one_memory_reinforced(service: MemoryService) -> None:
    first = service.remember("Owner's piano teacher is Mrs. Duarte", now=at(0))
    again = service.remember("Owner's piano teacher is Mrs. Duarte", now=at(60 * 24 * 7))

    assert first.outcome is Outcome.ACTIVATED and again.outcome is Outcome.REINFORCED
    assert first.memory is not None and again.memory is not None
    assert again.memory.id == first.memory.id
    assert [m.id for m in service.list_memories()] == [first.memory.id]
    assert again.memory.last_confirmed_at == at(60 * 24 * 7)


def test_a_pending_near_duplicate_is_not_queued_twice(service: MemoryService) -> None:
    [first] = service.propose(
        batch(item("Owner is allergic to peanuts", kind="fact")), source=Source.TURN, now=at(0)
    )
    [again] = service.propose(
        batch(item("The owner is allergic to peanuts.", kind="fact")),
        source=Source.TURN,
        now=at(1),
    )

    assert first.outcome is Outcome.PENDING
    assert again.outcome is Outcome.DROPPED
    assert len(service.review_queue()) == 1


# ---------------------------------------------------------- owner mistakes


def test_owner_actions_refuse_what_does_not_apply(service: MemoryService) -> None:
    active = lives_in(service, "Lisbon", 0)

    with pytest.raises(InvalidOperationError, match="pending"):
        service.confirm(active.id, now=at(1))
    service.archive(active.id, now=at(2))
    with pytest.raises(InvalidOperationError):
        service.edit(active.id, "Owner lives in Porto", now=at(3))
    with pytest.raises(MemoryNotFoundError, match="01NOSUCHMEMORY"):
        service.reject("01NOSUCHMEMORY", now=at(4))

    [row] = service.list_memories()
    assert (row.id, row.status, row.content) == (active.id, Status.ARCHIVED, active.content)


# ------------------------------------------------------------ state machine

SLOTS = {
    "lives in": ("Owner lives in {}", ("Bali", "Lisbon", "Tokyo")),
    "works at": ("Owner works at {}", ("Acme", "Globex", "Initech")),
    "has a dog named": ("Owner has a dog named {}", ("Rex", "Miso", "Pixel")),
}
EVENTS = (
    "Owner ran a half marathon in Porto",
    "Owner repainted the kitchen yellow",
    "Owner flew to Nairobi for a wedding",
)


class MemoryMachine(RuleBasedStateMachine):
    """Random owner and policy actions; the store's structural promises must always hold."""

    def __init__(self, open_fresh: Any) -> None:
        super().__init__()
        self.service: MemoryService = open_fresh()
        self.ids: list[str] = []
        self.clock = T0

    def _tick(self) -> datetime:
        self.clock += timedelta(minutes=7)
        return self.clock

    def _track(self, memory: Memory | None) -> None:
        if memory is not None and memory.id not in self.ids:
            self.ids.append(memory.id)

    def _pick(self, index: int) -> str:
        return self.ids[index % len(self.ids)]

    @rule(predicate=st.sampled_from(sorted(SLOTS)), choice=st.integers(0, 2))
    def remember_fact(self, predicate: str, choice: int) -> None:
        template, values = SLOTS[predicate]
        value = values[choice]
        result = self.service.remember(
            template.format(value),
            subject="owner",
            predicate=predicate,
            object=value,
            now=self._tick(),
        )
        self._track(result.memory)

    @rule(
        predicate=st.sampled_from(sorted(SLOTS)),
        choice=st.integers(0, 2),
        source=st.sampled_from([Source.TURN, Source.DOCUMENT]),
    )
    def propose_fact(self, predicate: str, choice: int, source: Source) -> None:
        template, values = SLOTS[predicate]
        value = values[choice]
        proposal = item(
            template.format(value),
            kind="fact",
            subject="owner",
            predicate=predicate,
            object=value,
        )
        for result in self.service.propose(batch(proposal), source=source, now=self._tick()):
            self._track(result.memory)

    @rule(
        content=st.sampled_from(EVENTS),
        confidence=st.sampled_from([0.6, 0.9]),
        source=st.sampled_from([Source.TURN, Source.WEB]),
    )
    def propose_event(self, content: str, confidence: float, source: Source) -> None:
        proposal = item(content, confidence=confidence)
        for result in self.service.propose(batch(proposal), source=source, now=self._tick()):
            self._track(result.memory)

    @precondition(lambda self: bool(self.ids))
    @rule(index=st.integers(min_value=0), action=st.sampled_from(["confirm", "reject", "archive"]))
    def owner_status_action(self, index: int, action: str) -> None:
        with contextlib.suppress(InvalidOperationError):
            getattr(self.service, action)(self._pick(index), now=self._tick())

    @precondition(lambda self: bool(self.ids))
    @rule(index=st.integers(min_value=0), predicate=st.sampled_from(sorted(SLOTS)))
    def edit(self, index: int, predicate: str) -> None:
        template, _ = SLOTS[predicate]
        with contextlib.suppress(InvalidOperationError):
            self._track(
                self.service.edit(self._pick(index), template.format("Oslo"), now=self._tick())
            )

    @precondition(lambda self: bool(self.ids))
    @rule(index=st.integers(min_value=0))
    def purge(self, index: int) -> None:
        self.service.purge(self._pick(index), now=self._tick())

    @invariant()
    def one_active_memory_per_fact_slot(self) -> None:
        slots = Counter(
            m.slot for m in self.service.list_memories(status=Status.ACTIVE) if m.slot is not None
        )
        assert all(count == 1 for count in slots.values()), slots

    @invariant()
    def supersede_chains_are_consistent(self) -> None:
        rows = by_id(self.service)
        for memory in rows.values():
            if memory.supersedes is not None:
                older = rows[memory.supersedes]
                assert older.superseded_by == memory.id
                assert older.status is Status.ARCHIVED
            if memory.superseded_by is not None:
                assert memory.superseded_by in rows

    @invariant()
    def every_memory_has_an_audit_trail(self) -> None:
        for memory in self.service.list_memories():
            assert any(a.memory_id == memory.id for a in self.service.show(memory.id).audit)

    @invariant()
    def purged_memories_hold_no_text(self) -> None:
        for memory in self.service.list_memories():
            if memory.purged_at is not None:
                assert memory.content == ""
                assert memory.status in (Status.ARCHIVED, Status.REJECTED)

    @invariant()
    def every_tracked_id_exists(self) -> None:
        assert set(self.ids) <= set(by_id(self.service))

    def teardown(self) -> None:
        self.service.close()


def test_random_histories_keep_the_store_consistent(backend: Backend) -> None:
    run_state_machine_as_test(
        lambda: MemoryMachine(backend.open_fresh),
        settings=settings(
            max_examples=25,
            stateful_step_count=20,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_kinds_accept_their_aliases(service: MemoryService) -> None:
    [result] = service.propose(
        batch(item("Owner repainted the kitchen yellow", kind="episodic")),
        source=Source.TURN,
        now=at(0),
    )

    assert result.memory is not None and result.memory.kind is Kind.EVENT
