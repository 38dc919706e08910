"""Never two consolidation runs at once; the scheduler runs a missed day once."""

from __future__ import annotations

import threading
import time as wall
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

import pytest

from memoryd.clock import utc_now
from memoryd.errors import ConsolidationBusyError
from memoryd.memory.model import Kind, Status
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
    service: MemoryService,
) -> None:
    old = service.remember("Owner visited the dentist", kind=Kind.EVENT, now=NOW - timedelta(400))
    assert old.memory is not None
    daily = service.daily_consolidation(time(3, 0), UTC)
    assert daily.tick(NOW) is not None  # never ran: one catch-up run
    assert service.last_consolidation() == NOW
    assert service.get(old.memory.id).status is Status.ARCHIVED
    assert daily.tick(NOW + timedelta(hours=6)) is None  # same day: not due again
    assert service.last_consolidation() == NOW
    assert daily.tick(NOW + timedelta(days=1)) is not None  # past tomorrow's 03:00
    assert service.last_consolidation() == NOW + timedelta(days=1)


def test_the_scheduler_thread_runs_the_catch_up_by_the_service_clock(
    make_service: Callable[..., MemoryService],
) -> None:
    service = make_service()
    service.use_clock(lambda: NOW)  # the scheduler reads the service's clock
    service.start_scheduler(time(3, 0), UTC, poll_seconds=0.05)
    try:
        service.start_scheduler(time(3, 0), UTC, poll_seconds=0.05)  # idempotent
        deadline = wall.monotonic() + 10
        while service.last_consolidation() is None and wall.monotonic() < deadline:
            wall.sleep(0.05)
        assert service.last_consolidation() == NOW
    finally:
        service.stop_scheduler()
    assert not [t for t in threading.enumerate() if t.name == "memoryd-scheduler"]
