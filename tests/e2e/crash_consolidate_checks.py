"""What test_crash_safety.py checks after each kill of a consolidation victim: every seeded
memory wholly before or wholly after its stage, and a later run finishing the job.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memoryd.consolidation.policy import Stage
from memoryd.ids import IdGenerator
from memoryd.memory.model import Actor, AuditEntry, Kind, Memory, Source, Status
from memoryd.service import CONSOLIDATION_LOCK, MemoryService
from tests.crash_child import words

from .crash_checks import Operation, check_integrity
from .crash_harness import EMBEDDER, Store, Tally, Victim

# Consolidation: the parent seeds old memories that fall due one slice per hour of the
# victims' clock (each run moves it an hour), so most runs have work in every deterministic
# stage; a new batch comes when the last one is done.
T0 = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
SLICES = 16  # at first; a batch gets more slices on a backend that finishes one per cycle
TWINS = 8


@dataclass(frozen=True)
class Seeded:
    """A memory the parent seeded and the stage that acts on it."""

    id: str
    role: str  # event, fact, hunch, weak-hunch, guess, twin, original
    cycle: int


class Consolidate(Operation):
    """Every seeded memory wholly before or wholly after its stage, every acknowledged step
    applied, and a later run (taking over the dead run's lease) finishing the job."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.open: list[Seeded] = []
        self.ids = IdGenerator()
        self.settled = 0
        self.batches = 0
        self.clock = T0  # the "now" of the next run: a killed run is run again
        self.slices = SLICES
        self.seeded_in = 0

    def params(self, cycle: int) -> dict[str, Any]:
        if not self.open:
            # Victims should die mid-batch: a batch done within a cycle gets twice the slices.
            if self.batches and cycle - self.seeded_in <= 1:
                self.slices = min(self.slices * 2, 8 * SLICES)
            elif cycle - self.seeded_in >= 4:
                self.slices = max(self.slices // 2, SLICES // 2)
            with self.store.session() as service:
                self._seed(service, self.clock, cycle)
            self.batches += 1
            self.seeded_in = cycle
        return {**super().params(cycle), "start": self.clock.isoformat(), "step_seconds": 3600}

    def _seed(self, service: MemoryService, base: datetime, cycle: int) -> None:
        rng = random.Random(cycle)
        rows: list[tuple[Memory, str]] = []

        def due(index: int, age: timedelta) -> datetime:
            return base + timedelta(hours=index % self.slices) - age - timedelta(minutes=1)

        def new(kind: Kind, status: Status, at: datetime, confidence: float, text: str) -> Memory:
            return Memory(
                id=self.ids.new_id(at),
                kind=kind,
                status=status,
                content=f"{text} {' '.join(words(rng, 6))} (cycle {cycle})",
                source=Source.TURN,
                created_at=at,
                last_confirmed_at=at,
                confidence=confidence,
                occurred_at=at if kind is Kind.EVENT else None,
            )

        for i in range(2 * self.slices):
            rows.append((new(Kind.EVENT, Status.ACTIVE, due(i, timedelta(days=180)), 0.9,
                             "crash event"), "event"))  # fmt: skip
            rows.append((new(Kind.FACT, Status.ACTIVE, due(i, timedelta(days=365)), 0.9,
                             "crash fact"), "fact"))  # fmt: skip
            weak = i % 2 == 0
            rows.append((new(Kind.INFERENCE, Status.ACTIVE, due(i, timedelta(days=90)),
                             0.5 if weak else 0.8, "crash hunch"),
                         "weak-hunch" if weak else "hunch"))  # fmt: skip
            rows.append((new(Kind.FACT, Status.PENDING, due(i, timedelta(days=60)), 0.3,
                             "crash guess"), "guess"))  # fmt: skip
        for _ in range(TWINS):
            original = new(Kind.FACT, Status.PENDING, base - timedelta(days=10), 0.9, "crash twin")
            later = base - timedelta(days=9)
            twin = replace(original, id=self.ids.new_id(later), created_at=later)
            rows += [(original, "original"), (twin, "twin")]
        vectors = EMBEDDER.embed([m.content for m, _ in rows])
        with service.store.transaction():
            for (memory, _), vector in zip(rows, vectors, strict=True):
                service.store.memories.insert(memory, vector)
                service.store.audit.append(
                    AuditEntry(memory.id, memory.created_at, Actor.POLICY, "create", None,
                               memory.status, "seeded by the crash harness")
                )  # fmt: skip
        self.open += [Seeded(m.id, role, cycle) for m, role in rows]

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        tried = victim.of("TRY")
        if tried:
            self.clock = datetime.fromisoformat(tried[-1]["now"])
        states = self._states(service)
        for ack in victim.of("ACK"):
            for memory_id, action, stage in ack["steps"]:
                self.tally.acked += 1
                assert states.get(memory_id, "after") == "after", (memory_id, action, stage)
                memory = service.store.memories.get(memory_id)
                assert memory is not None and memory.status is not Status.ACTIVE, memory
        done = sum(states[s.id] == "after" for s in self.open if s.role != "original")
        total = sum(s.role != "original" for s in self.open)
        if 0 < done < total:
            self.tally.extra["partial states"] = self.tally.extra.get("partial states", 0) + 1
        self._settle(service, states)

    def _states(self, service: MemoryService) -> dict[str, str]:
        """Each open seeded memory: "before" or "after" its stage (asserting it is one)."""
        memories = service.store.memories
        rows = memories.get_many([s.id for s in self.open])
        successors = memories.get_many(
            [m.superseded_by for m in rows.values() if m.superseded_by is not None]
        )
        entries: dict[str, list[AuditEntry]] = defaultdict(list)
        ids = [*rows, *successors]
        for entry in service.store.audit.for_memories(ids):
            entries[entry.memory_id].append(entry)
        stages = {s.value for s in Stage}

        def rules(memory_id: str) -> list[str]:
            return [e.rule for e in entries[memory_id] if e.rule in stages]

        states: dict[str, str] = {}
        for seeded in self.open:
            memory = rows[seeded.id]
            before = rules(seeded.id) == [] and memory.superseded_by is None
            if seeded.role == "event":
                after = memory.status is Status.ARCHIVED and rules(memory.id) == [
                    "archive-episodic"
                ]
                before = before and memory.status is Status.ACTIVE
            elif seeded.role in ("fact", "hunch"):
                stage, factor = (
                    ("decay-semantic", 0.8) if seeded.role == "fact" else ("decay-inferences", 0.5)
                )
                new = successors.get(memory.superseded_by or "")
                after = (
                    memory.status is Status.ARCHIVED
                    and rules(memory.id) == [stage]
                    and new is not None
                    and new.status is Status.ACTIVE
                    and new.supersedes == memory.id
                    and new.content == memory.content
                    and abs(new.confidence - round(memory.confidence * factor, 6)) < 1e-6
                    and rules(new.id) == [stage]
                )
                before = before and memory.status is Status.ACTIVE
            elif seeded.role == "weak-hunch":
                after = memory.status is Status.ARCHIVED and rules(memory.id) == [
                    "decay-inferences"
                ]
                after = after and memory.superseded_by is None
                before = before and memory.status is Status.ACTIVE
            elif seeded.role == "guess":
                after = memory.status is Status.ARCHIVED and rules(memory.id) == ["demote-pending"]
                before = before and memory.status is Status.PENDING
            elif seeded.role == "twin":
                after = memory.status is Status.REJECTED and rules(memory.id) == ["dedupe-pending"]
                before = before and memory.status is Status.PENDING
            else:  # the older of two twins stays pending
                after = before = memory.status is Status.PENDING and rules(memory.id) == []
            assert before or after, (seeded, memory, entries[memory.id])
            states[seeded.id] = "after" if after and not before else "before"
            if seeded.role == "original":
                states[seeded.id] = "after"
        return states

    def _settle(self, service: MemoryService, states: dict[str, str]) -> None:
        """Stop following cycles whose memories are all after their stage; the owner
        archives the kept twins, so the pending queue stays short."""
        by_cycle: dict[int, list[Seeded]] = defaultdict(list)
        for seeded in self.open:
            by_cycle[seeded.cycle].append(seeded)
        for cycle, members in by_cycle.items():
            if all(states[s.id] == "after" for s in members):
                for s in members:
                    if s.role == "original":
                        service.archive(s.id)
                self.open = [s for s in self.open if s.cycle != cycle]
                self.settled += len(members)

    def finish(self) -> None:
        self.store.close()
        with closing(self.store.open()) as service:
            # At once, as after a reboot: the dead run's lease is taken over.
            service.consolidate(now=self.clock + timedelta(days=30))
            check_integrity(service, self.tally)
            states = self._states(service)
            assert set(states.values()) <= {"after"}, Counter(states.values())
            assert service.store.lock_holder(CONSOLIDATION_LOCK) is None
            self._settle(service, states)
            assert self.open == []
            self.tally.extra["seeded"] = self.settled
            self.tally.extra["batches"] = self.batches
