"""What a proposal becomes (SPEC §3), through the service object, once per storage backend:
promotion, strict batches, repetition and rejection.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryd.errors import (
    CredentialRefusedError,
    ProposalBatchError,
)
from memoryd.memory.model import Kind, Source, Status
from memoryd.memory.promotion_policy import Outcome
from memoryd.service import MemoryService
from tests.builders import batch, item

from .conftest import Backend
from .memories_support import API_KEY, PRIVATE_KEY, PRIVATE_KEY_BODY, at

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
