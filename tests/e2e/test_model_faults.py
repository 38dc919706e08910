"""``memoryd serve`` while its model endpoints misbehave, as the real executable: the extract
route hangs, then answers 64 MiB; the embeddings endpoint hangs. Remember and recall answer at
once while extraction hangs (they never call the LLM); the hung call holds the worker for the
route's timeout, its job waits to retry, and the worker runs the next job; the huge answer is
cut off at 1 MiB without the server's memory growing; the web page names the failing routes;
when the endpoints answer again, so does everything else.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from tests.builders import batch, item
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import FakeLLMServer, Misbehave, Reply

from .conftest import Cli
from .server import serving

RACE = "The owner ran the Porto half marathon in 1:52."
LLM_TIMEOUT = 2.0
FAST = 1.0  # what "at once" means for remember and recall on a shared 2-core machine


def _job(db: Path, job_id: str) -> tuple[str, str | None, str]:
    with sqlite3.connect(db) as connection:
        row = connection.execute(
            "SELECT status, last_error, next_attempt_at FROM jobs WHERE id = ?", (job_id,)
        ).fetchone()
    return str(row[0]), row[1], str(row[2])


def _until(check: Callable[[], bool], timeout: float = 15.0) -> float:
    """Poll ``check`` until it holds; the seconds it took."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "gave up waiting"
        time.sleep(0.05)
    return time.monotonic() - started


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_serve_answers_while_its_model_endpoints_misbehave_and_shows_which(
    cli: Cli, db_path: Path, tmp_path: Path
) -> None:
    with FakeLLMServer("openai") as llm, FakeEmbeddingServer(dimension=64) as embed:
        llm.script(Misbehave("hang"), Reply(batch(item(RACE))), Misbehave("huge"))
        env = {
            **cli.env,
            **embed.env(),
            "MEMORYD_EMBED_TIMEOUT": "1",
            "MEMORYD_LLM_PROVIDER": "openai",
            "MEMORYD_LLM_MODEL": "fake-model",
            "MEMORYD_LLM_BASE_URL": llm.sdk_base_url,
            "MEMORYD_LLM_TIMEOUT": str(LLM_TIMEOUT),
            "MEMORYD_LLM_MAX_RETRIES": "0",
        }
        served = Cli(env=env, cwd=cli.cwd)
        served.ok("init")
        with serving(env, tmp_path) as server:
            token = (Path(env["MEMORYD_HOME"]) / "token").read_text().strip()
            http = httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
            )

            def observe(text: str) -> str:
                answer = http.post("/v1/observe", json={"user": text})
                assert answer.status_code == 200, answer.text
                return str(answer.json()["job_id"])

            def timed(path: str, body: dict[str, str]) -> tuple[float, httpx.Response]:
                started = time.monotonic()
                answer = http.post(path, json=body)
                return time.monotonic() - started, answer

            # (A first remember and recall load what they use: the later ones are timed.)
            timed("/v1/memories", {"content": "The owner's boat is called Maré"})
            timed("/v1/recall", {"message": "What is the owner's boat called?"})

            # The extract call hangs: remember and recall answer at once all the while.
            hung = observe("Ran the Porto half marathon in 1:52")
            llm.wait_for_requests(1, timeout=60)
            calls = [
                timed(path, body)
                for n in range(3)
                for path, body in (
                    ("/v1/memories", {"content": f"The owner's boat number {n} is called Maré"}),
                    ("/v1/recall", {"message": "What is the owner's boat called?"}),
                )
            ]
            assert all(answer.status_code == 200 for _, answer in calls), calls
            assert max(seconds for seconds, _ in calls) < FAST, calls
            assert "Maré" in calls[-1][1].text
            assert _job(db_path, hung)[1] is None  # all of them while the call still hung

            # The hung call holds the worker for the route's timeout, then its job waits to retry.
            held = _until(lambda: _job(db_path, hung)[1] is not None)
            status, error, retry_at = _job(db_path, hung)
            assert status == "queued"
            assert f"did not answer within its {LLM_TIMEOUT:g} s timeout" in str(error)
            assert held < LLM_TIMEOUT + 1.0
            wait = datetime.fromisoformat(retry_at) - datetime.now(UTC)
            assert timedelta(seconds=20) < wait <= timedelta(seconds=30)

            # The worker goes on with the next job.
            done = observe("Ran the Porto half marathon in 1:52, again")
            _until(lambda: _job(db_path, done)[0] == "done")

            # 64 MiB of JSON: cut off at 1 MiB, and the server's peak memory hardly moves.
            peak = _peak_rss(server.process.pid)
            huge = observe("Booked dinner at Taberna da Rua")
            _until(lambda: _job(db_path, huge)[1] is not None)
            assert "the extract route answered more than 1 MiB" in str(_job(db_path, huge)[1])
            assert _peak_rss(server.process.pid) - peak < 32 << 20

            # The embeddings endpoint hangs: remember says so with a 503 within its timeout.
            embed.misbehave = "hang"
            seconds, refused = timed("/v1/memories", {"content": "The owner's kayak is red"})
            assert refused.status_code == 503 and seconds < 1.0 + FAST
            assert "did not answer within its 1 s timeout" in refused.text

            # The page's status area names both failing endpoints and why.
            login = http.post("/login", data={"token": token, "next": "/"})
            assert login.status_code == 303
            page = http.get("/").text
            assert f"extraction route fake-model @ {llm.sdk_base_url} failing" in page
            assert "answered more than 1 MiB" in page and "2 jobs wait to retry" in page
            assert f"embeddings endpoint fake-embed @ {embed.base_url} failing since" in page

            # Both endpoints answer again: so does memoryd, and the page says nothing more.
            embed.misbehave = None
            assert http.post("/v1/memories", json={"content": "The kayak is red"}).is_success
            # (The retry ladder is walked elsewhere: here both retries fall due now.)
            with sqlite3.connect(db_path) as connection:
                connection.execute(
                    "UPDATE jobs SET next_attempt_at = created_at WHERE id IN (?, ?)", (hung, huge)
                )
            llm.script(*[Reply(batch(item(RACE)))] * 3)
            woken = observe("Ran the Porto half marathon in 1:52, once more")
            _until(lambda: [_job(db_path, job)[0] for job in (hung, huge, woken)] == ["done"] * 3)
            page = http.get("/").text
            assert "failing" not in page
