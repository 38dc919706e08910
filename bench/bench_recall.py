"""Recall latency at 1k, 10k and 100k active memories on the SQLite store.

Each store is filled straight through the storage layer (the write path is measured by
bench_write.py), with real MiniLM vectors; then ``MemoryService.recall`` is timed end to end in
a warm process over distinct messages: query embedding, the legs, fusion, packing with o200k
and the retrieval stamp.

    .venv/bin/python bench/bench_recall.py [--sizes 1000,10000,100000] [--queries 200] [--split]

``--split`` then recalls every question once more with perf_counter hooks on each step
(query embedding, each leg's SQL, candidate fetch, fusion, packing, tokenising, fencing, the
stamp) and prints where the time goes; the latency table is measured before, unhooked.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Item, memories, questions
from recall_split import Split, hooked
from report import percentile, print_table, progress, stamp
from stores import open_with_store

import memoryd.legs
from memoryd.embedding import LocalMiniLM
from memoryd.entities import extract_entities
from memoryd.ids import IdGenerator
from memoryd.model import Memory, Source, Status
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


def main() -> int:
    """Fill one store per size, time recall and search_memory, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--vectors-cache", type=Path, help="reuse (or save) the corpus vectors in this .npy file"
    )
    parser.add_argument(
        "--split", action="store_true", help="also print the time per recall step (hooked)"
    )
    parser.add_argument(
        "--no-query-vectors",
        action="store_true",
        help="keep no query vectors (sets memoryd.legs.QUERY_VECTORS_KEPT = 0)",
    )
    args = parser.parse_args()
    if args.no_query_vectors:
        memoryd.legs.QUERY_VECTORS_KEPT = 0
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = LocalMiniLM()
    items = list(memories(max(sizes), seed=7, now=NOW))
    cache: Path | None = args.vectors_cache
    if cache is not None and cache.exists():
        vectors = np.load(cache)[: len(items)]
    else:
        started = time.perf_counter()
        vectors = embedder.embed([item.content for item in items])
        seconds = time.perf_counter() - started
        progress(
            f"embedded {len(items)} memories in {seconds:.0f} s ({len(items) / seconds:.0f}/s)"
        )
        if cache is not None:
            np.save(cache, vectors)
    # Distinct messages, warmed up with others: recall keeps recent query vectors, and a
    # repeated message would time the cache instead of the embedder.
    distinct = list(dict.fromkeys(questions(5000, seed=11)))
    asked, warm = distinct[: args.queries], distinct[args.queries : args.queries + 20]
    rows = []
    splits: list[tuple[int, Split]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"recall-{size}.db"
            store, service = open_with_store(str(path), embedder=embedder, environ={})
            fill(store, items[:size], vectors[:size])
            for message in warm:
                service.recall(message, now=NOW)
            timings, tokens, counts = [], [], []
            for message in asked:
                begin = time.perf_counter()
                result = service.recall(message, now=NOW)
                timings.append((time.perf_counter() - begin) * 1000)
                tokens.append(result.packed.tokens)
                counts.append(len(result.packed.items) + len(result.packed.lessons))
            size_mb = sum(p.stat().st_size for p in Path(tmp).glob(f"recall-{size}.db*")) / 1e6
            service.close()
            # Each further pass on a fresh service (no query vectors kept), warmed up alike.
            service = warmed(path, embedder, warm)
            search = []
            for message in asked[:50]:
                begin = time.perf_counter()
                service.search_memory(message, limit=10, now=NOW)
                search.append((time.perf_counter() - begin) * 1000)
            service.close()
            if args.split:
                service = warmed(path, embedder, warm)
                with hooked() as split:
                    for message in asked:
                        split.time_recall(lambda m=message, s=service: s.recall(m, now=NOW))
                service.close()
                splits.append((size, split))
            rows.append((size, timings, search, tokens, counts, size_mb))
            progress(f"  {size}: done")
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
        ),
        [
            (
                f"{size:,}",
                f"{percentile(timings, 0.5):.1f}",
                f"{percentile(timings, 0.95):.1f}",
                f"{percentile(search, 0.5):.1f}",
                f"{percentile(search, 0.95):.1f}",
                f"{statistics.fmean(tokens):.0f}",
                f"{statistics.fmean(counts):.1f}",
                f"{size_mb:.0f}",
            )
            for size, timings, search, tokens, counts, size_mb in rows
        ],
    )
    for size, split in splits:
        print(f"\nWhere a warm recall's time goes at {size:,} active memories (self time)\n")
        print_table(("step", "ms per recall", "share"), split.rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
