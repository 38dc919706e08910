"""Random histories of memory operations (SPEC §1-3) keep the store consistent, once per
storage backend (a Hypothesis state machine).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

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
    InvalidOperationError,
)
from memoryd.memory.model import Memory, Source, Status
from memoryd.service import MemoryService
from tests.builders import batch, item

from .conftest import Backend
from .memories_support import T0, by_id

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
        # Hypothesis takes any factory (its docstring) but annotates a class.
        lambda: MemoryMachine(backend.open_fresh),  # type: ignore[arg-type]
        settings=settings(
            max_examples=25,
            stateful_step_count=20,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
