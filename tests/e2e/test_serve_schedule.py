"""``memoryd serve`` runs the daily consolidation (SPEC §5): at start-up it catches up once on a
missed day, and never runs twice for the same day."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from memoryd.http.server import free_port
from memoryd.model import Kind, Status

from .conftest import MEMORYD, Cli


def test_serve_catches_up_once_on_a_missed_day(cli: Cli, seeded: Callable[[], Any]) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with seeded() as service:
        old = service.remember(
            "Went to the harbour fish market with Ines", kind=Kind.EVENT, now=long_ago
        ).memory
        assert old is not None
    assert cli.run("init").returncode == 0
    port = free_port()
    env = {**cli.env, "MEMORYD_TOKEN": "schedule-test"}

    def run_server() -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [str(MEMORYD), "serve", "--port", str(port), "--daily-at", "03:30", "--tz", "UTC"],
            env=env, cwd=cli.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                    return process
            except httpx.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.3)

    def stop(process: subprocess.Popen[str]) -> None:
        process.send_signal(signal.SIGTERM)
        process.wait(30)

    def runs() -> tuple[int, Status]:
        with seeded() as service:
            count = int(service.store.get_meta("consolidation_runs") or "0")
            return count, service.get(old.id).status

    first = run_server()
    deadline = time.monotonic() + 30
    while runs()[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    stop(first)
    assert runs() == (1, Status.ARCHIVED), "the start-up catch-up run did not happen once"

    second = run_server()
    time.sleep(3)
    stop(second)
    assert runs()[0] == 1, "a second run happened on the same day"
