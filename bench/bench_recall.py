"""Recall latency at 1k, 10k and 100k active memories on the SQLite store.

Each store is filled straight through the storage layer (the write path is measured by
bench_write.py), with real MiniLM vectors; then ``MemoryService.recall`` is timed end to end in
a warm process over distinct messages: query embedding, the legs, fusion, packing with o200k
and the retrieval stamp.

    .venv/bin/python bench/bench_recall.py [--sizes 1000,10000,100000] [--queries 200] [--split]
    .venv/bin/python bench/bench_recall.py --tree old=../old/src --tree new=src --rounds 2 \
        --vectors-cache /tmp/vectors.npy --store-dir /tmp/recall-stores

The CPU columns are the process's CPU time per recall (all its threads: the embedder's, the
stamp writer's): on a shared machine they hold where the wall time swings with the load.

``--split`` then recalls every question once more with perf_counter hooks on each step
(query embedding, each leg's SQL, candidate fetch, fusion, packing, tokenising, fencing, the
stamp) and prints where the time goes; the latency table is measured before, unhooked.
``--split-cpu`` times those steps in the process's CPU time instead. ``--split-slowest 0.1``
times them separately over the slowest tenth of the messages (by the recall CPU time measured
first) and over the rest, each message once, and prints both side by side with the slowest
messages themselves: where the tail's time goes.

The table's last column digests what came back (every block, every dropped memory with its
reason and relevance, search_memory's ids): trees that answered alike print the same digest.

``--tree NAME=SRC`` (repeated) runs the whole measurement in a child process per checkout,
``--rounds`` times, interleaved (old, new, old, new …), and prints one table with every round's
figures side by side: on a shared machine a ratio holds where an absolute time does not.
``--store-dir`` fills each size's store once and gives every run a fresh copy of it.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import moved_modules  # noqa: F401  (an old checkout's modules under today's paths)
from corpus import Item, memories, questions
from report import percentile, print_table, progress, stamp
from stores import open_with_store, served_local_model
from trees import add_tree_arguments, parse_trees, run_interleaved

import memoryd.recall.legs
from memoryd.ids import IdGenerator
from memoryd.memory.entity_policy import extract_entities
from memoryd.memory.model import Memory, Source, Status
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from memoryd.storage.protocols import Store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def fill(store: Store, items: list[Item], vectors: np.ndarray) -> None:
    """Insert active memories directly through the records protocol, 5,000 per transaction."""
    ids = IdGenerator()
    for start in range(0, len(items), 5000):
        with store.transaction():
            for item, vector in zip(
                items[start : start + 5000], vectors[start : start + 5000], strict=True
            ):
                created = item.occurred_at or NOW
                memory = Memory(
                    id=ids.new_id(created), kind=item.kind, status=Status.ACTIVE,
                    content=item.content, source=Source.OWNER, created_at=created,
                    last_confirmed_at=created, confidence=item.confidence,
                    entities=extract_entities(item.content), importance=item.importance,
                    occurred_at=item.occurred_at,
                )  # fmt: skip
                store.memories.insert(memory, vector)


def warmed(path: Path, embedder: LocalMiniLM, warm: list[str]) -> MemoryService:
    """A new service over the store at ``path``, after recalling the ``warm`` messages."""
    _, service = open_with_store(str(path), embedder=embedder, environ={})
    for message in warm:
        service.recall(message, now=NOW)
    return service


def corpus_vectors(embedder: LocalMiniLM, items: list[Item], cache: Path | None) -> np.ndarray:
    """The corpus's vectors: from ``cache`` when it holds enough, else embedded (and saved)."""
    if cache is not None and cache.exists():
        vectors: np.ndarray = np.load(cache)
        if len(vectors) >= len(items):
            return vectors[: len(items)]
    started = time.perf_counter()
    vectors = embedder.embed([item.content for item in items])
    seconds = time.perf_counter() - started
    progress(f"embedded {len(items)} memories in {seconds:.0f} s ({len(items) / seconds:.0f}/s)")
    if cache is not None:
        np.save(cache, vectors)
    return vectors


def filled_store(
    path: Path, kept: Path | None, embedder: LocalMiniLM, items: list[Item], vectors: np.ndarray
) -> None:
    """A store of ``items`` at ``path``: a copy of ``kept`` when that file exists, else filled
    (and, when ``kept`` is given, kept there for the next run, checkpointed and closed)."""
    if kept is not None and kept.exists():
        shutil.copyfile(kept, path)
        return
    store, service = open_with_store(str(kept or path), embedder=embedder, environ={})
    fill(store, items, vectors)
    service.close()
    if kept is not None:
        shutil.copyfile(kept, path)


def measure(
    path: Path,
    embedder: LocalMiniLM,
    asked: list[str],
    warm: list[str],
    split: bool,
    split_cpu: bool = False,
    split_slowest: float = 0.0,
) -> dict[str, Any]:
    """Recall and search_memory timings over the store at ``path`` (each pass on a fresh,
    warmed service), with the block sizes, the store's size and, when asked, the split."""
    store, service = open_with_store(str(path), embedder=embedder, environ={})
    for message in warm:
        service.recall(message, now=NOW)
    timings, cpu, tokens, counts = [], [], [], []
    # What came back: every block, every dropped memory with its reason and relevance, and
    # search_memory's ids. Two trees that answer alike print the same digest.
    answers = hashlib.sha256()
    for message in asked:
        begin, begin_cpu = time.perf_counter(), time.process_time()
        result = service.recall(message, now=NOW)
        timings.append((time.perf_counter() - begin) * 1000)
        cpu.append((time.process_time() - begin_cpu) * 1000)
        tokens.append(result.packed.tokens)
        counts.append(len(result.packed.items) + len(result.packed.lessons))
        answers.update(result.packed.text.encode())
        dropped = [(d.memory_id, d.reason, d.relevance) for d in result.dropped]
        answers.update(repr(dropped).encode())
    size_mb = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
    copy_bytes = getattr(store.vectors, "bit_copy_bytes", lambda: 0)()
    service.close()
    service = warmed(path, embedder, warm)
    search = []
    for message in asked[:50]:
        begin = time.perf_counter()
        found = service.search_memory(message, limit=10, now=NOW)
        search.append((time.perf_counter() - begin) * 1000)
        answers.update(" ".join(s.memory.id for s in found.items).encode())
    service.close()
    split_rows: list[tuple[str, str, str]] = []
    if split:
        from recall_split import hooked

        service = warmed(path, embedder, warm)
        with hooked(time.process_time if split_cpu else time.perf_counter) as hooks:
            for message in asked:
                hooks.time_recall(functools.partial(service.recall, message, now=NOW))
        service.close()
        split_rows = hooks.rows()
    slowest: dict[str, Any] = {}
    if split_slowest > 0:
        slowest = split_by_speed(path, embedder, asked, warm, cpu, split_slowest, split_cpu)
    return {
        "recall": timings,
        "recall_cpu": cpu,
        "search": search,
        "tokens": statistics.fmean(tokens),
        "items": statistics.fmean(counts),
        "store_mb": size_mb,
        "bit_copy_mb": copy_bytes / 1e6,
        "split": split_rows,
        "split_slowest": slowest,
        "digest": answers.hexdigest()[:12],
    }


def split_by_speed(
    path: Path,
    embedder: LocalMiniLM,
    asked: list[str],
    warm: list[str],
    cpu: list[float],
    share: float,
    split_cpu: bool,
) -> dict[str, Any]:
    """The split (hooked steps, :mod:`recall_split`) over the ``share`` of ``asked`` whose
    recall took the most CPU time (``cpu``, in the same order), and over the rest, on a fresh
    warmed service; with the slowest messages and their CPU ms."""
    from recall_split import hooked, side_by_side

    order = sorted(range(len(asked)), key=lambda i: -cpu[i])
    count = max(1, round(len(asked) * share))
    groups = {"slowest": order[:count], "rest": order[count:]}
    rows = {}
    service = warmed(path, embedder, warm)
    for name, indexes in groups.items():
        with hooked(time.process_time if split_cpu else time.perf_counter) as hooks:
            for i in indexes:
                hooks.time_recall(functools.partial(service.recall, asked[i], now=NOW))
        rows[name] = hooks.rows()
    service.close()
    return {
        "rows": side_by_side(rows["slowest"], rows["rest"]),
        "messages": [(f"{cpu[i]:.1f}", asked[i]) for i in order[:count]],
    }


def print_slowest(size: int, slowest: dict[str, Any], unit: str) -> None:
    """The slowest messages and the split of their steps beside the rest's."""
    print(f"\nThe slowest {len(slowest['messages'])} messages at {size:,} (recall CPU ms)\n")
    print_table(("recall CPU ms", "message"), slowest["messages"])
    print(f"\nWhere their time goes, beside the other messages ({unit}, self time)\n")
    print_table(("step", "slowest", "the rest", "difference"), slowest["rows"])


def compare_trees(trees: dict[str, Path], rounds: int, options: list[str]) -> None:
    """Run every tree ``rounds`` times, interleaved (a, b, c, a, b, c …), and print one table:
    per size and tree, each round's p50 and p95, and the blocks (identical means the same
    memories were packed)."""
    runs: dict[str, list[dict[str, dict[str, Any]]]] = run_interleaved(
        Path(__file__).resolve(), trees, rounds, options
    )
    sizes = list(next(iter(runs.values()))[0])
    print(f"\nRecall latency by tree, {rounds} interleaved rounds, {stamp()}\n")
    rows = []
    for size in sizes:
        for name in trees:
            per_round = [r[size] for r in runs[name]]
            rows.append(
                (
                    f"{int(size):,}",
                    name,
                    " / ".join(f"{percentile(r['recall'], 0.5):.1f}" for r in per_round),
                    " / ".join(f"{percentile(r['recall'], 0.95):.1f}" for r in per_round),
                    " / ".join(f"{percentile(r['recall_cpu'], 0.5):.1f}" for r in per_round),
                    " / ".join(f"{percentile(r['recall_cpu'], 0.95):.1f}" for r in per_round),
                    " / ".join(f"{percentile(r['search'], 0.5):.1f}" for r in per_round),
                    " / ".join(f"{percentile(r['search'], 0.95):.1f}" for r in per_round),
                    f"{per_round[0]['tokens']:.0f} / {per_round[0]['items']:.1f}",
                    f"{per_round[0]['bit_copy_mb']:.1f}",
                    " / ".join(r.get("digest", "-") for r in per_round),
                )
            )
    print_table(
        (
            "active memories",
            "tree",
            "recall p50 ms",
            "recall p95 ms",
            "recall CPU p50 ms",
            "recall CPU p95 ms",
            "search p50 ms",
            "search p95 ms",
            "mean tokens / items",
            "bit copy MB",
            "answers digest",
        ),
        rows,
    )
    print_ratios(runs, sizes)
    for size in sizes:
        for name in trees:
            for round_number, result in enumerate(r[size] for r in runs[name]):
                unit = "CPU ms per recall" if "--split-cpu" in options else "ms per recall"
                if result.get("split_slowest"):
                    print(f"\n{name}, round {round_number + 1}:")
                    print_slowest(int(size), result["split_slowest"], unit)
                if result["split"]:
                    print(f"\nSplit at {int(size):,}, {name}, round {round_number + 1}\n")
                    print_table(("step", unit, "share"), result["split"])


MEASURES = (
    ("recall p50", "recall", 0.5),
    ("recall p95", "recall", 0.95),
    ("recall CPU p50", "recall_cpu", 0.5),
    ("recall CPU p95", "recall_cpu", 0.95),
    ("search p50", "search", 0.5),
    ("search p95", "search", 0.95),
)


def print_ratios(runs: dict[str, list[dict[str, dict[str, Any]]]], sizes: list[str]) -> None:
    """Each later tree against the first: per measure, the median over the rounds of each
    tree's figure, and their ratio (later / first)."""
    first, *others = runs
    for other in others:
        print(f"\n{other} / {first}: median of the rounds' figures, ms\n")
        rows = []
        for size in sizes:
            for label, key, share in MEASURES:
                old, new = (
                    statistics.median(percentile(r[size][key], share) for r in runs[name])
                    for name in (first, other)
                )
                rows.append(
                    (f"{int(size):,}", label, f"{old:.1f}", f"{new:.1f}", f"{new / old:.3f}")
                )
        print_table(("active memories", "measure", first, other, "ratio"), rows)


def main() -> int:
    """Fill one store per size, time recall and search_memory, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--vectors-cache", type=Path, help="reuse (or save) the corpus vectors in this .npy file"
    )
    parser.add_argument(
        "--store-dir", type=Path, help="keep the filled stores here and copy them for each run"
    )
    parser.add_argument(
        "--split", action="store_true", help="also print the time per recall step (hooked)"
    )
    parser.add_argument(
        "--split-cpu",
        action="store_true",
        help="time the split's steps in process CPU time instead of wall time",
    )
    parser.add_argument(
        "--split-slowest",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="also split the slowest SHARE of the messages (by recall CPU) beside the rest",
    )
    parser.add_argument(
        "--no-query-vectors",
        action="store_true",
        help="keep no query vectors (sets memoryd.recall.legs.QUERY_VECTORS_KEPT = 0)",
    )
    add_tree_arguments(parser, rounds=2)
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args()
    if args.tree:
        trees = parse_trees(args.tree)
        options = ["--sizes", args.sizes, "--queries", str(args.queries)]
        for flag, value in (
            ("--vectors-cache", args.vectors_cache),
            ("--store-dir", args.store_dir),
        ):
            if value is not None:
                options += [flag, str(value.resolve())]
        options += ["--split"] * args.split + ["--no-query-vectors"] * args.no_query_vectors
        options += ["--split-cpu"] * args.split_cpu
        if args.split_slowest > 0:
            options += ["--split-slowest", str(args.split_slowest)]
        compare_trees(trees, args.rounds, options)
        return 0
    if args.no_query_vectors:
        memoryd.recall.legs.QUERY_VECTORS_KEPT = 0
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = served_local_model()
    items = list(memories(max(sizes), seed=7, now=NOW))
    vectors = corpus_vectors(embedder, items, args.vectors_cache)
    # Distinct messages, warmed up with others: recall keeps recent query vectors, and a
    # repeated message would time the cache instead of the embedder.
    distinct = list(dict.fromkeys(questions(5000, seed=11)))
    asked, warm = distinct[: args.queries], distinct[args.queries : args.queries + 20]
    results: dict[int, dict[str, Any]] = {}
    if args.store_dir is not None:
        args.store_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"recall-{size}.db"
            kept = args.store_dir / f"recall-{size}.db" if args.store_dir is not None else None
            filled_store(path, kept, embedder, items[:size], vectors[:size])
            results[size] = measure(
                path, embedder, asked, warm, args.split, args.split_cpu, args.split_slowest
            )
            progress(f"  {size}: done")
    if args.json:
        print(json.dumps(results))
        return 0
    print(
        f"\nRecall latency, SQLite store, warm process, {len(asked)} distinct queries, {stamp()}\n"
    )
    print_table(
        (
            "active memories",
            "recall p50 ms",
            "recall p95 ms",
            "search_memory p50 ms",
            "search p95 ms",
            "mean block tokens",
            "mean items",
            "store MB",
            "bit copy MB",
            "answers digest",
        ),
        [
            (
                f"{size:,}",
                f"{percentile(r['recall'], 0.5):.1f}",
                f"{percentile(r['recall'], 0.95):.1f}",
                f"{percentile(r['search'], 0.5):.1f}",
                f"{percentile(r['search'], 0.95):.1f}",
                f"{r['tokens']:.0f}",
                f"{r['items']:.1f}",
                f"{r['store_mb']:.0f}",
                f"{r['bit_copy_mb']:.1f}",
                r["digest"],
            )
            for size, r in results.items()
        ],
    )
    unit = "CPU ms per recall" if args.split_cpu else "ms per recall"
    for size, r in results.items():
        if r["split_slowest"]:
            print_slowest(size, r["split_slowest"], unit)
        if not r["split"]:
            continue
        print(f"\nWhere a warm recall's time goes at {size:,} active memories (self time)\n")
        print_table(("step", unit, "share"), r["split"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
