"""Recall's per-candidate ranking, replayed: what gating and scoring every candidate costs, and
what the relevance model would cost on arrays (every candidate of a message at once).

The bench_recall messages are recalled once over a copy of a bench_recall store (query vectors
kept); each ranking's inputs are captured, then replayed in this process, timed in thread CPU:
``rank_candidates`` whole, and the relevance of every candidate through
:class:`memoryd.recall.relevance_policy.Model` beside :func:`relevances_at_once`, a prototype
that sums the same products in the same order. It prints whether the two give the same floats
(on Python 3.11; from 3.12 ``sum()`` compensates, so a prototype would have to do the same).

    .venv/bin/python bench/recall_candidates.py --store STORES/recall-10000.db [--passes 5]
"""

from __future__ import annotations

import argparse
import functools
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_recall import NOW
from corpus import questions
from stores import open_with_store

import memoryd.recall.run
from memoryd.providers.embedder import LocalMiniLM
from memoryd.recall.gate_policy import gate, read_query
from memoryd.recall.relevance_policy import (
    FEATURES,
    UNKNOWN_COSINE,
    Context,
    Model,
    message_values,
)
from memoryd.recall.score_policy import measure_context, rank_candidates

# The legs the model counts by presence alone, in FEATURES order.
FEATURE_LEGS = ("entity", "time", "episode")
Row = tuple[Mapping[str, int], float | None, float]
"""What the model reads of one candidate: the legs that counted, its cosine, its coverage."""


def captured_rankings(store_path: Path, count: int) -> list[tuple[Any, ...]]:
    """(evidence, now, policy) of every ranking of ``count`` bench_recall messages."""
    captured: list[tuple[Any, ...]] = []
    # The name recall/run.py calls (imported there from recall/score.py), patched where it is read.
    names = vars(memoryd.recall.run)
    original = names["rank"]

    def capture(
        store: Any, evidence: Any, now: Any, policy: Any, zone: Any, keep: Any = None
    ) -> Any:
        captured.append((evidence, now, policy))
        return original(store, evidence, now, policy, zone, keep)

    names["rank"] = capture
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "recall.db"
            shutil.copyfile(store_path, path)
            _, service = open_with_store(str(path), embedder=LocalMiniLM(), environ={})
            for message in list(dict.fromkeys(questions(5000, seed=11)))[:count]:
                service.recall(message, now=NOW, stamp=False)
            service.close()
    finally:
        names["rank"] = original
    return captured


def model_rows(captured: list[tuple[Any, ...]]) -> list[tuple[Any, float, Context, list[Row]]]:
    """Per ranking: the coefficients, the bias, the context and every candidate's row."""
    prepared = []
    for evidence, _, policy in captured:
        facts = evidence.facts
        reading = read_query(facts, policy)
        verdicts = {i: gate(c, facts, policy, reading) for i, c in evidence.candidates.items()}
        context = measure_context(evidence.candidates, facts, policy, reading, verdicts)
        rows: list[Row] = []
        for memory_id, candidate in evidence.candidates.items():
            found_by = verdicts[memory_id].admitted or tuple(candidate.ranks)
            rows.append(
                (
                    {leg: rank for leg, rank in candidate.ranks.items() if leg in found_by},
                    candidate.cosine if facts.embedded else None,
                    reading.coverage(candidate.words) if "text" in found_by else 0.0,
                )
            )
        prepared.append((policy.score_weights, policy.score_bias, context, rows))
    return prepared


def relevances_at_once(
    weights: Mapping[str, float], bias: float, context: Context, rows: Sequence[Row]
) -> list[tuple[float, dict[str, float]]]:
    """What ``Model.relevance`` gives each row, worked out on arrays: the products summed
    column by column (the order ``sum()`` adds them in), the sigmoid per candidate."""
    count = len(rows)
    known = np.array([row[1] is not None for row in rows])
    cosine = np.array([UNKNOWN_COSINE if row[1] is None else row[1] for row in rows])
    vector = np.array([row[0].get("vector", 0) for row in rows], dtype=np.float64)
    text = np.array([row[0].get("text", 0) for row in rows], dtype=np.float64)
    coverage = np.array([row[2] for row in rows])
    with np.errstate(divide="ignore"):
        columns = [
            cosine,
            np.where(known, np.maximum(context.best_cosine, cosine) - cosine, 0.0),
            np.where(known, context.typical_cosine, 0.0),
            np.where(vector > 0, 1.0 / np.sqrt(vector), 0.0),
            np.where(text > 0, 1.0 / np.sqrt(text), 0.0),
            coverage,
            np.maximum(context.best_coverage, coverage) - coverage,
            *(np.array([float(leg in row[0]) for row in rows]) for leg in FEATURE_LEGS),
            *(np.full(count, value) for value in message_values(context)),
        ]
    products = [
        column * weights.get(name, 0.0) for column, name in zip(columns, FEATURES, strict=True)
    ]
    total = products[0].copy()
    for product in products[1:]:
        total += product
    shares = np.column_stack(products).tolist()
    return [
        (
            0.0 if logit < -60 else 1.0 / (1.0 + math.exp(-logit)),
            dict(zip(FEATURES, share, strict=True)),
        )
        for logit, share in zip((bias + total).tolist(), shares, strict=True)
    ]


def per_candidate(
    weights: Mapping[str, float], bias: float, context: Context, rows: Sequence[Row]
) -> list[tuple[float, dict[str, float]]]:
    """``Model.relevance`` of every row, one by one (as recall does)."""
    model = Model(weights, bias, context)
    return [model.relevance(*row) for row in rows]


def _each_row(work: Callable[..., object], prepared: Sequence[tuple[Any, ...]]) -> list[object]:
    return [work(*p) for p in prepared]


def timed(work: Callable[[], object], passes: int, per: int) -> str:
    """The median and the fastest of ``passes`` runs of ``work``, ms per message."""
    times = []
    for _ in range(passes):
        started = time.thread_time()
        work()
        times.append((time.thread_time() - started) * 1000 / per)
    return f"median {statistics.median(times):.3f}, fastest {min(times):.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, required=True, help="a bench_recall store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    captured = captured_rankings(args.store, args.queries)
    prepared = model_rows(captured)
    candidates = [len(rows) for *_, rows in prepared]
    one = [per_candidate(*p) for p in prepared]
    other = [relevances_at_once(*p) for p in prepared]
    print(f"{len(captured)} rankings, {statistics.fmean(candidates):.0f} candidates a message")
    print(f"the same floats: {repr(one) == repr(other)} ({sum(candidates)} candidates)")
    per = len(captured)

    def rank_all() -> None:
        for evidence, now, policy in captured:
            rank_candidates(evidence.candidates, evidence.facts, now, policy)

    print(f"rank_candidates, ms a message: {timed(rank_all, args.passes, per)}")
    for name, work in (("Model.relevance", per_candidate), ("on arrays", relevances_at_once)):
        result = timed(functools.partial(_each_row, work, prepared), args.passes, per)
        print(f"relevance, {name}, ms a message: {result}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
