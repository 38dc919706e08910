"""A simulated year of daily use with consolidation every night, checked against the rules.

The expected state is computed here from SPEC §5 and ConsolidationPolicy's defaults (180 idle
days for events, 365 unconfirmed days and × 0.8 for facts, halving per 90 days and archiving
under 0.3 for inferences, 60 days for low-confidence pending items), never by calling the
plan functions, so a wrong plan cannot agree with itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.memory.model import Importance, Kind, Memory, Source, Status
from memoryd.memory.promotion_policy import Outcome
from memoryd.service import MemoryService
from tests.builders import item
from tests.distinct_texts import (
    CachingEmbedder,
    distinct,
    event_candidates,
    guess_candidates,
    inference_candidates,
)

START = datetime(2025, 1, 6, tzinfo=UTC)
DAYS = 400  # a year and a month: facts from the first weeks cross the 365-day line
STAGES = {"dedupe-pending", "archive-episodic", "decay-semantic", "decay-inferences",
          "demote-pending"}  # fmt: skip
FACT_TOPICS = (
    "tea", "city", "author", "film", "number", "season", "composer", "painter", "bird",
    "cheese", "poet", "river", "mountain", "dessert", "font", "chess opening", "tree", "planet",
    "cocktail", "museum", "typeface", "beach",
)  # fmt: skip
FACT_VALUES = (
    "sencha", "Lisbon", "Saramago", "Stalker", "seven", "autumn", "Satie", "Vermeer", "heron",
    "Serra da Estrela", "Pessoa", "Douro", "Fuji", "pastel de nata", "Garamond", "the Sicilian",
    "cork oak", "Saturn", "negroni", "the Gulbenkian", "Futura", "Comporta",
)  # fmt: skip
INFERENCE_CONFIDENCES = (0.9, 0.8, 0.5, 0.7)


def nightly(day: int) -> datetime:
    """When consolidation runs: 03:00 each day, before the day's conversations."""
    return START + timedelta(days=day, hours=3)


def daytime(day: int, minute: int = 0) -> datetime:
    """When the day's writes happen."""
    return START + timedelta(days=day, hours=9, minutes=minute)


@dataclass
class Expected:
    """One memory as the rules say it should evolve: its current row's numbers and every
    consolidation step that should have touched it (at, stage, audit action)."""

    id: str
    kind: Kind
    content: str
    confidence: float
    status: Status
    created: datetime
    confirmed: datetime
    steps: list[tuple[datetime, str, str]] = field(default_factory=list)
    row_confidences: list[float] = field(default_factory=list)

    def supersede(self, at: datetime, stage: str, confidence: float) -> None:
        self.steps += [(at, stage, "supersede"), (at, stage, "create")]
        self.confidence = confidence
        self.created = at
        self.row_confidences.append(confidence)

    def archive(self, at: datetime, stage: str) -> None:
        self.steps.append((at, stage, "archive"))
        self.status = Status.ARCHIVED


def expect_night(memories: list[Expected], at: datetime) -> None:
    """Advance the expectation by one nightly run, straight from SPEC §5."""
    for m in memories:
        if m.status is Status.PENDING:
            if m.confidence < 0.5 and at - m.created > timedelta(days=60):
                m.archive(at, "demote-pending")
            continue
        if m.status is not Status.ACTIVE:
            continue
        if m.kind is Kind.EVENT and at - m.created > timedelta(days=180):
            m.archive(at, "archive-episodic")
        elif m.kind is Kind.FACT and at - max(m.created, m.confirmed) > timedelta(days=365):
            m.supersede(at, "decay-semantic", m.confidence * 0.8)
        elif m.kind is Kind.INFERENCE:
            halvings = math.floor((at - max(m.created, m.confirmed)) / timedelta(days=90))
            if halvings >= 1:
                lowered = m.confidence * 0.5**halvings
                if lowered < 0.3:
                    m.archive(at, "decay-inferences")
                else:
                    m.supersede(at, "decay-inferences", lowered)


def test_a_year_of_nightly_consolidation_leaves_every_memory_where_the_rules_say(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = CachingEmbedder(service.embedder)
    service.use_embedder(embedder)
    events = distinct(event_candidates(), 2 * DAYS, embedder, 0.92)
    guesses = distinct(guess_candidates(), DAYS // 5 + 4, embedder, 0.92)
    inferences = distinct(inference_candidates(), DAYS // 7 + 1, embedder, 0.92)
    expected: list[Expected] = []
    facts: dict[str, tuple[Expected, int, str, int]] = {}  # id → (expected, mode, topic, day)
    reconfirmed_inferences: list[Expected] = []
    lessons: list[Memory] = []

    def track(memory: Memory | None, status: Status) -> Expected:
        assert memory is not None and memory.status is status, memory
        record = Expected(memory.id, memory.kind, memory.content, memory.confidence, status,
                          memory.created_at, memory.last_confirmed_at,
                          row_confidences=[memory.confidence])  # fmt: skip
        expected.append(record)
        return record

    for day in range(DAYS):
        at = nightly(day)
        expect_night(expected, at)
        report = service.consolidate(now=at)
        assert all(state.endswith("applied") for name, state in report.stages.items()
                   if name in STAGES), report.stages  # fmt: skip

        for n in range(2):
            text = events[2 * day + n]
            result = service.remember(text, kind=Kind.EVENT, occurred_at=daytime(day, n) -
                                      timedelta(hours=2), now=daytime(day, n))  # fmt: skip
            assert result.outcome is Outcome.ACTIVATED, (text, result.reason)
            track(result.memory, Status.ACTIVE)

        # Facts: one every other day for a month, then one every 20 days. Mode 0 is never
        # repeated, 1 is repeated every 90 days, 2 once after 20 days, 3 is repeated by the
        # owner two days after it shows up in the reconfirmation queue.
        if (day <= 30 and day % 2 == 0) or (day > 30 and day % 20 == 0 and day <= 120):
            j = len(facts)
            topic, value = FACT_TOPICS[j], FACT_VALUES[j]
            result = service.remember(f"The owner's favourite {topic} is {value}",
                                      subject="owner", predicate=f"favourite {topic}",
                                      object=value, now=daytime(day, 5))  # fmt: skip
            assert result.outcome is Outcome.ACTIVATED, result.reason
            record = track(result.memory, Status.ACTIVE)
            facts[record.id] = (record, j % 4, topic, day)
        for record, mode, topic, born in facts.values():
            repeat = (
                (mode == 1 and day > born and (day - born) % 90 == 0)
                or (mode == 2 and day - born == 20)
                or (mode == 3 and record.steps and (daytime(day) - record.steps[-1][0]).days == 2)
            )
            if repeat:
                result = service.remember(record.content, subject="owner",
                                          predicate=f"favourite {topic}",
                                          object=FACT_VALUES[FACT_TOPICS.index(topic)],
                                          now=daytime(day, 6))  # fmt: skip
                assert result.outcome is Outcome.REINFORCED, result.reason
                record.confirmed = daytime(day, 6)

        if day % 5 == 1 or day % 200 == 25:
            confidence = 0.6 if day % 200 == 25 else 0.3 + (day % 3) * 0.05
            [result] = service.propose(
                {"memories": [item(guesses.pop(), kind="fact", confidence=confidence)]},
                source=Source.TURN, now=daytime(day, 10),
            )  # fmt: skip
            track(result.memory, Status.PENDING)

        if day % 7 == 3:
            k = day // 7
            confidence = INFERENCE_CONFIDENCES[k % len(INFERENCE_CONFIDENCES)]
            [result] = service.propose(
                {"memories": [item(inferences[k], kind="inference", confidence=confidence)]},
                source=Source.TURN, now=daytime(day, 20),
            )  # fmt: skip
            record = track(result.memory, Status.PENDING)
            service.confirm(record.id, now=daytime(day, 21))
            record.status = Status.ACTIVE
            if k % 3 == 0:
                reconfirmed_inferences.append(record)
        for record in reconfirmed_inferences:
            if (daytime(day) - record.created).days % 60 == 59:
                service.reconfirm(record.id, now=daytime(day, 30))
                record.confirmed = daytime(day, 30)

        if day in (0, 200):
            importance = Importance.HIGH if day == 0 else Importance.CRITICAL
            text = ("Send files with the file marker, not base64" if day == 0
                    else "Never book a flight without asking the owner first")  # fmt: skip
            result = service.remember(text, kind=Kind.LESSON, importance=importance,
                                      now=daytime(day, 40))  # fmt: skip
            assert result.memory is not None and result.memory.status is Status.ACTIVE
            lessons.append(result.memory)

    # Every memory ends where the rules put it, reached through exactly the predicted steps.
    stored = {m.id: m for m in service.list_memories()}
    seen: set[str] = set()
    for record in expected:
        chain = [stored[record.id]]
        while chain[-1].superseded_by is not None:
            chain.append(stored[chain[-1].superseded_by])
        seen.update(m.id for m in chain)
        final = chain[-1]
        assert final.status is record.status, (record.content, final.status, record.steps)
        assert [m.content for m in chain] == [record.content] * len(chain)
        assert [m.confidence for m in chain] == pytest.approx(record.row_confidences, abs=1e-6)
        assert all(m.status is Status.ARCHIVED for m in chain[:-1])
        audit = service.store.audit.for_memories([m.id for m in chain])
        steps = sorted((e.at, e.rule, e.action) for e in audit if e.rule in STAGES)
        assert steps == sorted(record.steps), record.content
    lesson_ids = {m.id for m in lessons}
    assert set(stored) == seen | lesson_ids, "consolidation created rows nobody predicted"

    # Every kind of change happened at least once, so the checks above were not vacuous.
    happened = {step[1] for record in expected for step in record.steps}
    assert happened == STAGES - {"dedupe-pending"}
    decayed_facts = [r for r in expected if r.kind is Kind.FACT and r.steps]
    assert decayed_facts and any(r.kind is Kind.FACT and not r.steps for r in expected)

    # Lessons are never touched: still active, same row, only their creation in the audit.
    for lesson in lessons:
        now_row = stored[lesson.id]
        assert (now_row.status, now_row.confidence, now_row.superseded_by) == (
            Status.ACTIVE, lesson.confidence, None)  # fmt: skip
        assert [e.action for e in service.store.audit.for_memories([lesson.id])] == ["create"]

    # The owner is asked about exactly the decayed facts nobody repeated since the decay.
    waiting = {record.content for record in decayed_facts if record.confirmed < record.created}
    assert waiting and {m.content for m in service.reconfirmation_queue()} == waiting

    # Running the last night again changes nothing.
    before = _snapshot(service)
    again = service.consolidate(now=nightly(DAYS - 1))
    assert again.steps == ()
    assert _snapshot(service) == before


def _snapshot(service: MemoryService) -> list[tuple[object, ...]]:
    return [
        (m.id, m.status, m.confidence, m.content, m.superseded_by, m.last_confirmed_at)
        for m in service.list_memories()
    ]
