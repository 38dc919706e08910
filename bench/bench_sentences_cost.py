"""What a message of several sentences costs a recall: LoCoMo's questions asked two at a time
(devsets.compound) on the 10k store of bench_recall.py, with the sentences off, embedded in a
second call, and pooled from the message's own run (``RecallPolicy.sentence_late``).

    nice -n 5 .venv/bin/python bench/bench_sentences_cost.py \
        --store /tmp/recall-stores/recall-10000.db [--messages 200] [--rounds 3]

Each variant recalls on its own copy of the store through its own warmed service; the rounds
interleave the variants (off, second call, late, off, ...) so a busy machine weighs on all
alike. Only messages the splitter cuts into two or more sentences are asked.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import compound, locomo
from report import percentile, print_table, progress

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


def main() -> int:
    """Time each variant's recalls, print p50 / p95 / mean."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a filled store (copied)")
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not args.store.is_file():
        parser.error(f"no store at {args.store}")
    asked = messages(args.messages)
    embedder = LocalMiniLM()
    timings: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        services = {}
        for number, (name, policy) in enumerate(VARIANTS.items()):
            path = Path(tmp) / f"{number}.db"
            shutil.copyfile(args.store, path)
            services[name] = service_over(path, embedder, policy)
            for message in asked[:20]:  # warm: the model, the caches, SQLite's pages
                services[name].recall(message, now=NOW)
        for round_number in range(args.rounds):
            for name, service in services.items():
                for message in asked:
                    begin = time.perf_counter()
                    service.recall(message, now=NOW)
                    timings[name].append((time.perf_counter() - begin) * 1000)
            progress(f"round {round_number + 1} done")
        for service in services.values():
            service.close()
    print(
        f"Recall of {len(asked)} LoCoMo questions two at a time, {args.rounds} rounds, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
    )
    rows = [
        [
            name,
            f"{statistics.median(values):.1f}",
            f"{percentile(values, 0.95):.1f}",
            f"{statistics.fmean(values):.1f}",
        ]
        for name, values in timings.items()
    ]
    print_table(["variant", "p50 ms", "p95 ms", "mean ms"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
