"""Run the installed ``memoryd`` console script in subprocesses, with a clean environment."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import memoryd
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService

from .server import MEMORYD, login_env, serving


@dataclass
class Cli:
    """The real executable; ``env`` holds only what a fresh login shell would plus overrides."""

    env: dict[str, str]
    cwd: Path

    def run(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``memoryd ARGS``; never raises on a non-zero exit."""
        return subprocess.run(
            [str(MEMORYD), *args],
            input=input,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env={**self.env, **(env or {})},
            cwd=self.cwd,
            timeout=120,
        )

    def ok(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> str:
        """Run and require success; return stdout."""
        result = self.run(*args, input=input, env=env)
        assert result.returncode == 0, f"memoryd {' '.join(args)} failed:\n{result.stderr}"
        return result.stdout

    def json(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
        """Run with ``--json`` and decode stdout."""
        return json.loads(self.ok(*args, "--json", input=input, env=env))

    def fails(
        self,
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        code: int = 1,
    ) -> str:
        """Run, require exit code ``code`` (1: not found, refused, failed) with exactly one
        error line on stderr; return that line."""
        result = self.run(*args, input=input, env=env)
        assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, f"expected one error line, got:\n{result.stderr}"
        assert lines[0].startswith("error: "), lines[0]
        assert result.stdout == ""
        return lines[0]

    def misused(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Run, require the usage exit code (2) with one error line naming the option at
        fault; return that line."""
        return self.fails(*args, env=env, code=2)

    def in_terminal(self, *args: str, answers: str) -> subprocess.CompletedProcess[str]:
        """Run ``memoryd ARGS`` with a terminal (a pseudo-terminal) as stdin, typing
        ``answers``; stdout and stderr are captured as with :meth:`run`."""
        import os
        import pty

        controller, terminal = pty.openpty()
        try:
            process = subprocess.Popen(
                [str(MEMORYD), *args],
                stdin=terminal,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                env=self.env,
                cwd=self.cwd,
            )
            os.close(terminal)
            terminal = -1
            os.write(controller, answers.encode())
            out, err = process.communicate(timeout=120)
        finally:
            if terminal != -1:
                os.close(terminal)
            os.close(controller)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str]:
    """PATH, a throwaway HOME and a UTF-8 locale; no MEMORYD_* from the caller's shell."""
    home = tmp_path / "home"
    home.mkdir()
    return login_env(home)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's store lives."""
    return tmp_path / "store" / "memoryd.db"


@pytest.fixture
def cli(clean_env: dict[str, str], db_path: Path, tmp_path: Path) -> Cli:
    """The CLI pointed at ``db_path`` through MEMORYD_DB (MEMORYD_HOME at a tmp dir)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **clean_env,
        "MEMORYD_HOME": str(tmp_path / "memoryd-home"),
        "MEMORYD_DB": str(db_path),
    }
    return Cli(env=env, cwd=tmp_path)


@pytest.fixture
def seeded(
    db_path: Path, embedder: LocalMiniLM
) -> Callable[[], AbstractContextManager[MemoryService]]:
    """Open the test's store in-process (same embedder as the CLI) to set up state; closed by
    the ``with`` so the CLI subprocess sees every write."""

    @contextmanager
    def opener() -> Iterator[MemoryService]:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        service = memoryd.open(db_path, embedder=embedder)
        try:
            yield service
        finally:
            service.close()

    return opener


@contextmanager
def running_server(env: dict[str, str], cwd: Path, *args: str) -> Iterator[str]:
    """``memoryd serve`` on a free loopback port (plus ``args``) until the block ends: yields
    its base URL once ``/v1/health`` answers, then stops it with SIGTERM (kill if it hangs)."""
    with serving(env, cwd, *args) as server:
        yield server.base_url
