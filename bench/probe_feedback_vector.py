"""Does a Rocchio vector find the evidence the first pass leaves deep? For every question whose
block opens (shipped policy), the whole store is ranked by cosine three ways: to the message
(the vector leg without its index), to the message moved toward the mean of the first TOP
fused memories' vectors (q/|q| + BETA × their mean: the feedback leg's query), and the first
TOP fused memories followed by that ranking. Prints each one's recall@10 beside the fused
ranking's, the deep evidence (not in the fused first 10) that each vector puts in its first 20,
and per category at TOP 3 and 5, BETA 1. A probe, not recall: the feedback leg itself is
measured with ``bench_beam.py --policies feedback_depth=...``.

    .venv/bin/python bench/probe_feedback_vector.py --sets beam,locomo
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import Conversation, beam, build, embedder_named, gather, locomo, offtopic_questions
from report import print_table
from stores import open_with_store

from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score import rank

TOPS = (1, 3, 5)
BETAS = (0.5, 1.0, 2.0)


def share(found: set[str], ranked: list[str], depth: int = 10) -> float:
    return len(found & set(ranked[:depth])) / len(found)


def measure(
    name: str, conversations: list[Conversation], embedder: Any, tmp: str
) -> list[dict[str, Any]]:
    """One row per opened question with evidence: every ranking's recall@10 and deep finds."""
    policy = RecallPolicy()
    rows = []
    for number, conversation in enumerate(conversations):
        built = build(
            conversation, str(Path(tmp) / f"{name}-{number}.db"), embedder, open_with_store
        )
        stored = built.store.memories.vectors(list(built.by_memory))
        ids = list(stored)
        matrix = np.asarray([stored[i] for i in ids], dtype=np.float32)
        memory_of = built.memory_of
        for question in conversation.questions:
            evidence = gather(built, question.text, policy)
            ranking, _ = rank(built.store, evidence, conversation.now, policy, built.zone)
            wanted = {memory_of[k] for k in question.evidence if k in memory_of}
            if not ranking.items or evidence.vector is None or not wanted:
                continue
            fused = [s.memory.id for s in ranking.items]
            query = np.asarray(evidence.vector, dtype=np.float32)
            query /= np.linalg.norm(query)
            deep = wanted - set(fused[:10])
            by_message = [ids[i] for i in np.argsort(-(matrix @ query))]
            row: dict[str, Any] = {
                "category": question.category,
                "fused": share(wanted, fused),
                "message": share(wanted, by_message),
                "message deep": len(deep & set(by_message[:20])),
                "deep": len(deep),
            }
            for top in TOPS:
                first = fused[:top]
                centroid = np.mean([stored[i] for i in first if i in stored], axis=0)
                for beta in BETAS:
                    moved = query + beta * centroid
                    order = [
                        ids[i] for i in np.argsort(-(matrix @ (moved / np.linalg.norm(moved))))
                    ]
                    merged = first + [i for i in order if i not in first]
                    row[f"top {top} beta {beta:g}"] = share(wanted, order)
                    row[f"top {top} beta {beta:g}, top kept"] = share(wanted, merged)
                    row[f"top {top} beta {beta:g} deep"] = len(deep & set(order[:20]))
            rows.append(row)
        built.service.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    args = parser.parse_args()
    data = {n: beam() if n == "beam" else locomo() for n in args.sets.split(",")}
    asked = [q.text for sets in data.values() for c in sets for q in c.questions]
    embedder = embedder_named("minilm", asked + offtopic_questions())
    with tempfile.TemporaryDirectory() as tmp:
        for name, conversations in data.items():
            rows = measure(name, conversations, embedder, tmp)
            columns = ["fused", "message"] + [
                f"top {t} beta {b:g}{kept}"
                for t in TOPS
                for b in BETAS
                for kept in ("", ", top kept")
            ]
            deep_count = sum(r["deep"] for r in rows)
            print(f"\n{name}: {len(rows)} opened questions, {deep_count} deep evidence\n")
            table = [[c, f"{statistics.fmean(r[c] for r in rows):.3f}"] for c in columns]
            deep = ["message"] + [f"top {t} beta {b:g}" for t in TOPS for b in BETAS]
            for c in deep:
                table.append(
                    [f"{c}: deep evidence in its first 20", str(sum(r[f"{c} deep"] for r in rows))]
                )
            print_table(["ranking", "recall@10 (or count)"], table)
            by: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in rows:
                by[r["category"]].append(r)
            shown = ["fused", "message", "top 3 beta 1", "top 5 beta 1", "top 5 beta 1, top kept"]
            print()
            print_table(
                ["category", "n", *shown],
                [
                    [c, len(rs), *(f"{statistics.fmean(r[k] for r in rs):.3f}" for k in shown)]
                    for c, rs in sorted(by.items())
                ],
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
