"""Never two consolidation runs at once; the scheduler runs a missed day once."""

from __future__ import annotations

import time as wall
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

import pytest

from memoryd.clock import utc_now
from memoryd.errors import ConsolidationBusyError
from memoryd.model import Kind, Status
from memoryd.service import CONSOLIDATION_LOCK, MemoryService

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_a_second_run_is_refused_while_another_holds_the_lease(
    make_service: Callable[..., MemoryService],
) -> None:
    first = make_service("shared.db")
    second = make_service("shared.db")
    old = first.remember("Owner visited the dentist", kind=Kind.EVENT, now=NOW - timedelta(400))
    assert old.memory is not None
    with first.store.transaction():
        assert first.store.try_lock(CONSOLIDATION_LOCK, "someone-else", utc_now(), 600)
    with pytest.raises(ConsolidationBusyError, match="another consolidation"):
        second.consolidate(now=NOW)
    assert second.get(old.memory.id).status is Status.ACTIVE
    # A dry run reads only, so it is allowed; once the lease is gone the run goes through.
    assert second.consolidate(now=NOW, dry_run=True).steps
    with first.store.transaction():
        first.store.unlock(CONSOLIDATION_LOCK, "someone-else")
    second.consolidate(now=NOW)
    assert second.get(old.memory.id).status is Status.ARCHIVED


def test_an_expired_lease_of_a_crashed_run_does_not_block_forever(
    service: MemoryService,
) -> None:
    with service.store.transaction():
        service.store.try_lock(CONSOLIDATION_LOCK, "crashed", utc_now() - timedelta(hours=2), 60)
    service.consolidate(now=NOW)
    assert service.last_consolidation() == NOW


def test_the_scheduler_catches_up_once_and_then_waits_for_the_next_day(
    make_service: Callable[..., MemoryService],
) -> None:
    service = make_service()
    clock = {"now": NOW}
    service._clock = lambda: clock["now"]  # the scheduler reads the service's clock
    old = service.remember("Owner visited the dentist", kind=Kind.EVENT, now=NOW - timedelta(400))
    assert old.memory is not None
    service.start_scheduler(time(3, 0), UTC, poll_seconds=0.05)
    try:
        deadline = wall.monotonic() + 10
        while service.last_consolidation() is None and wall.monotonic() < deadline:
            wall.sleep(0.05)
        assert service.last_consolidation() == NOW
        assert service.get(old.memory.id).status is Status.ARCHIVED
        clock["now"] = NOW + timedelta(hours=6)  # same day: not due again
        wall.sleep(0.3)
        assert service.last_consolidation() == NOW
        clock["now"] = NOW + timedelta(days=1)  # past tomorrow's 03:00
        deadline = wall.monotonic() + 10
        while service.last_consolidation() == NOW and wall.monotonic() < deadline:
            wall.sleep(0.05)
        assert service.last_consolidation() == NOW + timedelta(days=1)
    finally:
        service.stop_scheduler()
