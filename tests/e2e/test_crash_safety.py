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

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from memoryd.app import open_service
from memoryd.clock import utc_now
from memoryd.consolidation import Stage
from memoryd.ids import IdGenerator
from memoryd.jobs import JobStatus, RetryPolicy
from memoryd.kb.model import ChunkKey, DocumentStatus
from memoryd.llm import Gateway, load_routes
from memoryd.model import Actor, AuditEntry, Kind, Memory, Source, Status
from memoryd.service import CONSOLIDATION_LOCK, MemoryService
from memoryd.settings import resolve_settings
from memoryd.textutil import query_terms
from tests.crash_child import TURN_MARK, CrashEmbedder, turn_reply_items, words
from tests.fake_llm import FakeLLMServer, Recorded, Reply
from tests.pg import TestPostgres

KILLS = 50
BACKENDS = ("sqlite", "postgres")
OPERATIONS = ("kb", "propose", "observe", "consolidate")
ROOT = Path(__file__).resolve().parents[2]
EMBEDDER = CrashEmbedder()  # the parent's one embedder; the victims use the same class
EMPTY_HASH = hashlib.sha256(b"   \n").hexdigest()  # what the kb victim sends to fail
LLM_MODEL = "fake-crash-extractor"
MADE_UP = re.compile(r"(?:[bcdfghjklmnpqrstvwxz][aeiou]){3,4}")  # tests.crash_child.words


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


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    server = ForkServer(tmp_path_factory.mktemp("fork-server"))
    yield server
    server.close()


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
        )
        if retry_policy is not None:
            service.retry_policy = retry_policy
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
    deadline = time.monotonic() + 60
    while not _ready(stdout):
        if time.monotonic() > deadline or _gone(pid):
            os.kill(pid, signal.SIGKILL)
            code = fork_server.reap(pid)
            log = stderr.read_text() if stderr.exists() else ""
            raise AssertionError(f"the victim never got READY (exit {code}):\n{log[-4000:]}")
        time.sleep(0.005)
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


# ---------------------------------------------------------------------------- the checks


class Operation:
    """One operation's victim parameters and the checks after each kill."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        self.store = store
        self.rng = rng
        self.tally = tally

    def params(self, cycle: int) -> dict[str, Any]:
        """The victim's parameters for one cycle (the parent may prepare the store here)."""
        return {"seed": self.rng.randrange(2**32), "cycle": cycle}

    def check(self, service: MemoryService, victim: Victim) -> None:
        """After a kill."""
        raise NotImplementedError

    def finish(self) -> None:
        """After the last kill: resume what is left and check the final state."""


def check_integrity(service: MemoryService, tally: Tally) -> None:
    errors = service.store.integrity_errors()
    tally.integrity_errors += len(errors)
    assert errors == [], errors


class KbIngest(Operation):
    """Documents: all chunks of a ready one (with its last acknowledged text, or a newer one
    whose ingest was cut off), none of a failed one."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.ready: dict[str, str] = {}  # uri → content hash, as last seen
        self.failed: set[str] = set()

    def params(self, cycle: int) -> dict[str, Any]:
        known = sorted(self.ready)
        return {**super().params(cycle), "ready": self.rng.sample(known, min(6, len(known)))}

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        kb = service.store.kb
        events: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        for word, payload in victim.lines:
            events[payload["uri"]].append((word, payload))
        for uri, seen in events.items():
            self._check_document(service, uri, seen)
        # Nothing half ingested anywhere: the chunks of ready documents are all there is.
        documents = kb.documents()
        ready = [d for d in documents if d.status is DocumentStatus.READY]
        assert kb.chunk_count() == sum(d.chunk_count for d in ready)
        for document in documents:
            if document.status is not DocumentStatus.READY:
                assert kb.chunks(document.id) == [], document

    def _check_document(
        self, service: MemoryService, uri: str, seen: list[tuple[str, dict[str, Any]]]
    ) -> None:
        kb = service.store.kb
        hashes = {self.ready[uri]} if uri in self.ready else set()
        must_exist = uri in self.ready or uri in self.failed
        acked: dict[str, Any] | None = None
        for word, payload in seen:
            if word == "TRY":
                if payload["hash"] != EMPTY_HASH:
                    hashes.add(payload["hash"])  # may have landed before the kill
                continue
            self.tally.acked += 1
            must_exist = True
            if payload["outcome"] == "ok":
                hashes = {payload["hash"]}
                acked = payload
            else:
                assert payload["outcome"] == "failed", payload
                assert payload["hash"] == EMPTY_HASH, payload
        document = kb.document_by_uri(uri)
        if document is None:
            assert not must_exist, f"acknowledged document {uri} is gone"
            return
        chunks = kb.chunks(document.id)
        if document.status is DocumentStatus.FAILED:
            assert uri not in self.ready and chunks == [], (document, len(chunks))
            self.failed.add(uri)
            return
        assert document.status is DocumentStatus.READY, document
        assert document.content_hash in hashes, (uri, document.content_hash, hashes)
        if acked is not None:
            assert document.id == acked["doc"]
            if document.content_hash == acked["hash"]:
                assert document.chunk_count == acked["chunks"]
        assert document.chunk_count > 0
        assert [c.position for c in chunks] == list(range(document.chunk_count)), uri
        vectors = EMBEDDER.embed([c.embedded_text for c in chunks])
        for chunk, vector in zip(chunks, vectors, strict=True):
            key = ChunkKey(document.id, chunk.position)
            assert key in [k for k, _ in kb.nearest_chunks(vector, 3)], f"{key}: no vector hit"
            # The victim's made-up words, not the headings' words that every chunk shares.
            terms = [
                t for t in query_terms(chunk.text[chunk.overlap_chars :]) if MADE_UP.fullmatch(t)
            ]
            assert key in kb.keyword_chunks(terms[:6], 10), f"{key}: no keyword hit"
        self.ready[uri] = document.content_hash or ""
        self.tally.extra["chunks checked"] = self.tally.extra.get("chunks checked", 0) + len(chunks)

    def finish(self) -> None:
        self.store.close()
        with closing(self.store.open()) as service:
            check_integrity(service, self.tally)
            kb = service.store.kb
            for document in kb.documents():
                chunks = kb.chunks(document.id)
                if document.status is DocumentStatus.READY:
                    assert len(chunks) == document.chunk_count > 0, document
                else:
                    assert chunks == [], document
            self.tally.extra["documents"] = len(kb.documents())


class Propose(Operation):
    """Batches of five: all five memories or none, acknowledged ones present, each findable
    by its vector and its words."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.count = 0

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        memories = service.store.memories
        total = memories.count()
        added = total - self.count
        newest = memories.query(limit=added) if added else []
        assert len(newest) == added
        by_content = {m.content: m for m in newest}
        assert len(by_content) == added, "two memories with one text"
        acks = {a["batch"]: a for a in victim.of("ACK")}
        tries = victim.of("TRY")
        landed = 0
        for index, tried in enumerate(tries):
            present = [by_content.get(c) for c in tried["contents"]]
            if not any(present):
                assert tried["batch"] not in acks, f"acknowledged batch {tried['batch']} is gone"
                continue
            assert all(present), f"batch {tried['batch']} landed in part: {present}"
            landed += 1
            ack = acks.get(tried["batch"])
            if ack is None:
                assert index == len(tries) - 1, f"batch {tried['batch']} landed, never acked"
            else:
                self.tally.acked += 5
                assert [m.id for m in present if m] == ack["ids"]
                assert ack["outcomes"] == ["activated"] * 3 + ["pending"] * 2
            if index == len(tries) - 1 or self.rng.random() < 0.1:
                self._check_batch(service, [m for m in present if m])
        assert added == 5 * landed, f"{added} new memories for {landed} whole batches"
        audit = Counter(
            e.memory_id
            for e in service.store.audit.for_memories([m.id for m in newest])
            if e.action == "create"
        )
        assert all(audit[m.id] == 1 for m in newest), "a memory without its create audit"
        self.count = total

    def _check_batch(self, service: MemoryService, batch: list[Memory]) -> None:
        """Statuses as the policy decided, and each memory found by its own vector and
        words."""
        assert [m.status for m in batch] == [Status.ACTIVE] * 3 + [Status.PENDING] * 2
        assert batch[3].slot is not None
        vectors = EMBEDDER.embed([m.content for m in batch])
        for memory, vector in zip(batch, vectors, strict=True):
            hits = service.store.vectors.nearest(vector, [memory.status], 1)
            assert [h.memory_id for h in hits] == [memory.id], memory
        words = [t for m in batch[:3] for t in query_terms(m.content) if MADE_UP.fullmatch(t)]
        found = {hit.memory_id for hit in service.store.text.search(words, 10).hits}
        assert {m.id for m in batch[:3]} <= found, "an active memory missing from text search"

    def finish(self) -> None:
        self.store.close()
        with closing(self.store.open()) as service:
            check_integrity(service, self.tally)
            rows = service.list_memories()
            assert len(rows) == service.store.memories.count() == self.count
            assert Counter(m.status for m in rows) == {
                Status.ACTIVE: len(rows) * 3 // 5,
                Status.PENDING: len(rows) * 2 // 5,
            }
            self.tally.extra["memories"] = len(rows)


class Observe(Operation):
    """Extraction jobs: done with exactly its memories, or not done and none; acknowledged
    turns and finished jobs present; afterwards every job runs exactly once."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.tags: dict[str, str] = {}  # job id → turn tag

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        jobs = {j.id: j for j in service.store.jobs.recent(1_000_000)}
        for ack in victim.of("ACK"):
            if "turn" in ack:
                self.tally.acked += 1
                assert ack["queued"] and ack["job"] in jobs, f"acknowledged turn lost: {ack}"
                self.tags[ack["job"]] = ack["turn"]
        memories = self._by_job(service, jobs)
        for ack in victim.of("ACK"):
            if "job" in ack and "turn" not in ack:
                self.tally.acked += 1 + len(ack["memories"])
                assert ack["status"] == "done", ack
                assert jobs[ack["job"]].status is JobStatus.DONE
                assert sorted(ack["memories"]) == sorted(m.id for m in memories[ack["job"]])
        self._check_jobs(jobs, memories)

    def _by_job(self, service: MemoryService, jobs: dict[str, Any]) -> dict[str, list[Memory]]:
        found: dict[str, list[Memory]] = defaultdict(list)
        contents = Counter()
        for memory in service.list_memories():
            assert memory.source_ref is not None and memory.source_ref.startswith("job:")
            found[memory.source_ref.removeprefix("job:")].append(memory)
            contents[memory.content] += 1
        assert set(found) <= set(jobs), "memories of a job that does not exist"
        doubled = [c for c, n in contents.items() if n > 1]
        assert not doubled, f"a turn was extracted twice: {doubled[:3]}"
        return found

    def _check_jobs(self, jobs: dict[str, Any], memories: dict[str, list[Memory]]) -> None:
        for job in jobs.values():
            assert job.status is not JobStatus.FAILED, job
            tag = self.tags.get(job.id)
            if tag is None and job.status is not JobStatus.DONE:
                found = re.search(re.escape(TURN_MARK) + r"\w+", job.payload["user"])
                assert found is not None, job.payload
                tag = self.tags[job.id] = found.group()
            mine = sorted(m.content for m in memories.get(job.id, []))
            if job.status is JobStatus.DONE:
                if tag is not None:
                    assert mine == sorted(i["content"] for i in turn_reply_items(tag)), job
                else:
                    assert len(mine) == 2 and all(TURN_MARK in c for c in mine), job
            else:
                assert mine == [], f"job {job.id} is {job.status.value} but has memories"

    def finish(self) -> None:
        policy = RetryPolicy(lease_seconds=1)
        self.store.close()
        with closing(self.store.open(retry_policy=policy)) as service:
            jobs = service.store.jobs.recent(1_000_000)
            statuses = Counter(j.status.value for j in jobs)
            # Claims of killed victims (running) come back once their lease is over; "now" a
            # while ahead also passes any retry wait.
            reports = service.run_jobs(now=utc_now() + timedelta(hours=1))
            assert len(reports) == statuses["queued"] + statuses["running"], statuses
            after = {j.id: j for j in service.store.jobs.recent(1_000_000)}
            assert {j.status for j in after.values()} == {JobStatus.DONE}, Counter(
                j.status.value for j in after.values()
            )
            self._check_jobs(after, self._by_job(service, after))
            check_integrity(service, self.tally)
            self.tally.extra["jobs"] = len(after)
            self.tally.extra["reclaimed"] = statuses["running"]
            self.tally.extra["drained"] = statuses["queued"]


# Consolidation: the parent seeds old memories that fall due one slice per hour of the
# victims' clock (each run moves it an hour), so most runs have work in every deterministic
# stage; a new batch comes when the last one is done.
T0 = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
SLICES = 16  # at first; a batch gets more slices on a backend that finishes one per cycle
TWINS = 8


@dataclass(frozen=True)
class Seeded:
    """A memory the parent seeded and the stage that acts on it."""

    id: str
    role: str  # event, fact, hunch, weak-hunch, guess, twin, original
    cycle: int


class Consolidate(Operation):
    """Every seeded memory wholly before or wholly after its stage, every acknowledged step
    applied, and a later run (taking over the dead run's lease) finishing the job."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.open: list[Seeded] = []
        self.ids = IdGenerator()
        self.settled = 0
        self.batches = 0
        self.clock = T0  # the "now" of the next run: a killed run is run again
        self.slices = SLICES
        self.seeded_in = 0

    def params(self, cycle: int) -> dict[str, Any]:
        if not self.open:
            # Victims should die mid-batch: a batch done within a cycle gets twice the slices.
            if self.batches and cycle - self.seeded_in <= 1:
                self.slices = min(self.slices * 2, 8 * SLICES)
            elif cycle - self.seeded_in >= 4:
                self.slices = max(self.slices // 2, SLICES // 2)
            with self.store.session() as service:
                self._seed(service, self.clock, cycle)
            self.batches += 1
            self.seeded_in = cycle
        return {**super().params(cycle), "start": self.clock.isoformat(), "step_seconds": 3600}

    def _seed(self, service: MemoryService, base: datetime, cycle: int) -> None:
        rng = random.Random(cycle)
        rows: list[tuple[Memory, str]] = []

        def due(index: int, age: timedelta) -> datetime:
            return base + timedelta(hours=index % self.slices) - age - timedelta(minutes=1)

        def new(kind: Kind, status: Status, at: datetime, confidence: float, text: str) -> Memory:
            return Memory(
                id=self.ids.new_id(at),
                kind=kind,
                status=status,
                content=f"{text} {' '.join(words(rng, 6))} (cycle {cycle})",
                source=Source.TURN,
                created_at=at,
                last_confirmed_at=at,
                confidence=confidence,
                occurred_at=at if kind is Kind.EVENT else None,
            )

        for i in range(2 * self.slices):
            rows.append((new(Kind.EVENT, Status.ACTIVE, due(i, timedelta(days=180)), 0.9,
                             "crash event"), "event"))  # fmt: skip
            rows.append((new(Kind.FACT, Status.ACTIVE, due(i, timedelta(days=365)), 0.9,
                             "crash fact"), "fact"))  # fmt: skip
            weak = i % 2 == 0
            rows.append((new(Kind.INFERENCE, Status.ACTIVE, due(i, timedelta(days=90)),
                             0.5 if weak else 0.8, "crash hunch"),
                         "weak-hunch" if weak else "hunch"))  # fmt: skip
            rows.append((new(Kind.FACT, Status.PENDING, due(i, timedelta(days=60)), 0.3,
                             "crash guess"), "guess"))  # fmt: skip
        for _ in range(TWINS):
            original = new(Kind.FACT, Status.PENDING, base - timedelta(days=10), 0.9, "crash twin")
            later = base - timedelta(days=9)
            twin = replace(original, id=self.ids.new_id(later), created_at=later)
            rows += [(original, "original"), (twin, "twin")]
        vectors = EMBEDDER.embed([m.content for m, _ in rows])
        with service.store.transaction():
            for (memory, _), vector in zip(rows, vectors, strict=True):
                service.store.memories.insert(memory, vector)
                service.store.audit.append(
                    AuditEntry(memory.id, memory.created_at, Actor.POLICY, "create", None,
                               memory.status, "seeded by the crash harness")
                )  # fmt: skip
        self.open += [Seeded(m.id, role, cycle) for m, role in rows]

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        tried = victim.of("TRY")
        if tried:
            self.clock = datetime.fromisoformat(tried[-1]["now"])
        states = self._states(service)
        for ack in victim.of("ACK"):
            for memory_id, action, stage in ack["steps"]:
                self.tally.acked += 1
                assert states.get(memory_id, "after") == "after", (memory_id, action, stage)
                memory = service.store.memories.get(memory_id)
                assert memory is not None and memory.status is not Status.ACTIVE, memory
        done = sum(states[s.id] == "after" for s in self.open if s.role != "original")
        total = sum(s.role != "original" for s in self.open)
        if 0 < done < total:
            self.tally.extra["partial states"] = self.tally.extra.get("partial states", 0) + 1
        self._settle(service, states)

    def _states(self, service: MemoryService) -> dict[str, str]:
        """Each open seeded memory: "before" or "after" its stage (asserting it is one)."""
        memories = service.store.memories
        rows = memories.get_many([s.id for s in self.open])
        successors = memories.get_many(
            [m.superseded_by for m in rows.values() if m.superseded_by is not None]
        )
        entries: dict[str, list[AuditEntry]] = defaultdict(list)
        ids = [*rows, *successors]
        for entry in service.store.audit.for_memories(ids):
            entries[entry.memory_id].append(entry)
        stages = {s.value for s in Stage}

        def rules(memory_id: str) -> list[str]:
            return [e.rule for e in entries[memory_id] if e.rule in stages]

        states: dict[str, str] = {}
        for seeded in self.open:
            memory = rows[seeded.id]
            before = rules(seeded.id) == [] and memory.superseded_by is None
            if seeded.role == "event":
                after = memory.status is Status.ARCHIVED and rules(memory.id) == [
                    "archive-episodic"
                ]
                before = before and memory.status is Status.ACTIVE
            elif seeded.role in ("fact", "hunch"):
                stage, factor = (
                    ("decay-semantic", 0.8) if seeded.role == "fact" else ("decay-inferences", 0.5)
                )
                new = successors.get(memory.superseded_by or "")
                after = (
                    memory.status is Status.ARCHIVED
                    and rules(memory.id) == [stage]
                    and new is not None
                    and new.status is Status.ACTIVE
                    and new.supersedes == memory.id
                    and new.content == memory.content
                    and abs(new.confidence - round(memory.confidence * factor, 6)) < 1e-6
                    and rules(new.id) == [stage]
                )
                before = before and memory.status is Status.ACTIVE
            elif seeded.role == "weak-hunch":
                after = memory.status is Status.ARCHIVED and rules(memory.id) == [
                    "decay-inferences"
                ]
                after = after and memory.superseded_by is None
                before = before and memory.status is Status.ACTIVE
            elif seeded.role == "guess":
                after = memory.status is Status.ARCHIVED and rules(memory.id) == ["demote-pending"]
                before = before and memory.status is Status.PENDING
            elif seeded.role == "twin":
                after = memory.status is Status.REJECTED and rules(memory.id) == ["dedupe-pending"]
                before = before and memory.status is Status.PENDING
            else:  # the older of two twins stays pending
                after = before = memory.status is Status.PENDING and rules(memory.id) == []
            assert before or after, (seeded, memory, entries[memory.id])
            states[seeded.id] = "after" if after and not before else "before"
            if seeded.role == "original":
                states[seeded.id] = "after"
        return states

    def _settle(self, service: MemoryService, states: dict[str, str]) -> None:
        """Stop following cycles whose memories are all after their stage; the owner
        archives the kept twins, so the pending queue stays short."""
        by_cycle: dict[int, list[Seeded]] = defaultdict(list)
        for seeded in self.open:
            by_cycle[seeded.cycle].append(seeded)
        for cycle, seeded in by_cycle.items():
            if all(states[s.id] == "after" for s in seeded):
                for s in seeded:
                    if s.role == "original":
                        service.archive(s.id)
                self.open = [s for s in self.open if s.cycle != cycle]
                self.settled += len(seeded)

    def finish(self) -> None:
        self.store.close()
        with closing(self.store.open()) as service:
            # At once, as after a reboot: the dead run's lease is taken over.
            service.consolidate(now=self.clock + timedelta(days=30))
            check_integrity(service, self.tally)
            states = self._states(service)
            assert set(states.values()) <= {"after"}, Counter(states.values())
            assert service.store.lock_holder(CONSOLIDATION_LOCK) is None
            self._settle(service, states)
            assert self.open == []
            self.tally.extra["seeded"] = self.settled
            self.tally.extra["batches"] = self.batches


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
