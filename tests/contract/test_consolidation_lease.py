"""A consolidation run that loses its lease stops before writing anything more.

Two service instances over the same database: A takes the lease and starts merging; while A
waits for the model, A's lease lapses (lease time is driven by each instance's lease clock) and
B takes it. A's renewal before its next write fails, so A raises, writes nothing and leaves B's
lease alone; B then runs to completion.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.consolidation.run import ConsolidationLeaseLost
from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.llm import Gateway, Message
from memoryd.service import CONSOLIDATION_LEASE_SECONDS, CONSOLIDATION_LOCK, MemoryService
from memoryd.wiring import open_service
from tests.pg import TestPostgres

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
LEASE_START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
MERGED = "The owner moved to Lisbon on 2026-08-27"


class ScriptedMerge:
    """A merge model that runs ``during`` while "thinking", then answers with the merge."""

    def __init__(self, during: Callable[[], None] = lambda: None) -> None:
        self.during = during
        self.calls = 0

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool = True) -> str:
        """The merged text, as the merge prompt asks for it."""
        self.calls += 1
        self.during()
        return json.dumps({"content": MERGED})


@pytest.fixture(params=["sqlite", "postgres"])
def two_instances(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalMiniLM
) -> Iterator[tuple[MemoryService, MemoryService]]:
    """Two services (two stores, two lease holders) over one database."""
    server: TestPostgres | None = None
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        location = server.create_database()
    else:
        location = str(tmp_path / "shared.db")
    first = open_service(resolve_settings(location, {}), embedder=embedder)
    second = open_service(resolve_settings(location, {}), embedder=embedder)
    yield first, second
    first.close()
    second.close()
    if server is not None:
        server.drop_database(location)


def near_duplicates(service: MemoryService) -> list[str]:
    """Two active near-duplicate facts, stored as an import would leave them."""
    ids = []
    for n, content in enumerate([MERGED, "On 2026-08-27 the owner moved to Lisbon"]):
        at = NOW - timedelta(days=3 - n)
        memory = Memory(
            id=f"01LEASEFACT{n}".ljust(26, "0"), kind=Kind.FACT, status=Status.ACTIVE,
            content=content, source=Source.OWNER, created_at=at, last_confirmed_at=at,
            entities=("Lisbon",),
        )  # fmt: skip
        with service.store.transaction():
            service.store.memories.insert(memory, service.embedder.embed([content])[0])
        ids.append(memory.id)
    return ids


def test_a_run_whose_lease_is_taken_over_stops_before_its_next_write(
    two_instances: tuple[MemoryService, MemoryService],
) -> None:
    a, b = two_instances
    ids = near_duplicates(a)
    a.consolidator.lease.clock = lambda: LEASE_START
    lapsed = LEASE_START + timedelta(seconds=CONSOLIDATION_LEASE_SECONDS + 1)
    b.consolidator.lease.clock = lambda: lapsed
    taken_by_b: list[bool] = []

    def lease_lapses_and_b_takes_it() -> None:
        taken_by_b.append(b.consolidator.lease.take())

    model = ScriptedMerge(during=lease_lapses_and_b_takes_it)
    a.use_gateway(Gateway({}, {"merge": model}))

    with pytest.raises(ConsolidationLeaseLost, match="another run"):
        a.consolidate(now=NOW)

    assert taken_by_b == [True] and model.calls == 1
    # A wrote nothing after the takeover: the group is intact, no merged row, no stamp.
    assert {a.get(i).status for i in ids} == {Status.ACTIVE}
    assert len(a.list_memories()) == 2
    assert a.store.audit.for_memories(ids) == []
    assert a.last_consolidation() is None
    # A left B's lease alone; B's run goes through and does the merge A did not.
    assert a.store.lock_holder(CONSOLIDATION_LOCK) == b.consolidator.lease.holder
    b.use_gateway(Gateway({}, {"merge": ScriptedMerge()}))
    report = b.consolidate(now=NOW)
    assert report.stages["merge-near-duplicates"] == "1 applied"
    [merged] = b.list_memories(status=Status.ACTIVE)
    assert merged.content == MERGED
    assert b.last_consolidation() == NOW
    assert b.store.lock_holder(CONSOLIDATION_LOCK) is None


def test_a_dry_run_plans_the_same_merge_without_asking_the_model(
    two_instances: tuple[MemoryService, MemoryService],
) -> None:
    a, _ = two_instances
    ids = near_duplicates(a)
    model = ScriptedMerge()
    a.use_gateway(Gateway({}, {"merge": model}))
    planned = a.consolidate(now=NOW, dry_run=True)
    [step] = [s for s in planned.steps if s.stage.value == "merge-near-duplicates"]
    assert step.action.value == "merge" and step.memory_id == ids[0]
    assert model.calls == 0 and {a.get(i).status for i in ids} == {Status.ACTIVE}
    done = a.consolidate(now=NOW)
    [applied] = [s for s in done.steps if s.stage.value == "merge-near-duplicates"]
    assert (applied.action, applied.memory_id) == (step.action, step.memory_id)
    assert model.calls == 1
