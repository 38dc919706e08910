"""Starting and stopping ``memoryd serve`` (SPEC §7): a public bind needs a token, MEMORYD_TOKEN
is one, and SIGTERM closes the store cleanly. Each test runs a server of its own.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from memoryd.http.server import free_port

from ..conftest import Cli
from ..server import MEMORYD, serving
from .conftest import http_client

# ------------------------------------------------------ starting and stopping


def _serve_once(cli: Cli, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [str(MEMORYD), "serve", *args],
        env={**cli.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cli.cwd,
    )


def test_a_public_bind_without_a_token_is_refused(cli: Cli) -> None:
    cli.ok("init")
    token_file = Path(cli.env["MEMORYD_HOME"]) / "token"
    token_file.unlink()
    started = time.monotonic()

    result = _serve_once(cli, "--host", "0.0.0.0", "--port", str(free_port("0.0.0.0")))

    assert time.monotonic() - started < 30
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "token" in lines[0]
    assert "Traceback" not in result.stderr
    assert not token_file.exists()


def test_a_public_bind_with_memoryd_token_starts(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    token_file = Path(cli.env["MEMORYD_HOME"]) / "token"
    token_file.unlink()
    port = free_port("0.0.0.0")
    token = "env-provided-token-0123456789abcdef"
    log = tmp_path / "public.log"
    env = {**cli.env, "MEMORYD_TOKEN": token}
    with serving(env, tmp_path, "--host", "0.0.0.0", port=port, log=log) as running:
        base_url = running.base_url
        with http_client(base_url, token) as good, http_client(base_url, "other") as bad:
            assert good.get("/v1/memories").status_code == 200
            assert bad.get("/v1/memories").status_code == 403
    assert running.returncode is not None
    assert not token_file.exists()


def test_sigterm_shuts_the_service_down_cleanly(cli: Cli, db_path: Path, tmp_path: Path) -> None:
    """SIGTERM (systemd stop, docker stop) must run serve's cleanup: stop the worker and the
    scheduler and close the store. A closed SQLite store has checkpointed its -wal file away."""
    cli.ok("init")
    log = tmp_path / "sigterm.log"
    wal = db_path.with_name(db_path.name + "-wal")
    with serving(cli.env, tmp_path, log=log) as running:
        base_url = running.base_url
        token = (Path(cli.env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
        with http_client(base_url, token) as http:
            written = http.post("/v1/memories", json={"content": "Chiara sails a wooden dinghy"})
            assert written.status_code == 200, written.text
        assert wal.exists()
    status = running.returncode

    assert status in (0, -signal.SIGTERM), (status, log.read_text())
    assert not wal.exists(), (
        f"the store was not closed on SIGTERM (exit status {status}):\n{log.read_text()}"
    )
    assert not re.search(r"Traceback", log.read_text())
