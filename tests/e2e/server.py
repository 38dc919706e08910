"""The one way e2e tests start a server: ``memoryd serve`` (or ``memoryd mcp --transport http``)
as the real executable with the test's environment and arguments, waited for until it answers
(polled against a deadline, never a fixed sleep), and stopped cleanly with SIGTERM (killed only
if it hangs).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from memoryd.http.server import free_port

MEMORYD = Path(sys.executable).parent / "memoryd"
HEALTH = "/v1/health"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0
POLL_INTERVAL = 0.1


def login_env(home: Path) -> dict[str, str]:
    """What a fresh login shell has: PATH, ``home`` as HOME and a UTF-8 locale; no MEMORYD_*
    from the caller's shell."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        # Each fresh home would build the int8 query model on its first recall (seconds and
        # ~440 MB at peak, test after test); its own tests turn it on
        # (test_recall_cli.py::test_recall_builds_the_int8_query_model_once).
        "MEMORYD_EMBED_INT8_QUERIES": "off",
    }
    # A checkout tested against another checkout's installed environment (a git worktree):
    # the subprocesses import the code under test, not the installed copy.
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def store_env(root: Path) -> dict[str, str]:
    """A login environment under ``root`` with MEMORYD_HOME and a SQLite MEMORYD_DB beside it
    (what the ``cli`` fixture builds, for stores that outlive one test)."""
    home = root / "home"
    home.mkdir(parents=True)
    (root / "store").mkdir(parents=True)
    return {
        **login_env(home),
        "MEMORYD_HOME": str(root / "memoryd-home"),
        "MEMORYD_DB": str(root / "store" / "memoryd.db"),
    }


def wait_until(
    ready: Callable[[], bool],
    *,
    gone: Callable[[], bool],
    describe: Callable[[], str],
    timeout: float = START_TIMEOUT,
    interval: float = POLL_INTERVAL,
) -> None:
    """Poll ``ready`` until it holds; fail with ``describe()`` if the process is ``gone`` first
    or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not ready():
        if gone():
            raise AssertionError(f"the process exited before it answered:\n{describe()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer after {timeout:.0f} s:\n{describe()}")
        time.sleep(interval)


def health_answers(base_url: str) -> Callable[[], bool]:
    """A readiness probe: ``GET /v1/health`` answers 200."""

    def probe() -> bool:
        try:
            return httpx.get(base_url + HEALTH, timeout=2.0).status_code == 200
        except httpx.TransportError:
            return False

    return probe


def port_listens(port: int) -> Callable[[], bool]:
    """A readiness probe: something accepts TCP connections on loopback ``port``."""

    def probe() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    return probe


@dataclass
class RunningServer:
    """A started server process, its loopback base URL and the file its output goes to."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def returncode(self) -> int | None:
        """The exit status once it has stopped."""
        return self.process.returncode

    def output(self) -> str:
        """Everything the server printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def stop(self) -> int:
        """SIGTERM, then wait; kill if it hangs. Returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        assert self.process.poll() is not None, "the server did not exit"
        return self.process.returncode


@contextmanager
def serving(
    env: dict[str, str],
    cwd: Path,
    *args: str,
    command: tuple[str, ...] = ("serve",),
    port: int | None = None,
    log: Path | None = None,
    ready: Callable[[int], Callable[[], bool]] | None = None,
    timeout: float = START_TIMEOUT,
) -> Iterator[RunningServer]:
    """Run ``memoryd COMMAND --port PORT ARGS`` (PORT free on loopback unless given) until the
    block ends: yields once ``ready(port)`` holds (by default ``/v1/health`` answers), then
    stops it cleanly. Its stdout and stderr go to ``log`` (a file in ``cwd`` by default)."""
    port = free_port() if port is None else port
    log = cwd / f"memoryd-{command[0]}-{port}.log" if log is None else log
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(MEMORYD), *command, "--port", str(port), *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = RunningServer(process, port, log)
    try:
        probe = ready(port) if ready is not None else health_answers(server.base_url)
        wait_until(
            probe,
            gone=lambda: process.poll() is not None,
            describe=lambda: (
                f"memoryd {' '.join(command)} (exit {process.poll()}):\n" + server.output()
            ),
            timeout=timeout,
        )
        yield server
    finally:
        server.stop()
