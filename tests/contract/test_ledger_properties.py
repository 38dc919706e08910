"""The ledger's invariants hold after every public operation, in any order (SQLite).

Random sequences of remember, propose, confirm, reject, edit, archive, reconfirm, purge, fact
slot supersedes and consolidation; after each step: at most one active memory per fact slot;
every superseded memory names an existing successor and the chain links back; every status
change has exactly one audit entry whose from/to match, and a row retired by a supersede
names its successor; no chain has a cycle.
"""

from __future__ import annotations

import contextlib
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from memoryd.config.settings import resolve_settings
from memoryd.errors import MemorydError
from memoryd.memory.model import Actor, AuditEntry, Kind, Memory, Proposal, Source, Status
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from memoryd.wiring import open_service

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SUBJECTS = ["owner", "Ana"]
PREDICATES = ["lives in", "works at"]
OBJECTS = ["Lisbon", "Porto", "Acme", "Globex", "Berlin"]
FREE_TEXT = [
    "Owner likes green tea in the morning",
    "Owner prefers short meetings",
    "The dentist appointment is on Tuesdays",
    "Ana plays the cello",
    "Owner never drinks coffee after noon",
]
slots = st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(PREDICATES), st.sampled_from(OBJECTS))
picks = st.integers(min_value=0, max_value=1_000)


def statement(subject: str, predicate: str, value: str) -> str:
    """The sentence a fact slot's value is said in."""
    return f"{subject.capitalize()} {predicate} {value}"


def test_the_ledger_invariants_hold_after_every_operation(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    stores = itertools.count()

    class LedgerMachine(RuleBasedStateMachine):
        """Drives one fresh store through public service operations."""

        service: MemoryService

        @initialize()
        def open_store(self) -> None:
            path = tmp_path / f"ledger-{next(stores)}.db"
            self.service = open_service(resolve_settings(str(path), {}), embedder=embedder)
            self.clock = NOW
            self.statuses: dict[str, Status] = {}
            self.audit_seen = 0
            self.audit_before: list[AuditEntry] = []

        def teardown(self) -> None:
            if hasattr(self, "service"):
                self.service.close()

        # -------------------------------------------------------------- helpers

        def tick(self) -> datetime:
            self.clock += timedelta(minutes=7)
            return self.clock

        def pick(self, index: int, *statuses: Status) -> Memory | None:
            memories = [
                m for m in self.service.list_memories() if not statuses or m.status in statuses
            ]
            return memories[index % len(memories)] if memories else None

        def attempt(self, operation: str, memory: Memory | None, **kwargs: object) -> None:
            if memory is None:
                return
            # Refused (wrong status, purged): the invariants must hold all the same.
            with contextlib.suppress(MemorydError):
                getattr(self.service, operation)(memory.id, now=self.tick(), **kwargs)

        # ---------------------------------------------------------------- rules

        @rule(slot=slots, owner=st.booleans())
        def remember_a_slot_value(self, slot: tuple[str, str, str], owner: bool) -> None:
            subject, predicate, value = slot
            self.service.remember(
                statement(subject, predicate, value),
                subject=subject,
                predicate=predicate,
                object=value,
                actor=Actor.OWNER if owner else Actor.TOOL,
                now=self.tick(),
            )

        @rule(text=st.sampled_from(FREE_TEXT), changes_behavior=st.booleans())
        def remember_free_text(self, text: str, changes_behavior: bool) -> None:
            self.service.remember(
                text, changes_behavior=changes_behavior, actor=Actor.TOOL, now=self.tick()
            )

        @rule(
            items=st.lists(
                st.tuples(slots, st.sampled_from([0.5, 0.75, 0.95]), st.booleans()),
                min_size=1,
                max_size=3,
            ),
            source=st.sampled_from([Source.TURN, Source.DOCUMENT, Source.MISSION]),
        )
        def propose_slot_values(
            self, items: list[tuple[tuple[str, str, str], float, bool]], source: Source
        ) -> None:
            proposals = [
                Proposal(
                    kind=Kind.FACT,
                    content=statement(*slot),
                    confidence=confidence,
                    changes_behavior=changes_behavior,
                    subject=slot[0],
                    predicate=slot[1],
                    object=slot[2],
                )
                for slot, confidence, changes_behavior in items
            ]
            self.service.propose(proposals, source=source, now=self.tick())

        @rule(index=picks)
        def confirm(self, index: int) -> None:
            self.attempt("confirm", self.pick(index, Status.PENDING))

        @rule(index=picks)
        def reject(self, index: int) -> None:
            self.attempt("reject", self.pick(index, Status.PENDING, Status.ACTIVE))

        @rule(index=picks)
        def archive(self, index: int) -> None:
            self.attempt("archive", self.pick(index))

        @rule(index=picks)
        def reconfirm(self, index: int) -> None:
            self.attempt("reconfirm", self.pick(index, Status.ACTIVE))

        @rule(index=picks, value=st.sampled_from(OBJECTS))
        def edit(self, index: int, value: str) -> None:
            memory = self.pick(index, Status.PENDING, Status.ACTIVE)
            self.attempt("edit", memory, content=f"Corrected: it is {value} now")

        @rule(index=picks)
        def purge(self, index: int) -> None:
            self.attempt("purge", self.pick(index))

        @rule(days=st.integers(min_value=0, max_value=400))
        def consolidate(self, days: int) -> None:
            self.clock += timedelta(days=days)
            self.service.consolidate(now=self.tick())

        # ----------------------------------------------------------- invariants

        @invariant()
        def at_most_one_active_memory_per_slot(self) -> None:
            if not hasattr(self, "service"):
                return
            active = [m.slot for m in self.service.list_memories(status=Status.ACTIVE) if m.slot]
            assert len(active) == len(set(active)), "two active memories hold one fact slot"

        @invariant()
        def chains_link_both_ways_without_cycles(self) -> None:
            if not hasattr(self, "service"):
                return
            by_id = {m.id: m for m in self.service.list_memories()}
            for memory in by_id.values():
                if memory.superseded_by is not None:
                    successor = by_id.get(memory.superseded_by)
                    assert successor is not None, f"{memory.id} names a missing successor"
                    assert memory.status is Status.ARCHIVED, f"superseded {memory.id} is live"
                    # The successor points back at its first predecessor, which points at it.
                    assert successor.supersedes is not None
                    assert by_id[successor.supersedes].superseded_by == successor.id
                if memory.supersedes is not None:
                    predecessor = by_id.get(memory.supersedes)
                    assert predecessor is not None, f"{memory.id} names a missing predecessor"
                    assert predecessor.superseded_by == memory.id
                seen = {memory.id}
                cursor = memory
                while cursor.superseded_by is not None:
                    assert cursor.superseded_by not in seen, f"a cycle through {memory.id}"
                    seen.add(cursor.superseded_by)
                    cursor = by_id[cursor.superseded_by]

        @invariant()
        def every_status_change_has_exactly_one_matching_audit_entry(self) -> None:
            if not hasattr(self, "service"):
                return
            memories = {m.id: m for m in self.service.list_memories()}
            entries = self.service.store.audit.for_memories(list(memories))
            new_entries = entries[self.audit_seen :]
            assert entries[: self.audit_seen] == self.audit_before, "the audit log was rewritten"
            changes: dict[str, list[AuditEntry]] = {}
            for entry in new_entries:
                if entry.action == "supersede":
                    replaced = memories[entry.memory_id]
                    assert replaced.superseded_by is not None, f"{replaced.id} has no successor"
                if entry.from_status != entry.to_status:
                    changes.setdefault(entry.memory_id, []).append(entry)
            for memory_id, memory in memories.items():
                before = self.statuses.get(memory_id)
                found = changes.get(memory_id, [])
                if before == memory.status:
                    assert not found, f"{memory_id} audited a change it did not make"
                    continue
                assert len(found) == 1, f"{memory_id}: {before} → {memory.status}: {found}"
                assert (found[0].from_status, found[0].to_status) == (before, memory.status)
            self.statuses = {m.id: m.status for m in memories.values()}
            self.audit_before = entries
            self.audit_seen = len(entries)

    LedgerMachine.TestCase.settings = settings(
        max_examples=30,
        stateful_step_count=15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    run_state_machine_as_test(LedgerMachine, settings=LedgerMachine.TestCase.settings)
