"""Does the evidence hold the question's words in one passage, where the wrong memories above it
scatter them? (issue 28, session 16, stream prox17)

For every question of BEAM and LoCoMo, ranks, cuts and packs as recall does and compares, for
the admitted candidates, the share of the message's word weight (IDF) a memory holds over its
whole text (the relevance score's coverage) with the share its best window of ``--width``
characters holds (recall/proximity_policy.best_window): for the evidence in the block, the
evidence ranked but lost to the cut or the budget, and the other memories in the block. Also
the pairwise order (how often a lost evidence memory outscores a wrong one of the block, by each
measure) and the AUC of each measure over every admitted candidate (evidence against the rest).

    .venv/bin/python bench/proximity.py [--sets beam,locomo] [--width 200] [--stores D]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import TOKENIZER, beam, build, embedder_named, gather, locomo
from report import mean, print_table, progress
from stores import open_with_store

from memoryd.recall.excerpt_policy import Focus
from memoryd.recall.gate_policy import read_query
from memoryd.recall.pack_policy import pack_block
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.proximity_policy import best_window, key, text_reranked, with_passages
from memoryd.recall.score import rank
from memoryd.recall.score_policy import relative_cut

# Sentence ends, as recall's excerpts read them (excerpt_policy).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def best_sentence(content: str, held: frozenset[str], weights: dict[str, float]) -> frozenset[str]:
    """Of the query words ``held``, those of the sentence of ``content`` holding the most of
    their weight (a word found where a word of the text begins with its light stem)."""
    best: frozenset[str] = frozenset()
    for sentence in SENTENCE_END.split(content):
        found = frozenset(
            w
            for w in held
            if re.search(r"(?<![^\W_])" + re.escape(key(w)), sentence, re.IGNORECASE)
        )
        if sum(weights.get(w, 0.0) for w in found) > sum(weights.get(w, 0.0) for w in best):
            best = found
    return best


def auc(positives: list[float], negatives: list[float]) -> float:
    """P(a positive scores above a negative), ties half."""
    if not positives or not negatives:
        return float("nan")
    # Mann-Whitney by ranks (ties share their mean rank).
    values = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    ranks_sum, at = 0.0, 0
    while at < len(values):
        end = at
        while end < len(values) and values[end][0] == values[at][0]:
            end += 1
        middle = (at + 1 + end) / 2
        ranks_sum += middle * sum(flag for _, flag in values[at:end])
        at = end
    n = len(positives)
    return (ranks_sum - n * (n + 1) / 2) / (n * len(negatives))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--width", type=int, default=200)
    parser.add_argument(
        "--sentence", action="store_true", help="the best sentence instead of the best window"
    )
    parser.add_argument("--stores", type=Path, default=Path("/tmp/proximity-stores"))
    args = parser.parse_args()
    args.stores.mkdir(parents=True, exist_ok=True)
    policy = RecallPolicy()
    for name in args.sets.split(","):
        conversations = beam() if name == "beam" else locomo()
        embedder = embedder_named("minilm", [q.text for c in conversations for q in c.questions])
        groups: dict[str, list[tuple[int, float, float, bool]]] = defaultdict(list)
        pairs = {"whole": [0.0, 0], "window": [0.0, 0]}
        scored: dict[str, tuple[list[float], list[float]]] = {}
        # The switches' own cost per question (the text leg's first 20 ranked again by their
        # best passage; every candidate's passage for the coverage), in microseconds.
        costs: dict[str, list[float]] = {"text_window_depth 20": [], "coverage_window": []}
        for measure in ("whole", "window", "concentration"):
            scored[measure] = ([], [])
        for number, conversation in enumerate(conversations):
            built = build(
                conversation, str(args.stores / f"{name}-{number}.db"), embedder, open_with_store
            )
            for question in conversation.questions:
                evidence = gather(built, question.text, policy)
                ranking, ranked = rank(built.store, evidence, conversation.now, policy, built.zone)
                kept, _ = relative_cut(ranking.items, policy)
                focus = Focus.of(evidence.facts, policy)
                packed = (
                    pack_block([], kept, TOKENIZER, policy.budget_tokens, focus) if kept else None
                )
                block = {s.memory.id for s in packed.items} if packed else set()
                reading = read_query(evidence.facts, policy)
                ranked_text = evidence.rankings.get("text", [])
                began = time.perf_counter()
                text_reranked(evidence.candidates, ranked_text, reading.weights, 20, args.width)
                costs["text_window_depth 20"].append(1e6 * (time.perf_counter() - began))
                began = time.perf_counter()
                with_passages(evidence.candidates, reading.weights, args.width)
                costs["coverage_window"].append(1e6 * (time.perf_counter() - began))
                rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
                for item in ranking.items:
                    candidate = ranked.candidates[item.memory.id]
                    content = item.memory.content
                    whole = reading.coverage(candidate.words)
                    passage = (
                        best_sentence(content, candidate.words, dict(reading.weights))
                        if args.sentence
                        else best_window(content, candidate.words, reading.weights, args.width)
                    )
                    window = reading.coverage(passage)
                    keys = built.by_memory.get(item.memory.id, set())
                    is_evidence = bool(keys & question.evidence)
                    where = (
                        ("evidence, in block" if item.memory.id in block else "evidence, lost")
                        if is_evidence
                        else ("other, in block" if item.memory.id in block else "other, below")
                    )
                    by_text = "text" in item.gates
                    groups[where].append((len(content), whole, window, by_text))
                    rows[where].append((whole, window))
                    concentration = window / whole if whole else 0.0
                    for measure, value in zip(
                        ("whole", "window", "concentration"),
                        (whole, window, concentration),
                        strict=True,
                    ):
                        scored[measure][0 if is_evidence else 1].append(value)
                for lost in rows["evidence, lost"]:
                    for other in rows["other, in block"]:
                        for at, measure in enumerate(("whole", "window")):
                            pairs[measure][0] += (lost[at] > other[at]) + 0.5 * (
                                lost[at] == other[at]
                            )
                            pairs[measure][1] += 1
            built.service.close()
            progress(f"  {name}: {conversation.name} done")
        read_in = "the best sentence" if args.sentence else f"window {args.width} characters"
        print(f"\n{name} ({read_in}), admitted candidates:\n")
        table = []
        for where in ("evidence, in block", "evidence, lost", "other, in block", "other, below"):
            rows_of = groups[where]
            long = [r for r in rows_of if r[0] > args.width]
            table.append(
                [
                    where,
                    len(rows_of),
                    f"{mean([r[0] for r in rows_of]):.0f}",
                    f"{mean([r[1] for r in rows_of]):.3f}",
                    f"{mean([r[2] for r in rows_of]):.3f}",
                    f"{len(long) / max(1, len(rows_of)):.2f}",
                    f"{mean([r[2] / r[1] for r in long if r[1]]):.3f}",
                    f"{sum(not r[1] for r in rows_of) / max(1, len(rows_of)):.2f}",
                    f"{mean([r[2] / r[1] for r in rows_of if r[0] > 600 and r[1]]):.3f}",
                    f"{sum(r[3] for r in rows_of) / max(1, len(rows_of)):.2f}",
                ]
            )
        print_table(
            (
                "candidates",
                "n",
                "chars",
                "coverage",
                "window cov.",
                "longer",
                "window/whole",
                "no word",
                "w/w over 600",
                "text gate",
            ),
            table,
        )
        for measure, (won, count) in pairs.items():
            share = won / max(1, count)
            print(f"lost evidence above a wrong one of the block by {measure}: {share:.3f}", end="")
            print(f" of {count} pairs")
        for switch, spent in costs.items():
            p95 = statistics.quantiles(spent, n=20)[-1]
            print(f"{switch}: {statistics.median(spent):.0f} µs median, {p95:.0f} µs p95")
        for measure, (positives, negatives) in scored.items():
            print(f"AUC of {measure} (evidence against the rest): {auc(positives, negatives):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
