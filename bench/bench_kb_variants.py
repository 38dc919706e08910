"""search_kb's fusion variants on one ingested filings store, both question sets, one process.

    python bench/bench_kb_variants.py --store /tmp/now.db   # a store bench_kb.py --set filings kept

Each row is a :class:`KbSearchPolicy` change from the default; the table gives hit@1 / hit@5 /
hit@10 / right document first / page hit@5 for the 48 questions written from the page and for
the analysts' questions, and search p50 / p95 over all of them. Questions are embedded for real
(cached after the first variant: the same text gives the same vector)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kb_filings import SETS, score_set
from kb_cache import CachedEmbedder
from report import percentile, print_table, progress
from stores import open_with_store

from memoryd.kb.model import Document
from memoryd.kb.search import KbSearchPolicy
from memoryd.providers.embedder import LocalMiniLM

BASE = KbSearchPolicy()
VARIANTS: dict[str, KbSearchPolicy] = {
    "no row-label vectors (main)": replace(BASE, row_vector_weight=0.0),
    "row-label vectors everywhere at 0.5": replace(BASE, row_vectors_everywhere=True),
    "row-label vectors at 0.3": replace(BASE, row_vectors_everywhere=True, row_vector_weight=0.3),
    "row-label vectors at 1.0": replace(BASE, row_vectors_everywhere=True, row_vector_weight=1.0),
    "row-label vectors, cosine >= 0.2": replace(
        BASE, row_vectors_everywhere=True, row_min_cosine=0.2
    ),
    "row-label vectors, cosine >= 0.4": replace(
        BASE, row_vectors_everywhere=True, row_min_cosine=0.4
    ),
    "row-label vectors within named documents only (the default)": BASE,
    "row-label vectors within named documents only, at 1.0": replace(
        BASE, row_vectors_everywhere=False, row_vector_weight=1.0
    ),
    "rows (words and labels) within named documents only": replace(
        BASE, rows_everywhere=False, row_vectors_everywhere=False
    ),
}
MEASURES = ("hit@1", "hit@5", "hit@10", "right document first", "page hit@5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument(
        "--only", default="", help="only variants whose name holds one of these (comma-separated)"
    )
    parser.add_argument(
        "--latency",
        action="store_true",
        help="only time the searches, the variants interleaved question by question",
    )
    args = parser.parse_args()
    embedder = CachedEmbedder(LocalMiniLM())
    _, service = open_with_store(str(args.store), embedder=embedder)  # type: ignore[arg-type]
    try:
        documents: dict[str, Document] = {
            Path(d.source_uri).name: d for d in service.kb.list_documents(collection="filings")
        }
        sets = {
            label: [json.loads(line) for line in path.read_text("utf-8").splitlines()]
            for label, path in SETS.items()
        }
        chosen = {
            name: policy
            for name, policy in VARIANTS.items()
            if any(part in name for part in args.only.split(","))
        }
        if args.latency:
            _latency(service, chosen, [q["question"] for qs in sets.values() for q in qs])
            return
        rows = []
        for name, policy in chosen.items():
            service.kb.search_policy = policy
            latencies: list[float] = []
            cells: list[str] = [name]
            for questions in sets.values():
                scores, _ = score_set(service, documents, questions, latencies)
                cells.append(" / ".join(f"{scores[m]:.2f}" for m in MEASURES))
            cells.append(f"{percentile(latencies, 0.5):.0f} / {percentile(latencies, 0.95):.0f}")
            progress(f"  {' | '.join(cells)}")
            rows.append(tuple(cells))
        print()
        print_table(("fusion", *[f"{label} ({len(q)})" for label, q in sets.items()], "ms"), rows)
    finally:
        service.close()


def _latency(service: Any, chosen: dict[str, KbSearchPolicy], questions: list[str]) -> None:
    """search_kb ms per variant, each question asked of every variant in turn (the machine's
    load falls on all alike), after one untimed round that embeds every question."""
    for question in questions:
        service.kb.search(question, limit=10)
    times: dict[str, list[float]] = {name: [] for name in chosen}
    for question in questions:
        for name, policy in chosen.items():
            service.kb.search_policy = policy
            begun = time.perf_counter()
            service.kb.search(question, limit=10)
            times[name].append((time.perf_counter() - begun) * 1000)
    first = next(iter(times.values()))
    rows = [
        (
            name,
            f"{percentile(ms, 0.5):.0f} / {percentile(ms, 0.95):.0f}",
            f"{percentile(ms, 0.5) / percentile(first, 0.5):.2f} / "
            f"{percentile(ms, 0.95) / percentile(first, 0.95):.2f}",
        )
        for name, ms in times.items()
    ]
    print()
    print_table(("fusion", "search p50 / p95 ms", "ratio to the first"), rows)


if __name__ == "__main__":
    main()
