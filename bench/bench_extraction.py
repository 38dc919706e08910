"""Extraction overhead outside the LLM call: validation, embedding, dedupe and the write.

The ``extract`` route is served by an in-process client that returns a prepared 5-item batch
instantly, so every millisecond measured is memoryd's own work: claiming the job, rendering the
prompt, parsing and validating the answer, embedding the items, the promotion policy with its
duplicate searches, and the transaction that writes the memories and closes the job.

    .venv/bin/python bench/bench_extraction.py [--sizes 1000,10000] [--jobs 100]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_recall import fill
from corpus import memories
from report import percentile, print_table, stamp
from vocabulary import NAMES, PLACES

from memoryd.config.settings import resolve_settings
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.llm import Gateway, Message
from memoryd.service import MemoryService
from memoryd.wiring import open_store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class CannedModel:
    """Answers every extraction at once with a fresh, valid 5-item batch."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._count = 0

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str:
        """A batch of three events, a fact and a lesson."""
        self._count += 1
        n, rng = self._count, self._rng
        name, place = rng.choice(NAMES), rng.choice(PLACES)
        items = [
            {"kind": "event", "content": f"The owner met {name} at {place} (turn {n}, part {i})",
             "confidence": 0.9, "changes_behavior": False, "occurred_at": "2026-11-28"}
            for i in range(3)
        ]  # fmt: skip
        items.append({"kind": "fact", "content": f"{name} works near {place} (turn {n})",
                      "confidence": 0.8, "changes_behavior": False, "subject": name,
                      "predicate": "works near", "object": place})  # fmt: skip
        items.append(
            {
                "kind": "lesson",
                "content": f"Mention {place} briefly (turn {n})",
                "confidence": 0.9,
                "changes_behavior": True,
                "importance": "low",
            }
        )
        return json.dumps({"memories": items})


def main() -> int:
    """Fill a store per size, run canned extraction jobs, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--jobs", type=int, default=100)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = LocalMiniLM()
    items = list(memories(max(sizes), seed=3, now=NOW))
    vectors = np.asarray(embedder.embed([item.content for item in items]))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            store = open_store(resolve_settings(str(Path(tmp) / f"x{size}.db"), {}), create=True)
            gateway = Gateway({}, clients={"extract": CannedModel(seed=size)})
            service = MemoryService(store, embedder, gateway=gateway)
            fill(store, items[:size], vectors[:size])
            timings = []
            for number in range(args.jobs + 5):
                at = NOW + timedelta(seconds=number)
                observation = service.observe_turn(f"turn {number}", "summary", now=at)
                assert observation.job_id is not None
                begin = time.perf_counter()
                service.run_jobs(job_id=observation.job_id, now=at)
                if number >= 5:  # the first few warm caches
                    timings.append((time.perf_counter() - begin) * 1000)
            rows.append((size, timings))
            service.close()
    print(f"\nExtraction overhead outside the LLM call (5-item batches), SQLite, {stamp()}\n")
    print_table(
        ("memories in store", "jobs", "p50 ms", "p95 ms", "mean ms"),
        [
            (
                f"{size:,}",
                len(timings),
                f"{percentile(timings, 0.5):.1f}",
                f"{percentile(timings, 0.95):.1f}",
                f"{statistics.fmean(timings):.1f}",
            )
            for size, timings in rows
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
