"""What the feedback leg (RecallPolicy.feedback_depth, off as shipped) costs a recall at 10,000
memories: bench_recall's first 200 messages recalled over one copy of its store under the
shipped policy and under the two leave-one-set-out candidates of bench/README.md ("Pseudo-
relevance feedback"), interleaved message by message in one process (query vectors kept after a
warm-up, so the embedding is not in the figures); wall and main-thread CPU per recall.

    .venv/bin/python bench/feedback_cost.py --store STORES/recall-10000.db [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_recall import NOW
from corpus import questions
from report import print_table
from stores import open_with_store

from memoryd.providers.embedder import LocalMiniLM
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import Retriever

POLICIES = {
    "shipped (off)": RecallPolicy(),
    "vector, top 5, beta 2, weight 0.05": RecallPolicy(
        feedback_depth=100, feedback_top=5, feedback_beta=2.0, feedback_weight=0.05
    ),
    "words, 5 terms, top 3, weight 0.5": RecallPolicy(
        feedback_depth=50, feedback_terms=5, feedback_top=3, feedback_weight=0.5
    ),
}


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[94]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, required=True, help="a bench_recall store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "recall.db"
        shutil.copyfile(args.store, path)
        _, service = open_with_store(str(path), embedder=LocalMiniLM(), environ={})
        messages = list(dict.fromkeys(questions(5000, seed=11)))[: args.queries]
        retrievers = {
            name: Retriever(
                store=service.store,
                embedder=service.embedder,
                tokenizer=service.tokenizer,
                policy=policy,
                clock=lambda: NOW,
                zone=service.zone,
            )
            for name, policy in POLICIES.items()
        }
        for message in messages[:20]:  # warm-up: the query vectors, the bit copy
            for retriever in retrievers.values():
                retriever.recall(message, None, NOW, stamp=False)
        wall: dict[str, list[float]] = {name: [] for name in retrievers}
        cpu: dict[str, list[float]] = {name: [] for name in retrievers}
        ran = dict.fromkeys(retrievers, 0)
        for round_number in range(args.rounds):
            for message in messages:
                for name, retriever in retrievers.items():
                    started_cpu, started = time.thread_time(), time.perf_counter()
                    result = retriever.recall(message, None, NOW, stamp=False)
                    cpu[name].append((time.thread_time() - started_cpu) * 1000)
                    wall[name].append((time.perf_counter() - started) * 1000)
                    ran[name] += round_number == 0 and "feedback" in result.legs
        service.close()
    print_table(
        ["policy", "feedback ran", "wall p50", "wall p95", "main-thread CPU p50", "CPU p95"],
        [
            [
                name,
                f"{ran[name]} of {len(messages)}",
                f"{statistics.median(wall[name]):.1f}",
                f"{p95(wall[name]):.1f}",
                f"{statistics.median(cpu[name]):.1f}",
                f"{p95(cpu[name]):.1f}",
            ]
            for name in retrievers
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
