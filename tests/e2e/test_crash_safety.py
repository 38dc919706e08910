"""SIGKILL at random points during KB ingest, propose, extraction jobs and consolidation, on
SQLite and on PostgreSQL: after every kill the store is sound, nothing is half written, every
acknowledged write is there, and the queues pick up where the dead process left off.

Each crash cycle forks one victim (tests/crash_child.py) from a warm fork server. The victim
opens the store, prints READY, and repeats its operation, printing ``TRY`` before each service
call and ``ACK`` only after the call returned. The parent waits a random 0.2-1.5 s after READY
(seeded per case), sends SIGKILL, and then checks the store in-process (SQLite: with a fresh
service, so that every victim opens a store nobody holds; PostgreSQL: once the dead victim's
sessions are gone from the server):

- ``store.integrity_errors() == []``;
- nothing half written: a ready document has exactly ``chunk_count`` chunks (positions 0..n-1),
  each found by the keyword and the vector search, and a failed one has none; a proposal batch
  landed whole or not at all; an extraction job is done with all its memories or has none; a
  consolidation stage changed every memory it covers or none;
- every acknowledged write is there (documents with their text, memories, finished jobs with
  their memories, consolidation steps);
- after the kills, a fresh service finishes what is left: queued and dead-claimed extraction
  jobs run once each (a claim by a killed process is taken back after its lease), and a
  consolidation takes over the dead run's lease and finishes the stages.

The store lives on across the cycles of a case, so every victim also opens a store that the
previous one left behind mid-write (SQLite's WAL recovery; PostgreSQL's aborted transactions).
"""

from __future__ import annotations

import json
import random
import re
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.crash_child import TURN_MARK, turn_reply_items
from tests.fake_llm import FakeLLMServer, Recorded, Reply
from tests.pg import TestPostgres

from .crash_checks import KbIngest, Observe, Operation, Propose
from .crash_consolidate_checks import Consolidate
from .crash_harness import ForkServer, Store, Tally, run_victim

KILLS = 50
BACKENDS = ("sqlite", "postgres")
OPERATIONS = ("kb", "propose", "observe", "consolidate")
LLM_MODEL = "fake-crash-extractor"


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    server = ForkServer(tmp_path_factory.mktemp("fork-server"))
    yield server
    server.close()


OPERATION_CLASSES: dict[str, type[Operation]] = {
    "kb": KbIngest,
    "propose": Propose,
    "observe": Observe,
    "consolidate": Consolidate,
}


# ---------------------------------------------------------------------------- the cases


def extractor(request: Recorded) -> Reply:
    """The fake model: the proposals `tests.crash_child.turn_reply_items` makes for the turn
    the request carries."""
    found = re.search(re.escape(TURN_MARK) + r"\w+", json.dumps(request.body))
    assert found is not None, request.body
    return Reply(json.dumps({"memories": turn_reply_items(found.group())}))


@pytest.fixture
def store_factory(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[str, dict[str, str]], Store]]:
    made: list[Store] = []

    def make(backend: str, llm_env: dict[str, str]) -> Store:
        home = tmp_path / "home"
        home.mkdir()
        if backend == "sqlite":
            store = Store(backend, str(tmp_path / "memoryd.db"), home, llm_env)
        else:
            server: TestPostgres = request.getfixturevalue("postgres_server")
            store = Store(backend, server.create_database(), home, llm_env, server)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
        if store.server is not None:
            store.server.drop_database(store.location)


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_leaves_a_sound_store_with_every_acknowledged_write(
    backend: str,
    operation: str,
    fork_server: ForkServer,
    store_factory: Callable[[str, dict[str, str]], Store],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, object], None],
) -> None:
    started = time.monotonic()
    rng = random.Random(zlib.crc32(f"crash-safety/{backend}/{operation}".encode()))
    llm: FakeLLMServer | None = None
    llm_env: dict[str, str] = {}
    if operation == "observe":
        llm = FakeLLMServer("openai", default=extractor)
        llm_env = {
            "MEMORYD_LLM_PROVIDER": "openai",
            "MEMORYD_LLM_MODEL": LLM_MODEL,
            "MEMORYD_LLM_BASE_URL": llm.sdk_base_url,
            "MEMORYD_LLM_API_KEY": "crash-test-key",
            "MEMORYD_LLM_TIMEOUT": "30",
            "MEMORYD_LLM_MAX_RETRIES": "0",
        }
    try:
        store = store_factory(backend, llm_env)
        tally = Tally()
        checks = OPERATION_CLASSES[operation](store, rng, tally)
        with store.session():
            pass  # create the store (and record the embedder) before the first victim
        for cycle in range(KILLS):
            params = checks.params(cycle)
            delay = rng.uniform(0.2, 1.5)
            victim = run_victim(fork_server, tmp_path, operation, store, params, llm_env, delay)
            tally.kills += 1
            tally.mid_call += victim.killed_mid_call
            checked = time.monotonic()
            with store.session() as service:
                checks.check(service, victim)
            tally.checking += time.monotonic() - checked
        checks.finish()
        log = tmp_path / "victims.log"
        takeovers = log.read_text().count("taking over the lease") if log.exists() else 0
    finally:
        if llm is not None:
            llm.stop()
    elapsed = time.monotonic() - started
    if operation == "consolidate":
        tally.extra["lease takeovers"] = takeovers
    extra = ", ".join(f"{v} {k}" for k, v in tally.extra.items())
    summary = (
        f"crash-safety {backend}/{operation}: {tally.kills} kills ({tally.mid_call} inside a "
        f"service call), {tally.acked} acknowledged writes checked, "
        f"{tally.integrity_errors} integrity errors, {extra}; {elapsed:.1f}s "
        f"({tally.checking:.1f}s checking)"
    )
    record_property("crash_summary", summary)
    with capsys.disabled():
        print("\n" + summary)
    assert tally.kills == KILLS
    assert tally.mid_call >= KILLS // 4, "most kills fell between calls: the test proved little"
    if operation == "consolidate":
        assert takeovers >= KILLS // 4, "few kills left a lease behind for the next run"
