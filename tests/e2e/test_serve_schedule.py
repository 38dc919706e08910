"""``memoryd serve`` runs the daily consolidation (SPEC §5): at start-up it catches up once on a
missed day, and never runs twice for the same day."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memoryd.memory.model import Kind, Status

from .conftest import Cli, running_server


def test_serve_catches_up_once_on_a_missed_day(cli: Cli, seeded: Callable[[], Any]) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with seeded() as service:
        old = service.remember(
            "Went to the harbour fish market with Ines", kind=Kind.EVENT, now=long_ago
        ).memory
        assert old is not None
    assert cli.run("init").returncode == 0
    env = {**cli.env, "MEMORYD_TOKEN": "schedule-test"}
    schedule = ("--daily-at", "03:30", "--tz", "UTC")

    def runs() -> tuple[int, Status]:
        with seeded() as service:
            count = int(service.store.get_meta("consolidation_runs") or "0")
            return count, service.get(old.id).status

    with running_server(env, cli.cwd, *schedule):
        deadline = time.monotonic() + 30
        while runs()[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
    assert runs() == (1, Status.ARCHIVED), "the start-up catch-up run did not happen once"

    # No clock reaches a real ``memoryd serve`` (and serve takes no --now), so this negative
    # still waits on wall time: 3 s for the scheduler's first check. The same-day rule itself
    # is proved with a driven clock in tests/unit/test_schedule.py and
    # tests/contract/test_consolidation_schedule.py.
    with running_server(env, cli.cwd, *schedule):
        time.sleep(3)
    assert runs()[0] == 1, "a second run happened on the same day"
