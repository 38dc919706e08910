"""A mixed, concurrent load on a running ``memoryd serve``, shared by the load test
(tests/e2e/test_load.py) and the load benchmark (bench/bench_load.py).

Each client is a thread with its own ``httpx.Client`` that picks operations at random by
weight until a deadline (and never more than ``max_requests`` times): recall, remember (a
unique text each time), propose (1–3 unique items), kb search, and kb ingest (a small unique
Markdown document, uploaded as multipart or, every other time, ingested from a path on disk).
Every acknowledged write is kept so that :func:`check_writes` can look for lost ones afterwards.

Only ``base_url`` is ever contacted; callers pass a loopback address.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.distinct_texts import ACTIVITIES, PEOPLE, PLACES, TOPICS

# Operation name → share of the requests (percent).
MIX: dict[str, int] = {
    "recall": 40,
    "remember": 20,
    "propose": 15,
    "kb_search": 15,
    "kb_ingest": 10,
}
REQUEST_TIMEOUT = 120.0
# Refusals that would mean the load itself is wrong (bad token, oversized or malformed body).
WRONG_REQUEST_STATUSES = frozenset({401, 403, 413, 422})

_MOODS = (
    "amber", "cobalt", "saffron", "violet", "crimson", "emerald", "ivory", "ochre", "teal",
    "scarlet", "indigo", "silver", "copper", "jade", "russet", "azure",
)  # fmt: skip
_THINGS = (
    "lighthouse", "orchard", "glacier", "boatyard", "vineyard", "observatory", "tram depot",
    "bakery", "quarry", "ferry pier", "bell tower", "salt marsh", "windmill", "greenhouse",
    "granary", "tannery", "apiary", "distillery", "harbour crane", "paper mill",
)  # fmt: skip
_DEEDS = (
    "is repainted every spring", "hosts a lantern festival in autumn",
    "stores barrels of cider", "was rebuilt after a winter storm",
    "keeps a ledger of every visitor", "sells smoked fish on Saturdays",
    "is guarded by two grey geese", "runs on a water wheel",
    "has a clock that chimes thirteen times", "is lit by oil lamps at dusk",
)  # fmt: skip


@dataclass(frozen=True)
class Answer:
    """One answered request: when it was sent (``time.monotonic()``), how long it took (s),
    its status and its ``Retry-After`` header, if any."""

    operation: str
    sent: float
    seconds: float
    status: int
    retry_after: str | None


@dataclass
class Tally:
    """What one client saw; merged into a :class:`LoadResult` after the run."""

    latencies: dict[str, list[float]] = field(default_factory=dict)  # ms, every answered request
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    refusals: Counter[tuple[str, int, str]] = field(default_factory=Counter)  # 4xx with reason
    server_errors: list[tuple[str, int, str]] = field(default_factory=list)
    transport_errors: list[tuple[str, str]] = field(default_factory=list)
    # A 200 whose body the load could not use, or a bug in the load itself.
    client_errors: list[tuple[str, str]] = field(default_factory=list)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Acknowledged writes: memory id → the content sent when that id is a new memory of ours
    # (None when the write reinforced an existing memory).
    memories: dict[str, str | None] = field(default_factory=dict)
    documents: set[str] = field(default_factory=set)
    answers: list[Answer] = field(default_factory=list)


@dataclass
class LoadResult:
    """The merged tallies of every client, and how long the run took."""

    clients: int
    seconds: float
    elapsed: float
    latencies: dict[str, list[float]]
    statuses: Counter[tuple[str, int]]
    refusals: Counter[tuple[str, int, str]]
    server_errors: list[tuple[str, int, str]]
    transport_errors: list[tuple[str, str]]
    client_errors: list[tuple[str, str]]
    outcomes: Counter[tuple[str, str]]
    memories: dict[str, str | None]
    documents: set[str]
    answers: list[Answer] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Requests the server answered (any status)."""
        return sum(len(v) for v in self.latencies.values())

    def count(self, operation: str) -> int:
        return len(self.latencies.get(operation, []))

    def wrong_requests(self) -> Counter[tuple[str, int, str]]:
        """Refusals that say the load sent something wrong, not that the server refused."""
        return Counter({k: n for k, n in self.refusals.items() if k[1] in WRONG_REQUEST_STATUSES})


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(share * len(ordered) + 0.999) - 1))]


class _Client:
    """One load client: its own connection, random stream and unique-text counter."""

    def __init__(
        self, number: int, http: httpx.Client, scratch: Path, rng: random.Random, tally: Tally
    ) -> None:
        self.number = number
        self.http = http
        self.scratch = scratch
        self.rng = rng
        self.tally = tally
        self.serial = 0

    def unique(self) -> str:
        """A tag no other text of this run carries (client and serial, in words and digits)."""
        self.serial += 1
        return f"load note {self.number}.{self.serial}"

    def sentence(self) -> str:
        pick = self.rng.choice
        return (
            f"{pick(PEOPLE)} {pick(ACTIVITIES)} {pick(PLACES)} and talked about "
            f"{pick(TOPICS)} ({self.unique()})"
        )

    # ---------------------------------------------------------------- one request

    def send(self, operation: str, method: str, path: str, **kwargs: Any) -> Any | None:
        """Send, time and classify; the decoded JSON of a 200, else None."""
        sent = time.monotonic()
        started = time.perf_counter()
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            self.tally.transport_errors.append((operation, f"{type(error).__name__}: {error}"))
            return None
        took = (time.perf_counter() - started) * 1000
        self.tally.latencies.setdefault(operation, []).append(took)
        status = response.status_code
        self.tally.answers.append(
            Answer(operation, sent, took / 1000, status, response.headers.get("Retry-After"))
        )
        self.tally.statuses[(operation, status)] += 1
        if status >= 500:
            self.tally.server_errors.append((operation, status, response.text[:500]))
            return None
        if status >= 400:
            try:
                reason = str(response.json().get("error", ""))[:160]
            except ValueError:
                reason = response.text[:160]
            self.tally.refusals[(operation, status, reason)] += 1
            return None
        if status != 200:
            self.tally.server_errors.append((operation, status, "unexpected status"))
            return None
        try:
            return response.json()
        except ValueError:
            self.tally.server_errors.append((operation, status, "a 200 without JSON"))
            return None

    def keep_write(self, operation: str, result: dict[str, Any], sent: str) -> None:
        outcome = str(result.get("outcome"))
        self.tally.outcomes[(operation, outcome)] += 1
        memory = result.get("memory")
        if memory is not None:
            ours = outcome in ("activated", "pending")
            self.tally.memories[str(memory["id"])] = sent if ours else None

    def keep_ingest(self, operation: str, result: dict[str, Any]) -> None:
        outcome = str(result.get("outcome"))
        self.tally.outcomes[(operation, outcome)] += 1
        document = result.get("document")
        if outcome == "ok" and document is not None:
            self.tally.documents.add(str(document["id"]))

    # ----------------------------------------------------------------- operations

    def recall(self) -> None:
        pick = self.rng.choice
        message = f"What did {pick(PEOPLE)} do {pick(PLACES)}? Anything about {pick(TOPICS)}?"
        self.send("recall", "POST", "/v1/recall", json={"message": message})

    def remember(self) -> None:
        content = self.sentence()
        kind = self.rng.choice(["fact", "event"])
        result = self.send(
            "remember", "POST", "/v1/memories", json={"content": content, "kind": kind}
        )
        if result is not None:
            self.keep_write("remember", result, content)

    def propose(self) -> None:
        items: list[dict[str, Any]] = [
            {
                "kind": self.rng.choice(["fact", "event", "inference"]),
                "content": self.sentence(),
                # Mostly activated, some left for review: both are acknowledged writes.
                "confidence": self.rng.choice([0.95, 0.9, 0.85, 0.6]),
                "changes_behavior": False,
            }
            for _ in range(self.rng.randint(1, 3))
        ]
        results = self.send("propose", "POST", "/v1/propose", json={"memories": items})
        if results is None:
            return
        assert len(results) == len(items), results
        for item, result in zip(items, results, strict=True):
            self.keep_write("propose", result, item["content"])

    def kb_search(self) -> None:
        pick = self.rng.choice
        query = f"{pick(_MOODS)} {pick(_THINGS)} that {pick(_DEEDS)}"
        self.send("kb_search", "POST", "/v1/kb/search", json={"query": query})

    def kb_ingest(self) -> None:
        pick = self.rng.choice
        tag = self.unique()
        name = f"load-{self.number}-{self.serial}.md"
        title = f"{pick(_MOODS).title()} {pick(_THINGS).title()} ({tag})"
        body = " ".join(
            f"The {pick(_MOODS)} {pick(_THINGS)} of {pick(PLACES).split(' ', 1)[1]} {pick(_DEEDS)}."
            for _ in range(self.rng.randint(2, 6))
        )
        markdown = f"# {title}\n\n## Notes\n\n{body}\n\n## Provenance\n\nRecorded as {tag}.\n"
        if self.rng.random() < 0.5:
            files = {"file": (name, markdown.encode(), "text/markdown")}
            result = self.send(
                "kb_ingest", "POST", "/v1/kb/upload", files=files, data={"collection": "load"}
            )
            if result is not None:
                self.keep_ingest("kb_ingest", result)
            return
        path = self.scratch / name
        path.write_text(markdown, encoding="utf-8")
        results = self.send(
            "kb_ingest",
            "POST",
            "/v1/kb/ingest",
            json={"sources": [str(path)], "collection": "load"},
        )
        if results is not None:
            assert len(results) == 1, results
            self.keep_ingest("kb_ingest", results[0])


def run_mix(
    base_url: str,
    token: str,
    *,
    clients: int,
    seconds: float,
    scratch: Path,
    seed: int = 0,
    max_requests: int = 100_000,
    mix: dict[str, int] | None = None,
    timeout: float = REQUEST_TIMEOUT,
    sending: threading.Event | None = None,
) -> LoadResult:
    """Run ``clients`` threads for ``seconds`` (each stops by itself at the deadline or after
    ``max_requests`` requests; a request gets ``timeout`` seconds) and merge what they saw.
    ``scratch`` holds the files that are ingested by path (the server must be able to read
    them). ``sending`` is set when the clients start sending."""
    weights = mix or MIX
    names = list(weights)
    scratch.mkdir(parents=True, exist_ok=True)
    tallies = [Tally() for _ in range(clients)]
    headers = {"Authorization": f"Bearer {token}"}
    all_ready = threading.Barrier(clients + 1)
    # Set once every client is ready and the deadline runs (from then, not from the first
    # thread's start: on a busy machine the clients take a while to set up).
    go = threading.Event()
    deadline = [0.0]

    def client(number: int) -> None:
        rng = random.Random(seed * 100_003 + number)
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        with httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout, limits=limits
        ) as http:
            worker = _Client(number, http, scratch, rng, tallies[number])
            actions: dict[str, Callable[[], None]] = {
                "recall": worker.recall,
                "remember": worker.remember,
                "propose": worker.propose,
                "kb_search": worker.kb_search,
                "kb_ingest": worker.kb_ingest,
            }
            all_ready.wait(timeout=60)
            go.wait(timeout=60)
            for _ in range(max_requests):
                if time.monotonic() >= deadline[0]:
                    break
                operation = rng.choices(names, weights=[weights[n] for n in names])[0]
                try:
                    actions[operation]()
                except Exception as error:  # an unusable answer, or a bug in the load itself
                    tallies[number].client_errors.append((operation, repr(error)[:500]))

    threads = [
        threading.Thread(target=client, args=(n,), name=f"load-{n}", daemon=True)
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    all_ready.wait(timeout=60)
    started = time.monotonic()
    deadline[0] = started + seconds
    go.set()
    if sending is not None:
        sending.set()
    for thread in threads:
        # A request in flight at the deadline may take up to its timeout.
        thread.join(timeout=seconds + timeout + 60)
    elapsed = time.monotonic() - started
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        raise RuntimeError(f"load clients did not stop: {stuck}")
    return _merge(tallies, clients, seconds, elapsed)


def _merge(tallies: Iterable[Tally], clients: int, seconds: float, elapsed: float) -> LoadResult:
    merged = LoadResult(clients, seconds, elapsed, {}, Counter(), Counter(), [], [], [],
                        Counter(), {}, set())  # fmt: skip
    for tally in tallies:
        for operation, values in tally.latencies.items():
            merged.latencies.setdefault(operation, []).extend(values)
        merged.statuses.update(tally.statuses)
        merged.refusals.update(tally.refusals)
        merged.server_errors.extend(tally.server_errors)
        merged.transport_errors.extend(tally.transport_errors)
        merged.client_errors.extend(tally.client_errors)
        merged.outcomes.update(tally.outcomes)
        for memory_id, content in tally.memories.items():
            if merged.memories.get(memory_id) is None:
                merged.memories[memory_id] = content
        merged.documents |= tally.documents
        merged.answers.extend(tally.answers)
    return merged


@dataclass
class WriteCheck:
    """What :func:`check_writes` found."""

    memories_checked: int
    documents_checked: int
    lost_memories: list[tuple[str, int]]  # id, status of GET /v1/memories/{id}
    changed_memories: list[tuple[str, str, str]]  # id, sent, stored
    missing_documents: list[str]
    unready_documents: list[tuple[str, str, str | None]]  # id, status, error

    @property
    def problems(self) -> int:
        return (
            len(self.lost_memories)
            + len(self.changed_memories)
            + len(self.missing_documents)
            + len(self.unready_documents)
        )


def check_writes(base_url: str, token: str, result: LoadResult, *, threads: int = 4) -> WriteCheck:
    """Every acknowledged memory answers GET /v1/memories/{id} with 200 (and, where the write
    made it, the content sent); every acknowledged document is listed and ready."""
    headers = {"Authorization": f"Bearer {token}"}
    ids = sorted(result.memories)
    local = threading.local()
    opened: list[httpx.Client] = []
    opened_lock = threading.Lock()

    def http() -> httpx.Client:
        client: httpx.Client | None = getattr(local, "client", None)
        if client is None:
            client = httpx.Client(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT)
            local.client = client
            with opened_lock:
                opened.append(client)
        return client

    def fetch(memory_id: str) -> tuple[str, int, str | None]:
        response = http().get(f"/v1/memories/{memory_id}")
        content = response.json().get("content") if response.status_code == 200 else None
        return memory_id, response.status_code, content

    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            fetched = list(pool.map(fetch, ids))
    finally:
        for client in opened:
            client.close()
    lost = [(memory_id, status) for memory_id, status, _ in fetched if status != 200]
    changed = [
        (memory_id, sent, stored or "")
        for memory_id, status, stored in fetched
        if status == 200 and (sent := result.memories[memory_id]) is not None and stored != sent
    ]
    with httpx.Client(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT) as client:
        response = client.get("/v1/kb/documents", params={"limit": 100_000})
        response.raise_for_status()
        listed = {d["id"]: d for d in response.json()}
    missing = sorted(d for d in result.documents if d not in listed)
    unready = sorted(
        (d, listed[d]["status"], listed[d]["error"])
        for d in result.documents
        if d in listed and listed[d]["status"] != "ready"
    )
    return WriteCheck(len(ids), len(result.documents), lost, changed, missing, unready)


def summary(result: LoadResult, check: WriteCheck | None = None, *, title: str = "") -> str:
    """A plain-text report of a run."""
    lines = [title] if title else []
    lines.append(
        f"{result.clients} clients for {result.seconds:.0f} s (ran {result.elapsed:.1f} s): "
        f"{result.requests} requests served, {result.requests / result.elapsed:.1f} requests/s"
    )
    lines.append(f"{'operation':<10} {'count':>7} {'req/s':>7} {'p50 ms':>9} {'p95 ms':>9}")
    for operation in MIX:
        values = result.latencies.get(operation, [])
        lines.append(
            f"{operation:<10} {len(values):>7} {len(values) / result.elapsed:>7.1f} "
            f"{percentile(values, 0.5):>9.1f} {percentile(values, 0.95):>9.1f}"
        )
    statuses = ", ".join(f"{op} {code}: {n}" for (op, code), n in sorted(result.statuses.items()))
    lines.append(f"statuses: {statuses}")
    outcomes = ", ".join(f"{op} {name}: {n}" for (op, name), n in sorted(result.outcomes.items()))
    lines.append(f"outcomes: {outcomes}")
    lines.append(
        f"acknowledged writes: {len(result.memories)} memories, {len(result.documents)} documents"
    )
    lines.append(
        f"errors: {len(result.server_errors)} server (5xx), "
        f"{len(result.transport_errors)} transport, "
        f"{len(result.client_errors)} unusable answers, "
        f"{sum(result.refusals.values())} refusals (4xx)"
    )
    for (operation, status, reason), n in result.refusals.most_common(10):
        lines.append(f"  4xx {operation} {status} x{n}: {reason}")
    for operation, status, body in result.server_errors[:5]:
        lines.append(f"  5xx {operation} {status}: {body[:200]}")
    for operation, error in result.transport_errors[:5]:
        lines.append(f"  transport {operation}: {error[:200]}")
    for operation, error in result.client_errors[:5]:
        lines.append(f"  unusable answer {operation}: {error[:200]}")
    if check is not None:
        lines.append(
            f"after the run: {check.memories_checked} memories and {check.documents_checked} "
            f"documents checked; {len(check.lost_memories)} lost memories, "
            f"{len(check.changed_memories)} changed, {len(check.missing_documents)} documents "
            f"missing, {len(check.unready_documents)} not ready"
        )
    return "\n".join(lines)
