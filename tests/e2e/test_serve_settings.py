"""``memoryd serve`` tells the owner what it is doing: where its settings came from, each
route, the page and the token; it takes its port and zone from memoryd.toml; a busy port is the
first and only thing it reports; while it runs, ``status`` and ``config set`` know it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.http.server import free_port
from tests.builders import batch, item
from tests.fake_llm import FakeLLMServer, Reply

from .conftest import Cli
from .server import MEMORYD, serving


def test_serve_reports_its_settings_and_a_busy_port_before_anything_else(
    cli: Cli, tmp_path: Path
) -> None:
    home = Path(cli.env["MEMORYD_HOME"])
    port = free_port()
    cli.ok("init")
    cli.ok("config", "set", "serve.port", str(port))
    cli.ok("config", "set", "tz", "Europe/Lisbon")
    record = home / "serve.json"

    with serving(cli.env, tmp_path, port=port) as running:
        first = running.output()
        status = cli.json("status")
        told = cli.ok("config", "set", "serve.daily_at", "04:00")
        # No --port: the second server reads the same port from the file and finds it taken.
        second = subprocess.run(
            [str(MEMORYD), "serve"], env=cli.env, cwd=tmp_path, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert json.loads(record.read_text())["pid"] == running.process.pid

    assert f"memoryd serve: settings from {home / 'memoryd.toml'}, overridden by " in first
    assert "MEMORYD_DB" in first.splitlines()[0] and "--port" in first.splitlines()[0]
    assert "  llm extract off: turns queued by observe" in first
    assert "`memoryd config set llm.model NAME`; no restart needed" in first
    assert f"time zone   Europe/Lisbon (tz in {home / 'memoryd.toml'})" in first
    assert (
        f"web page    http://127.0.0.1:{port}/ (log in with the token in {home / 'token'})" in first
    )
    assert first.index("web page") < first.index("memoryd serving")
    assert status["server"]["running"] and status["server"]["pid"] == running.process.pid
    assert status["server"]["url"] == f"http://127.0.0.1:{port}/"
    assert f"memoryd serve (pid {running.process.pid}) is running for this home" in told

    assert second.returncode == 1
    assert second.stdout == ""
    [error] = second.stderr.strip().splitlines()
    assert error.startswith(f"error: port {port} on 127.0.0.1 is already in use")
    assert "--port" in error and "serving" not in second.stderr

    assert not record.exists()  # removed when the server stopped
    assert cli.json("status")["server"] == {"running": False}


def test_llm_settings_changed_while_serving_are_used_at_once(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    with (
        FakeLLMServer("openai", default=Reply(batch(item("Had dinner with Ana")))) as llm,
        serving(cli.env, tmp_path) as running,
    ):
        told = cli.ok("config", "set", "llm.base_url", llm.sdk_base_url)
        cli.ok("config", "set", "llm.model", "fake-extractor")
        wait_for(lambda: "llm extract now openai model 'fake-extractor'" in running.output())
        queued = cli.json("observe", "--user", "I had dinner with Ana yesterday")
        wait_for(lambda: _job(cli, queued["job_id"])["status"] == "done")
        proxy_told = cli.ok("config", "set", "proxy.inject", "memories")
        wait_for(lambda: "adds memories" in running.output())
        tz_told = cli.ok("config", "set", "tz", "Europe/Lisbon")
        wait_for(lambda: "tz changed in" in running.output())

    assert "it uses the new LLM settings within seconds" in told
    assert "it uses the new chat proxy settings within seconds" in proxy_told
    assert "restart it to use the change" in tz_told
    assert [r.body["model"] for r in llm.requests] == ["fake-extractor"]
    assert "restart serve to use the new values" in running.output()


def _job(cli: Cli, job_id: str) -> dict[str, Any]:
    [job] = [job for job in cli.json("jobs")["jobs"] if job["id"] == job_id]
    assert isinstance(job, dict), job
    return job


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_killed_server_leaves_a_record_status_calls_stale(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    with serving(cli.env, tmp_path) as running:
        running.process.send_signal(signal.SIGKILL)
        running.process.wait(timeout=30)
        pid = running.process.pid

    server = cli.json("status")["server"]
    assert server["running"] is False and server["stale"] is True and server["pid"] == pid
    assert f"not running (pid {pid} in the record is gone)" in cli.ok("status")
