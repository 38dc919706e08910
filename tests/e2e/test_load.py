"""``memoryd serve`` under a mixed concurrent load (loopback only): no 5xx, no transport
errors, no lost writes.

32 clients (threads, one ``httpx.Client`` each) run for LOAD_SECONDS against a fresh SQLite
store: recall 40 %, remember 20 %, propose 15 %, kb search 15 %, kb upload/ingest 10 % (the
driver is tests/load_mix.py, shared with bench/bench_load.py). Afterwards every acknowledged
memory must answer GET /v1/memories/{id} with 200 and every acknowledged document must be
listed and ready. A summary is printed whether the test passes or not.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.load_mix import MIX, check_writes, run_mix, summary

from .conftest import Cli
from .server import serving, store_env

LOAD_SECONDS = 60
CLIENTS = 32
# Far above what 32 clients can send in LOAD_SECONDS here; only a bound on the loop.
MAX_REQUESTS_PER_CLIENT = 20_000


@dataclass
class LoadServer:
    base_url: str
    token: str
    root: Path
    log: Path


@pytest.fixture(scope="module")
def load_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadServer]:
    root = tmp_path_factory.mktemp("load")
    env = store_env(root)
    Cli(env=env, cwd=root).ok("init")
    log = root / "serve.log"
    with serving(env, root, log=log) as running:
        token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
        yield LoadServer(running.base_url, token, root, log)


def test_mixed_load_answers_every_request_and_loses_no_write(
    load_server: LoadServer, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_mix(
        load_server.base_url,
        load_server.token,
        clients=CLIENTS,
        seconds=LOAD_SECONDS,
        scratch=load_server.root / "ingest",
        max_requests=MAX_REQUESTS_PER_CLIENT,
    )
    check = check_writes(load_server.base_url, load_server.token, result)
    with capsys.disabled():
        print("\n" + summary(result, check, title="memoryd serve on SQLite, mixed load"))

    assert not result.server_errors, result.server_errors[:5]
    assert not result.transport_errors, result.transport_errors[:5]
    assert not result.client_errors, result.client_errors[:5]
    wrong = result.wrong_requests()
    assert not wrong, f"the load sent requests the server had to refuse: {wrong}"
    assert {code for (_, code) in result.statuses} <= {200, 400, 404, 409}, result.statuses
    # Every operation ran, and writes were acknowledged.
    assert all(result.count(op) > 0 for op in MIX), result.latencies.keys()
    assert result.memories, "no write was acknowledged"
    assert result.documents, "no document was acknowledged"
    failed_ingests = {k: n for k, n in result.outcomes.items() if k == ("kb_ingest", "failed")}
    assert not failed_ingests, failed_ingests
    # No lost writes.
    assert not check.lost_memories, check.lost_memories[:10]
    assert not check.changed_memories, check.changed_memories[:5]
    assert not check.missing_documents, check.missing_documents[:10]
    assert not check.unready_documents, check.unready_documents[:10]
    # And the server is still up and answering.
    assert httpx.get(load_server.base_url + "/v1/health", timeout=10).status_code == 200


def test_concurrent_uploads_of_one_file_name_never_answer_5xx(load_server: LoadServer) -> None:
    """Two owners (or one retrying client) uploading the same file name at once: each upload
    either replaces the document or is refused, but the server never fails with a 500, and one
    ready document is left for that name."""
    headers = {"Authorization": f"Bearer {load_server.token}"}
    statuses: Counter[int] = Counter()
    bodies: list[str] = []
    resets: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(6)

    def upload(number: int) -> None:
        with httpx.Client(base_url=load_server.base_url, headers=headers, timeout=120) as http:
            start.wait(timeout=60)
            for round_ in range(3):
                text = f"# Tide Table\n\nVersion {number}.{round_}: the pier floods at noon.\n"
                try:
                    response = http.post(
                        "/v1/kb/upload",
                        files={"file": ("tide-table.md", text.encode(), "text/markdown")},
                        data={"collection": "race"},
                    )
                except httpx.HTTPError as error:
                    # uvicorn closes a connection after an unhandled error: the next request
                    # on it is reset.
                    with lock:
                        resets.append(f"{type(error).__name__}: {error}")
                    continue
                with lock:
                    statuses[response.status_code] += 1
                    if response.status_code >= 500:
                        bodies.append(response.text[:300])

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert not any(t.is_alive() for t in threads)
    assert all(code < 500 for code in statuses) and not resets, (
        f"statuses {dict(statuses)}, transport errors {resets}; a 5xx body: {bodies[:1]}; "
        f"server log: {_last_error(load_server.log)}"
    )
    with httpx.Client(base_url=load_server.base_url, headers=headers, timeout=60) as http:
        listed = http.get("/v1/kb/documents", params={"collection": "race"}).json()
    assert [(d["source_uri"], d["status"]) for d in listed] == [("upload:tide-table.md", "ready")]


def _last_error(log: Path) -> str:
    """The last line of the server log that names an exception."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if "Error" in line]
    return lines[-1] if lines else "(none)"
