"""PostgreSQL goes away under load (issue 20): ``memoryd serve --db postgresql://…`` with 16
clients mixing recall, remember, propose, KB search and KB ingest (tests/load_mix.py) and one
more queuing turns for the extraction worker (a scripted LLM on loopback), while

- the test's own embedded PostgreSQL is stopped (fast shutdown, by its postmaster's PID) for
  5 s and started again on the same data directory and socket, and
- every session of the store's database is killed with ``pg_terminate_backend`` every quarter
  second, mid-transaction, for 3 s.

Each asserts what a client sees: during the fault only successes or 503 with ``Retry-After``
and the "not answering" message (never a 500, a reset connection or a stack trace), no request
near the client's timeout, every request answered again within RECOVERY_SECONDS of the fault's
end (measured and printed); every write acknowledged before, during or after is there when read
back; the store's integrity checks pass; every queued turn is extracted exactly once (each job
done after one counted attempt).

The server is the test module's own (``TestPostgres.own``), never the shared one of the run.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from memoryd.storage.postgres import PostgresStore
from tests.builders import batch, item
from tests.fake_llm import FakeLLMServer, Reply
from tests.load_mix import LoadResult, check_writes, run_mix
from tests.pg import OwnPostgres, TestPostgres

from .conftest import Cli
from .server import serving, store_env

CLIENTS = 16
# Seconds of load before the fault, of the fault, and after it.
RESTART_PHASES = (3.0, 5.0, 4.0)
KILLING_PHASES = (2.0, 3.0, 3.0)
# The clients' timeout: every request, during the fault too, is answered within it (on a
# loaded 2-core machine a request under this load can take several seconds by itself).
REQUEST_TIMEOUT = 30.0
# Every request sent this long after the fault ends is answered without 503.
RECOVERY_SECONDS = 5.0
TURN_INTERVAL = 0.2
MIX = {"recall": 30, "remember": 25, "propose": 15, "kb_search": 15, "kb_ingest": 15}
KEY = "sk-test-outage-0123456789abcdef"
FACT = "The owner waters the fig tree on Sunday mornings."
NOT_ANSWERING = "is not answering"


@dataclass
class Rig:
    pg: OwnPostgres
    url: str
    base_url: str
    token: str
    root: Path
    log: Path
    llm: FakeLLMServer


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    pg = TestPostgres.own()
    try:
        url = pg.create_database()
        root = tmp_path_factory.mktemp("pg-outage")
        reply = Reply(batch(item(FACT, kind="fact", confidence=0.95)))
        with FakeLLMServer("openai", api_key=KEY, default=reply) as llm:
            env = {
                **store_env(root),
                "MEMORYD_DB": url,
                "MEMORYD_LLM_PROVIDER": "openai",
                "MEMORYD_LLM_MODEL": "fake-extractor",
                "MEMORYD_LLM_BASE_URL": llm.sdk_base_url,
                "MEMORYD_LLM_API_KEY": KEY,
                # The SDK retries a dropped keep-alive connection to the scripted server; the
                # test is about the database, and a job retry would wait 30 s.
                "MEMORYD_LLM_MAX_RETRIES": "2",
                "MEMORYD_LLM_TIMEOUT": "10",
            }
            Cli(env=env, cwd=root).ok("init")
            log = root / "serve.log"
            with serving(env, root, log=log) as running:
                token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii")
                yield Rig(pg, url, running.base_url, token.strip(), root, log, llm)
    finally:
        pg.remove()


@dataclass
class Turns:
    """A client queuing a turn every TURN_INTERVAL seconds (``POST /v1/observe``)."""

    rig: Rig
    acknowledged: list[str] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.rig.token}"}
        with httpx.Client(
            base_url=self.rig.base_url, headers=headers, timeout=REQUEST_TIMEOUT
        ) as http:
            number = 0
            while not self.stop.is_set():
                number += 1
                user = f"Turn {number}: I moved the fig tree to the balcony ({time.time()})"
                try:
                    response = http.post("/v1/observe", json={"user": user})
                except httpx.HTTPError as error:
                    self.wrong.append(f"{type(error).__name__}: {error}")
                    continue
                self.statuses[response.status_code] += 1
                if response.status_code == 200:
                    self.acknowledged.append(response.json()["job_id"])
                elif not _documented_503(response.status_code, response.text, response.headers):
                    self.wrong.append(f"{response.status_code}: {response.text[:300]}")
                self.stop.wait(TURN_INTERVAL)


def _documented_503(status: int, body: str, headers: httpx.Headers) -> bool:
    retry_after = headers.get("Retry-After", "")
    return (
        status == 503
        and NOT_ANSWERING in body
        and "memoryd retries by itself" in body
        and retry_after.isdigit()
        and int(retry_after) > 0
    )


@dataclass
class Outcome:
    result: LoadResult
    turns: Turns
    fault_started: float
    fault_ended: float


def under_load(
    rig: Rig, name: str, fault: Callable[[], None], before: float, gap: float, after: float
) -> Outcome:
    """Run the load for ``before + gap + after`` seconds with ``fault`` (which takes about
    ``gap`` seconds) started ``before`` seconds in."""
    turns = Turns(rig)
    turner = threading.Thread(target=turns.run, name="turns", daemon=True)
    times: dict[str, float] = {}
    sending = threading.Event()

    def inject() -> None:
        sending.wait(timeout=60)
        time.sleep(before)
        times["started"] = time.monotonic()
        fault()
        times["ended"] = time.monotonic()

    injector = threading.Thread(target=inject, name="fault", daemon=True)
    turner.start()
    injector.start()
    result = run_mix(
        rig.base_url,
        rig.token,
        clients=CLIENTS,
        seconds=before + gap + after,
        scratch=rig.root / f"ingest-{name}",
        mix=MIX,
        timeout=REQUEST_TIMEOUT,
        sending=sending,
    )
    injector.join(timeout=60)
    turns.stop.set()
    turner.join(timeout=REQUEST_TIMEOUT + 5)
    assert not injector.is_alive() and "ended" in times, "the fault did not end"
    return Outcome(result, turns, times["started"], times["ended"])


def check_outcome(rig: Rig, outcome: Outcome, capsys: pytest.CaptureFixture[str]) -> float:
    """Every assertion both faults share; returns the measured recovery time (s)."""
    result, turns = outcome.result, outcome.turns
    failed = [a for a in result.answers if a.status == 503]
    # From the fault's end to the last request that was sent and still answered 503.
    last_failed = max((a.sent for a in failed), default=outcome.fault_ended)
    recovery = max(0.0, last_failed - outcome.fault_ended)
    slowest = max((a.seconds for a in result.answers), default=0.0)
    first_success = min(
        (a.sent + a.seconds for a in result.answers if a.status == 200 and a.sent >= last_failed),
        default=float("nan"),
    )
    slowest_503 = max((a.seconds for a in failed), default=0.0)
    phases = {
        "before": [a for a in result.answers if a.sent < outcome.fault_started],
        "during": [
            a for a in result.answers if outcome.fault_started <= a.sent <= outcome.fault_ended
        ],
        "after": [a for a in result.answers if a.sent > outcome.fault_ended],
    }
    with capsys.disabled():
        print(
            f"\n{len(result.answers)} requests, {len(failed)} answered 503 (slowest 503 "
            f"{slowest_503:.2f} s, slowest answer {slowest:.2f} s); recovery {recovery:.2f} s "
            f"after the fault ended (first success after it: "
            f"{first_success - outcome.fault_ended:.2f} s); turns {dict(turns.statuses)}; "
            f"{len(result.transport_errors)} transport errors"
        )
        for phase, answers in phases.items():
            print(
                f"  {phase:>6}: {len(answers)} answered, "
                f"{sum(1 for a in answers if a.status == 503)} with 503, slowest "
                f"{max((a.seconds for a in answers), default=0):.2f} s"
            )

    # Only successes, refusals of the request itself, or the documented 503: never a 500,
    # a reset connection, a hang or a stack trace.
    assert not result.transport_errors, result.transport_errors[:5]
    assert not result.client_errors, result.client_errors[:5]
    assert not turns.wrong, turns.wrong[:5]
    assert {status for (_, status) in result.statuses} <= {200, 400, 404, 409, 503}
    for operation, status, body in result.server_errors:
        assert status == 503 and NOT_ANSWERING in body, (operation, status, body)
        assert "Traceback" not in body
    assert not any("Traceback" in reason for (_, _, reason) in result.refusals)
    assert all(
        _documented_503(503, NOT_ANSWERING + " memoryd retries by itself", _headers(a.retry_after))
        for a in failed
    ), {a.retry_after for a in failed}
    # 503s only from the fault's start until shortly after its end; then everything answers.
    assert all(a.sent + a.seconds >= outcome.fault_started - 0.5 for a in failed)
    assert recovery <= RECOVERY_SECONDS, f"503s went on {recovery:.1f} s after the fault ended"
    assert every_operation_answers(rig) == dict.fromkeys(MIX, 200)

    # Every acknowledged write is there, whole.
    check = check_writes(rig.base_url, rig.token, result)
    assert check.memories_checked and check.documents_checked
    assert not check.lost_memories, check.lost_memories[:10]
    assert not check.changed_memories, check.changed_memories[:5]
    assert not check.missing_documents, check.missing_documents[:10]
    assert not check.unready_documents, check.unready_documents[:10]
    store = PostgresStore(rig.url, create=False)
    try:
        assert store.integrity_errors() == []
    finally:
        store.close()

    # Every queued turn is extracted, and no job is claimed twice.
    assert turns.acknowledged
    jobs = settled_jobs(rig.url)
    assert set(turns.acknowledged) <= set(jobs), "an acknowledged turn was lost"
    assert {status for status, _ in jobs.values()} == {"done"}, (
        Counter(jobs.values()),
        sessions(rig),
    )
    assert {attempts for _, attempts in jobs.values()} == {1}, Counter(jobs.values())
    assert "Traceback" not in rig.log.read_text(errors="replace")
    return recovery


def every_operation_answers(rig: Rig) -> dict[str, int]:
    """The status of one request of each operation of the mix, sent one after another."""
    headers = {"Authorization": f"Bearer {rig.token}"}
    note = f"The owner repotted the lemon tree ({time.time()})"
    upload = {"file": ("after.md", f"# After\n\n{note}\n".encode(), "text/markdown")}
    with httpx.Client(base_url=rig.base_url, headers=headers, timeout=REQUEST_TIMEOUT) as http:
        requests: dict[str, Callable[[], httpx.Response]] = {
            "recall": lambda: http.post("/v1/recall", json={"message": "What about the fig?"}),
            "remember": lambda: http.post("/v1/memories", json={"content": note}),
            "propose": lambda: http.post(
                "/v1/propose", json={"memories": [item("Also " + note, confidence=0.95)]}
            ),
            "kb_search": lambda: http.post("/v1/kb/search", json={"query": "lemon tree"}),
            "kb_ingest": lambda: http.post("/v1/kb/upload", files=upload),
        }
        return {operation: send().status_code for operation, send in requests.items()}


def sessions(rig: Rig) -> list[tuple[object, ...]]:
    """What the store's database sessions are doing (for a failure message)."""
    with psycopg.connect(rig.url, autocommit=True) as connection:
        return connection.execute(
            "SELECT pid, state, wait_event_type, wait_event, left(query, 120), xact_start, "
            "(SELECT string_agg(id || ':' || status || ':' || coalesce(claimed_at::text, '-'), "
            "' ') FROM jobs WHERE status <> 'done') FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()


def _headers(retry_after: str | None) -> httpx.Headers:
    return httpx.Headers({"Retry-After": retry_after} if retry_after is not None else {})


def settled_jobs(url: str, timeout: float = 30.0) -> dict[str, tuple[str, int]]:
    """Job id → (status, attempts), once no job is queued or running (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        with psycopg.connect(url, autocommit=True) as connection:
            rows = connection.execute("SELECT id, status, attempts FROM jobs").fetchall()
        jobs = {str(row[0]): (str(row[1]), int(row[2])) for row in rows}
        pending = [job for job in jobs.values() if job[0] in ("queued", "running")]
        if not pending or time.monotonic() > deadline:
            return jobs
        time.sleep(0.2)


def test_a_postgres_restart_under_load_answers_503_then_recovers_with_nothing_lost(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    before, gap, after = RESTART_PHASES

    def restart() -> None:
        rig.pg.stop()
        time.sleep(gap)
        rig.pg.start_again()

    outcome = under_load(rig, "restart", restart, before, gap, after)

    recovery = check_outcome(rig, outcome, capsys)
    assert any(a.status == 503 for a in outcome.result.answers), "no request met the gap"
    assert recovery <= RECOVERY_SECONDS


def test_sessions_killed_mid_transaction_under_load_lose_nothing(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    database = urlsplit(rig.url).path.lstrip("/")
    cut: Counter[str] = Counter()
    before, gap, after = KILLING_PHASES

    def kill_sessions() -> None:
        # For ``gap`` seconds, and on until a session was cut mid-transaction (a busy
        # machine may leave the first rounds nothing but idle sessions to kill).
        started = time.monotonic()
        with psycopg.connect(rig.pg.admin_url, autocommit=True) as admin:
            while time.monotonic() < started + gap or (
                not cut["mid-transaction"] and time.monotonic() < started + 4 * gap
            ):
                rows = admin.execute(
                    "SELECT pg_terminate_backend(pid), state, xact_start < query_start "
                    "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend'",
                    (database,),
                ).fetchall()
                for _, state, later_statement in rows:
                    within = state == "idle in transaction" or bool(later_statement)
                    cut["mid-transaction" if within else str(state)] += 1
                time.sleep(0.1)

    outcome = under_load(rig, "terminate", kill_sessions, before, gap, after)

    with capsys.disabled():
        print(f"sessions killed: {dict(cut)}")
    assert cut["mid-transaction"] > 0, cut
    check_outcome(rig, outcome, capsys)
