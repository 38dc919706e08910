"""The crash-safety harness (test_crash_safety.py): the warm fork server that starts victims,
the stores the parent checks, and one victim's run from READY to SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from memoryd.config.settings import resolve_settings
from memoryd.jobs.model import RetryPolicy
from memoryd.providers.llm import Gateway, load_routes
from memoryd.service import MemoryService
from memoryd.wiring import open_service
from tests.crash_child import CrashEmbedder
from tests.pg import TestPostgres

from .server import wait_until

ROOT = Path(__file__).resolve().parents[2]
EMBEDDER = CrashEmbedder()  # the parent's one embedder; the victims use the same class


# ------------------------------------------------------------------------ the fork server


class ForkServer:
    """``python -m tests.crash_child serve``: forks victims that are ready in milliseconds."""

    def __init__(self, directory: Path) -> None:
        self.log = directory / "fork-server.log"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(directory),
            "LC_ALL": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
            # One thread per victim: the machine's two cores are shared.
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        if "XDG_RUNTIME_DIR" in os.environ:
            env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
        # A worktree tested with another checkout's environment: victims import the code
        # under test.
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.crash_child", "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=ROOT,
                env=env,
                text=True,
            )
        assert self._answer() == "SERVING", self.log.read_text()

    def _answer(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the fork server died:\n{self.log.read_text()}"
        return line.strip()

    def _ask(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._answer()

    def fork(self, request: dict[str, Any]) -> int:
        """Start a victim; its pid."""
        answer = self._ask("RUN " + json.dumps(request))
        assert answer.startswith("PID "), answer
        return int(answer.split()[1])

    def reap(self, pid: int) -> int:
        """Wait for a victim to end; its exit code (-9 after SIGKILL)."""
        answer = self._ask(f"REAP {pid}")
        assert answer.startswith("EXIT "), answer
        return int(answer.split()[1])

    def close(self) -> None:
        """Stop the server (it ends when its stdin closes)."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --------------------------------------------------------------------------- the stores


VICTIM_APP = "memoryd-crash-victim"  # the victims' PostgreSQL application_name


@dataclass
class Store:
    """Where a case's store lives and how the parent opens it."""

    backend: str
    location: str
    home: Path
    llm_env: dict[str, str]
    server: TestPostgres | None = None
    _service: MemoryService | None = None
    _admin: psycopg.Connection[Any] | None = None

    def open(self, retry_policy: RetryPolicy | None = None) -> MemoryService:
        """A fresh service with the victims' embedder and LLM routes."""
        self.quiesce()
        service = open_service(
            resolve_settings(self.location, {"MEMORYD_HOME": str(self.home)}),
            embedder=EMBEDDER,
            gateway=Gateway(load_routes(self.home, self.llm_env)),
            retry_policy=retry_policy,
        )
        return service

    @contextmanager
    def session(self) -> Iterator[MemoryService]:
        """A service for one check. SQLite: a fresh one, closed afterwards, so each victim
        opens a store nobody else holds (its recovery runs). PostgreSQL: the parent's one
        service, kept open (recovery is the server's business)."""
        if self.server is None:
            with closing(self.open()) as service:
                yield service
            return
        self.quiesce()
        if self._service is None:
            self._service = self.open()
        yield self._service

    def close(self) -> None:
        """Release the parent's connections."""
        if self._service is not None:
            self._service.close()
            self._service = None
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def quiesce(self) -> None:
        """On PostgreSQL, wait until no session of a dead victim is left: a COMMIT that
        reached the server before the kill lands now, not during the next cycle."""
        if self.server is None:
            return
        if self._admin is None:
            self._admin = psycopg.connect(self.server.admin_url, autocommit=True)
        deadline = time.monotonic() + 30
        database = urlsplit(self.location).path.lstrip("/")
        while True:
            row = self._admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                "AND application_name = %s",
                (database, VICTIM_APP),
            ).fetchone()
            if row is not None and row[0] == 0:
                return
            assert time.monotonic() < deadline, "sessions of dead victims stay open"
            time.sleep(0.005)


@dataclass
class Tally:
    """What a case did, for its summary line."""

    kills: int = 0
    mid_call: int = 0
    acked: int = 0
    integrity_errors: int = 0
    checking: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)


@dataclass
class Victim:
    """The lines one killed victim printed (complete lines only)."""

    lines: list[tuple[str, dict[str, Any]]]

    def of(self, word: str) -> list[dict[str, Any]]:
        return [payload for kind, payload in self.lines if kind == word]

    @property
    def killed_mid_call(self) -> bool:
        """Whether the kill came inside a service call (a TRY without its ACK)."""
        return bool(self.lines) and self.lines[-1][0] == "TRY"


def run_victim(
    fork_server: ForkServer,
    directory: Path,
    operation: str,
    store: Store,
    params: dict[str, Any],
    env: dict[str, str],
    delay: float,
) -> Victim:
    """Fork a victim, kill it ``delay`` seconds after its READY, and read what it printed."""
    stdout = directory / f"cycle-{params['cycle']:03d}.out"
    stderr = directory / "victims.log"
    request = {
        "operation": operation,
        "store": store.location,
        "params": params,
        "env": {"MEMORYD_HOME": str(store.home), "PGAPPNAME": VICTIM_APP, **env},
        "stdout": str(stdout),
        "stderr": str(stderr),
    }
    pid = fork_server.fork(request)
    try:
        wait_until(
            lambda: _ready(stdout),
            gone=lambda: _gone(pid),
            describe=lambda: stderr.read_text()[-4000:] if stderr.exists() else "",
            timeout=60,
            interval=0.005,
        )
    except AssertionError as never_ready:
        os.kill(pid, signal.SIGKILL)
        code = fork_server.reap(pid)
        raise AssertionError(f"the victim never got READY (exit {code}): {never_ready}") from None
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    code = fork_server.reap(pid)
    if code != -signal.SIGKILL:
        log = stderr.read_text() if stderr.exists() else ""
        raise AssertionError(f"the {operation} victim ended by itself ({code}):\n{log[-4000:]}")
    text = stdout.read_bytes().decode("utf-8")
    complete = text[: text.rfind("\n") + 1]  # a line cut by the kill was never delivered
    lines = []
    for line in complete.splitlines()[1:]:  # after READY
        word, _, payload = line.partition(" ")
        lines.append((word, json.loads(payload)))
    return Victim(lines)


def _ready(stdout: Path) -> bool:
    try:
        with stdout.open("rb") as file:
            return file.readline().startswith(b"READY ")
    except FileNotFoundError:
        return False


def _gone(pid: int) -> bool:
    """Whether the victim already exited (a zombie until the fork server reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
