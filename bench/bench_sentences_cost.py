"""What a message of several sentences costs a recall: LoCoMo's questions asked two at a time
(devsets.compound) on the 10k store of bench_recall.py, with the sentences off, embedded in a
second call, and pooled from the message's own run (``RecallPolicy.sentence_late``).

    nice -n 5 .venv/bin/python bench/bench_sentences_cost.py \
        --store /tmp/recall-stores/recall-10000.db [--messages 200] [--rounds 3]

Each variant recalls on its own copy of the store through its own warmed service; the rounds
interleave the variants (off, second call, late, off, ...) so a busy machine weighs on all
alike. Only messages the splitter cuts into two or more sentences are asked.

``--tree NAME=SRC`` (repeated) times each checkout's ``src`` in a child process, the checkouts
interleaved round by round (``--rounds`` child runs each, one round of every variant a run),
and prints every tree's figures with a digest of what each variant answered (every block and
dropped memory): two trees that answer alike print the same digest.

    nice -n 5 .venv/bin/python bench/bench_sentences_cost.py --store S \
        --tree base=/tmp/base-00f/src --tree new=src --rounds 3

``--no-query-vectors`` keeps no message vectors between recalls (as ``bench_recall.py``'s):
without it a round after the first finds every message's own vector kept and embeds only its
sentences.

``--split`` then recalls every message once more per variant with perf_counter hooks on each
step (bench/recall_split.py) and prints where each variant's time goes (by tree, its first
round).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import compound, locomo
from report import percentile, print_table, progress
from stores import served_local_model
from trees import parse_trees, run_interleaved

import memoryd.recall.legs
from memoryd.config.settings import resolve_settings
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.llm import Gateway, load_routes
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.sentences_policy import sentences
from memoryd.service import MemoryService
from memoryd.wiring import open_store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
VARIANTS = {
    "sentences off": replace(RecallPolicy(), sentence_vectors=0),
    "second call": RecallPolicy(),
    "late chunking": replace(RecallPolicy(), sentence_late=True),
}


def messages(count: int) -> list[str]:
    """The first ``count`` LoCoMo questions asked two at a time that are two sentences."""
    policy = RecallPolicy()
    asked = [q.text for c in compound(locomo()) for q in c.questions]
    several = [m for m in asked if sentences(m, policy.sentence_vectors, policy.sentence_min_words)]
    return several[:count]


def service_over(path: Path, embedder: LocalMiniLM, policy: RecallPolicy) -> MemoryService:
    """A service over the store at ``path`` recalling under ``policy``."""
    settings = resolve_settings(str(path), {})
    store = open_store(settings, create=False)
    gateway = Gateway(load_routes(settings.home))
    return MemoryService(store, embedder, gateway=gateway, zone=settings.zone, recall_policy=policy)


def measure(store: Path, count: int, rounds: int, split: bool = False) -> dict[str, Any]:
    """Each variant's recall times (ms) over ``rounds`` rounds, a digest of its answers and,
    when ``split``, where its time went (:mod:`recall_split`'s rows)."""
    asked = messages(count)
    embedder = served_local_model()
    timings: dict[str, list[float]] = {name: [] for name in VARIANTS}
    # The process's CPU time (all its threads, the embedding's too): steadier than the wall
    # time on a shared machine.
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    digests = {name: hashlib.sha256() for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        services = {}
        for number, (name, policy) in enumerate(VARIANTS.items()):
            path = Path(tmp) / f"{number}.db"
            shutil.copyfile(store, path)
            services[name] = service_over(path, embedder, policy)
            for message in asked[:20]:  # warm: the model, the caches, SQLite's pages
                services[name].recall(message, now=NOW)
        for round_number in range(rounds):
            for name, service in services.items():
                for message in asked:
                    begin, begin_cpu = time.perf_counter(), time.process_time()
                    result = service.recall(message, now=NOW)
                    timings[name].append((time.perf_counter() - begin) * 1000)
                    cpu[name].append((time.process_time() - begin_cpu) * 1000)
                    if round_number == 0:
                        digests[name].update(result.packed.text.encode())
                        dropped = [(d.memory_id, d.reason, d.relevance) for d in result.dropped]
                        digests[name].update(repr(dropped).encode())
            progress(f"round {round_number + 1} done")
        splits = {}
        if split:
            from recall_split import hooked

            for name, service in services.items():
                with hooked() as hooks:
                    for message in asked:
                        hooks.time_recall(partial(service.recall, message, now=NOW))
                splits[name] = hooks.rows()
        for service in services.values():
            service.close()
    return {
        "timings": timings,
        "cpu": cpu,
        "digests": {name: digest.hexdigest()[:12] for name, digest in digests.items()},
        "splits": splits,
    }


def print_splits(splits: dict[str, list[list[str]]], tree: str = "") -> None:
    """Each variant's split, as a table."""
    for name, rows in splits.items():
        print(f"\nWhere the time goes: {name}{', ' + tree if tree else ''}\n")
        print_table(["step", "ms per recall", "share"], rows)


def figures(values: list[float]) -> list[str]:
    """p50, p95 and mean of ``values``, as printed."""
    return [
        f"{statistics.median(values):.1f}",
        f"{percentile(values, 0.95):.1f}",
        f"{statistics.fmean(values):.1f}",
    ]


def compare_trees(args: argparse.Namespace) -> None:
    """Every tree's figures, the trees interleaved round by round, in one table."""
    trees = parse_trees(args.tree)
    options = ["--store", str(args.store.resolve()), "--messages", str(args.messages)]
    options += ["--rounds", "1", *["--split"] * args.split]
    options += ["--no-query-vectors"] * args.no_query_vectors
    runs = run_interleaved(Path(__file__).resolve(), trees, args.rounds, options)
    print(
        f"Recall of {args.messages} LoCoMo questions two at a time, {args.rounds} rounds by "
        f"tree{', no query vectors kept' * args.no_query_vectors}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
    )
    rows = []
    for name in VARIANTS:
        for tree, results in runs.items():
            pooled = [value for result in results for value in result["timings"][name]]
            pooled_cpu = [value for result in results for value in result["cpu"][name]]
            per_round = " / ".join(
                f"{percentile(result['timings'][name], 0.95):.1f}" for result in results
            )
            digest = " / ".join(sorted({result["digests"][name] for result in results}))
            rows.append([name, tree, *figures(pooled), per_round, *figures(pooled_cpu)[:2], digest])
    print_table(
        [
            "variant",
            "tree",
            "p50 ms",
            "p95 ms",
            "mean ms",
            "p95 by round",
            "CPU p50 ms",
            "CPU p95 ms",
            "answers digest",
        ],
        rows,
    )
    for tree, results in runs.items():
        print_splits(results[0]["splits"], tree)


def main() -> int:
    """Time each variant's recalls, print p50 / p95 / mean."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a filled store (copied)")
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="measure this checkout's src in a child process (repeat; interleaved by round)",
    )
    parser.add_argument("--split", action="store_true", help="where each variant's time goes")
    parser.add_argument(
        "--no-query-vectors",
        action="store_true",
        help="keep no query vectors (sets memoryd.recall.legs.QUERY_VECTORS_KEPT = 0)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args()
    if not args.store.is_file():
        parser.error(f"no store at {args.store}")
    if args.tree:
        compare_trees(args)
        return 0
    if args.no_query_vectors:
        memoryd.recall.legs.QUERY_VECTORS_KEPT = 0
    measured = measure(args.store, args.messages, args.rounds, args.split)
    if args.json:
        print(json.dumps(measured))
        return 0
    print(
        f"Recall of {args.messages} LoCoMo questions two at a time, {args.rounds} rounds, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
    )
    digests = measured["digests"]
    rows = [
        [name, *figures(values), *figures(measured["cpu"][name])[:2], digests[name]]
        for name, values in measured["timings"].items()
    ]
    print_table(
        ["variant", "p50 ms", "p95 ms", "mean ms", "CPU p50 ms", "CPU p95 ms", "answers digest"],
        rows,
    )
    print_splits(measured["splits"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
