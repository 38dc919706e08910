"""Write-path benchmark for memoryd: remember/propose latency, embedding speed, bytes per memory.

Run from the project root:

    .venv/bin/python bench/bench_write.py [--sizes 1000,10000] [--ops 200] [--out FILE]
    .venv/bin/python bench/bench_write.py --tree old=../old/src --tree new=src --rounds 3

Everything runs on a fresh SQLite store in a temporary directory with the real local embedder
(MiniLM int8 on onnxruntime), loaded and warmed before anything is timed. The store is filled to
each size in turn (the smaller size's timed writes stay in the store and count towards the next
fill). Results are Markdown tables on stdout (and in FILE with --out); progress goes to stderr.
This is a benchmark, not a test: it asserts nothing about speed.

``--tree NAME=SRC`` (repeated) runs the whole measurement in a child process per checkout,
``--rounds`` times, interleaved, and prints each round's figures and the ratio of the medians
(write_trees.py); ``--skip-embedding`` leaves out the embedder's own throughput rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import sqlean
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

import moved_modules  # noqa: F401  (an old checkout's modules under today's paths)
from corpus import Corpus
from report import Meter, progress
from stores import WrappedEmbedder
from trees import add_tree_arguments, parse_trees
from write_results import EmbedRow, FillRun, SizeRow, WriteRun, WriteSample, render
from write_trees import compare_trees, summary

from memoryd.config.settings import resolve_settings
from memoryd.memory.model import Kind, Source
from memoryd.memory.proposal_policy import MAX_ITEMS

# Private, but the only way to find the tokenizer file LocalMiniLM reads; used read-only to
# count word pieces and windows exactly as the embedder cuts them.
from memoryd.providers.embedder import (
    WINDOW_OVERLAP,
    WINDOW_PIECES,
    LocalMiniLM,
    Matrix,
    minilm_tokenizer_file,
)
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.service import MemoryService, WriteResult
from memoryd.storage.protocols import Store, VectorHit, VectorSearch
from memoryd.wiring import open_store

PROPOSE_BATCH = 5
WARMUP_OPS = 10
SHORT_TEXTS = 960
SHORT_BATCH = 32
SINGLE_TEXTS = 200
CHUNK_TOKENS = 500
CHUNK_TEXTS = 48
CHUNK_BATCH = 8

# ---------------------------------------------------------------------------- instrumentation


class MeteredEmbedder(WrappedEmbedder):
    """The real embedder, with the time spent embedding recorded."""

    def __init__(self, inner: LocalMiniLM) -> None:
        super().__init__(inner)
        self.meter = Meter()

    def embed(self, texts: list[str]) -> Matrix:
        """Embed through the wrapped model, metered."""
        return self.meter.timed(lambda: self.inner.embed(texts))


class MeteredVectors:
    """The store's vector search, with the time spent in KNN queries recorded."""

    def __init__(self, inner: VectorSearch) -> None:
        self.inner = inner
        self.meter = Meter()

    def nearest(self, *args: Any, **kwargs: Any) -> list[VectorHit]:
        """KNN through the wrapped backend, metered (arguments passed through unchanged)."""
        return self.meter.timed(lambda: self.inner.nearest(*args, **kwargs))


class MeteredStore:
    """A SQLite store whose vector search is metered. Every other attribute is looked up on the
    wrapped store, so members added to the Store protocol later pass through untouched."""

    def __init__(self, inner: Store, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.vectors = MeteredVectors(inner.vectors)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def as_store(self) -> Store:
        """This wrapper typed as the protocol the service expects (it delegates the rest)."""
        return cast(Store, self)


# ------------------------------------------------------------------------------ measurement


def measure_writes(
    service: MemoryService,
    embedder: MeteredEmbedder,
    store: MeteredStore,
    operation: str,
    items_per_op: int,
    ops: int,
    write: Callable[[], list[WriteResult]],
) -> WriteRun:
    """Run ``write`` WARMUP_OPS times untimed, then ``ops`` times timed, one op at a time."""
    for _ in range(WARMUP_OPS):
        write()
    before = store.memories.count()
    run = WriteRun(operation, before, before, 0.0, items_per_op)
    started = time.perf_counter()
    for _ in range(ops):
        embed0, knn0 = embedder.meter.seconds, store.vectors.meter.seconds
        calls0 = store.vectors.meter.calls
        start, start_cpu = time.perf_counter(), time.process_time()
        results = write()
        total = time.perf_counter() - start
        cpu = time.process_time() - start_cpu
        run.samples.append(
            WriteSample(
                total=total,
                embed=embedder.meter.seconds - embed0,
                knn=store.vectors.meter.seconds - knn0,
                knn_calls=store.vectors.meter.calls - calls0,
                outcomes=tuple(r.outcome.value for r in results),
                cpu=cpu,
            )
        )
    run.wall = time.perf_counter() - started
    run.size_after = store.memories.count()
    return run


def fill(
    service: MemoryService,
    embedder: MeteredEmbedder,
    store: MeteredStore,
    corpus: Corpus,
    size: int,
) -> FillRun:
    """Propose batches of generated memories until the store holds exactly ``size`` rows."""
    count = store.memories.count()
    run = FillRun(size, 0, 0.0, 0.0, 0.0, Counter())
    embed0, knn0 = embedder.meter.seconds, store.vectors.meter.seconds
    start = time.perf_counter()
    last_report = start
    while count < size:
        batch = [corpus.draft().proposal() for _ in range(min(MAX_ITEMS, size - count))]
        results = service.propose(batch, source=Source.TURN)
        run.outcomes.update(r.outcome.value for r in results)
        new_count = store.memories.count()
        run.added += new_count - count
        count = new_count
        if time.perf_counter() - last_report > 10:
            last_report = time.perf_counter()
            progress(f"  filled {count:,}/{size:,} ({last_report - start:.0f} s)")
    run.seconds = time.perf_counter() - start
    run.embed = embedder.meter.seconds - embed0
    run.knn = store.vectors.meter.seconds - knn0
    return run


def measure_size(store: MeteredStore) -> SizeRow:
    """Checkpoint the WAL, then the db and -wal file sizes and bytes per table (dbstat)."""
    path = store.path
    # The checkpoint runs on a connection of the benchmark's own (any connection may checkpoint
    # a WAL database; the store's is idle between calls), so no private member is needed.
    # wal_checkpoint returns (busy, wal pages, pages checkpointed).
    writer = sqlean.connect(str(path))
    try:
        busy, _, _ = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        writer.close()
    if busy:
        progress("warning: the WAL checkpoint was blocked; the -wal size includes live pages")
    wal = Path(f"{path}-wal")
    # Page statistics come from a separate read-only connection, not the store's own.
    reader = sqlean.connect(f"file:{path}?mode=ro", uri=True)
    try:
        owners = dict(reader.execute("SELECT name, tbl_name FROM sqlite_master"))
        pages = reader.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        reader.close()
    parts: Counter[str] = Counter()
    for name, size in pages:
        parts[size_group(str(name), owners)] += int(size)
    return SizeRow(
        memories=store.memories.count(),
        db_bytes=path.stat().st_size,
        wal_bytes=wal.stat().st_size if wal.exists() else 0,
        parts=dict(parts),
    )


def size_group(name: str, owners: dict[str, str]) -> str:
    """Which column of the size table a table or index belongs to."""
    owner = owners.get(name, name)
    if owner.startswith(("memory_bits", "memory_embeddings")):
        return "vectors"
    if owner.startswith("memory_fts"):
        return "fts"
    if owner == "memories":
        return "rows"
    if owner in ("entities", "entity_aliases", "memory_entities"):
        return "entities"
    if owner == "audit_log":
        return "audit"
    return "other"


def measure_embedding(
    minilm: LocalMiniLM, corpus: Corpus, tokenizer: O200kTokenizer
) -> list[EmbedRow]:
    """Short sentences one by one and in batches, then 500-token chunks in batches."""
    # The tokenizer file itself truncates at 128 pieces; counting pieces needs no limit.
    pieces = Tokenizer.from_file(str(minilm_tokenizer_file()))
    pieces.no_padding()
    pieces.no_truncation()
    windows = Tokenizer.from_file(str(minilm_tokenizer_file()))
    windows.no_padding()
    windows.enable_truncation(max_length=WINDOW_PIECES, stride=WINDOW_OVERLAP)

    def row(label: str, texts: list[str], batch: int, note: str) -> EmbedRow:
        counts = [1 + len(e.overflowing) for e in windows.encode_batch(texts)]
        batch_ms: list[float] = []
        start = time.perf_counter()
        for offset in range(0, len(texts), batch):
            begin = time.perf_counter()
            minilm.embed(texts[offset : offset + batch])
            batch_ms.append((time.perf_counter() - begin) * 1000)
        seconds = time.perf_counter() - start
        return EmbedRow(label, len(texts), batch, note, float(np.mean(counts)), seconds, batch_ms)

    short = [corpus.short_sentence() for _ in range(SHORT_TEXTS)]
    words = np.mean([len(t.split()) for t in short])
    short_pieces = np.mean([len(e.ids) for e in pieces.encode_batch(short)])
    note = f"{words:.1f} words, {short_pieces:.1f} pieces"
    progress("embedding: short sentences")
    rows = [
        row("short sentence", short[:SINGLE_TEXTS], 1, note),
        row("short sentence", short, SHORT_BATCH, note),
    ]
    progress("embedding: 500-token chunks")
    chunks = [corpus.prose(tokenizer, CHUNK_TOKENS) for _ in range(CHUNK_TEXTS)]
    o200k = np.mean([tokenizer.count(c) for c in chunks])
    chunk_pieces = np.mean([len(e.ids) for e in pieces.encode_batch(chunks)])
    note = f"{o200k:.0f} o200k tokens, {chunk_pieces:.0f} pieces"
    rows.append(row(f"{CHUNK_TOKENS}-token chunk", chunks, CHUNK_BATCH, note))
    return rows


# -------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        default="1000,10000",
        help="store sizes to measure at, comma-separated, ascending (default 1000,10000)",
    )
    parser.add_argument("--ops", type=int, default=200, help="timed writes per operation")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated text")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    add_tree_arguments(parser, rounds=3)
    parser.add_argument(
        "--skip-embedding", action="store_true", help="leave out the embedding throughput rows"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every measurement and print the tables."""
    args = parse_args(argv)
    if args.tree:
        trees = parse_trees(args.tree)
        options = ["--sizes", args.sizes, "--ops", str(args.ops), "--seed", str(args.seed)]
        options += ["--skip-embedding"] * args.skip_embedding
        compare_trees(Path(__file__).resolve(), trees, args.rounds, options)
        return 0
    load_before = os.getloadavg()
    run_start = time.perf_counter()
    sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    corpus = Corpus(args.seed)
    tokenizer = O200kTokenizer()
    tokenizer.count("warm up the o200k ranks")

    minilm = LocalMiniLM()
    load_start = time.perf_counter()
    minilm.embed(["load the model"])
    load_seconds = time.perf_counter() - load_start
    minilm.embed([corpus.draft().content for _ in range(64)])

    embed_rows = [] if args.skip_embedding else measure_embedding(minilm, corpus, tokenizer)

    embedder = MeteredEmbedder(minilm)
    fills: list[FillRun] = []
    writes: list[WriteRun] = []
    sizes_on_disk: list[SizeRow] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-") as tmp:
        db = Path(tmp) / "memoryd.db"
        store = MeteredStore(open_store(resolve_settings(str(db), {}), create=True), db)
        service = MemoryService(store.as_store(), embedder)
        try:
            for size in sizes:
                progress(f"filling to {size:,}")
                fills.append(fill(service, embedder, store, corpus, size))
                sizes_on_disk.append(measure_size(store))

                def remember() -> list[WriteResult]:
                    draft = corpus.event()
                    return [
                        service.remember(
                            draft.content,
                            kind=Kind.EVENT,
                            entities=draft.entities,
                            occurred_at=draft.occurred_at,
                        )
                    ]

                def propose() -> list[WriteResult]:
                    batch = [corpus.draft().proposal() for _ in range(PROPOSE_BATCH)]
                    return service.propose(batch, source=Source.TURN)

                progress(f"timing remember at {size:,}")
                writes.append(
                    measure_writes(service, embedder, store, "remember", 1, args.ops, remember)
                )
                progress(f"timing propose at {size:,}")
                writes.append(
                    measure_writes(
                        service,
                        embedder,
                        store,
                        f"propose {PROPOSE_BATCH}",
                        PROPOSE_BATCH,
                        args.ops,
                        propose,
                    )
                )
        finally:
            service.close()

    if args.json:
        print(json.dumps(summary(fills, writes)))
        return 0
    loads = (load_before, os.getloadavg())
    run_seconds = time.perf_counter() - run_start
    report = render(load_seconds, run_seconds, loads, embed_rows, fills, writes, sizes_on_disk)
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
