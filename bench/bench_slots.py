"""Calibrating the same-slot threshold: precision and recall of "same slot" on the 200
hand-labelled predicate pairs (tests/data/predicate_pairs.tsv: 95 same, 105 different, most of
those near misses), over a range of thresholds, with the very decision the writer makes
(``memoryd.memory.slot_policy.plan_slot``: canonical form, then the word rules, then MiniLM
similarity).

Besides the curve: canonical forms alone; the word rules alone (no similarity); and, at the
chosen threshold, similarity of the bare predicates (no "owner" framing) and similarity with
no word rules, to show what each part is worth. Then the pairs the chosen threshold gets wrong.

    .venv/bin/python bench/bench_slots.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from report import print_table, progress, stamp  # noqa: E402

from memoryd.memory.slot_policy import SlotPolicy, canonical_predicate, wording_verdict  # noqa: E402
from memoryd.providers.embedder import LocalMiniLM  # noqa: E402
from tests.slot_pairs import (  # noqa: E402
    Pair,
    Score,
    canonical_only,
    load_pairs,
    mistakes,
    pair_cosines,
    score,
)

THRESHOLDS = [0.50, 0.55, 0.60, 0.65, 0.68, 0.70, 0.72, 0.74, 0.76, 0.78, 0.80, 0.85, 0.90]


def _row(label: str, measured: Score) -> list[object]:
    return [
        label,
        f"{measured.precision:.3f}",
        f"{measured.recall:.3f}",
        measured.true_positives,
        measured.false_positives,
        measured.false_negatives,
    ]


def _without_word_rules(pairs: list[Pair], cosines: list[float], threshold: float) -> Score:
    tp = fp = fn = 0
    for pair, cosine in zip(pairs, cosines, strict=True):
        same_words = canonical_predicate(pair.first) == canonical_predicate(pair.second)
        judged = same_words or cosine >= threshold
        tp += judged and pair.same
        fp += judged and not pair.same
        fn += pair.same and not judged
    return Score(tp, fp, fn)


def _words_only(pairs: list[Pair]) -> Score:
    tp = fp = fn = 0
    for pair in pairs:
        verdict = wording_verdict(canonical_predicate(pair.first), canonical_predicate(pair.second))
        judged = verdict is True
        tp += judged and pair.same
        fp += judged and not pair.same
        fn += pair.same and not judged
    return Score(tp, fp, fn)


def main() -> None:
    """Print the tables."""
    pairs = load_pairs()
    progress(f"{len(pairs)} pairs; embedding with MiniLM …")
    embedder = LocalMiniLM()
    cosines = pair_cosines(pairs, embedder)
    bare = pair_cosines(pairs, embedder, text=canonical_predicate)
    chosen = SlotPolicy().same_slot_cosine

    print(f"### Same slot on {len(pairs)} labelled predicate pairs ({stamp()})\n")
    headers = ["threshold", "precision", "recall", "right merges", "wrong merges", "missed"]
    rows = []
    for threshold in THRESHOLDS:
        measured = score(pairs, cosines, SlotPolicy(same_slot_cosine=threshold))
        label = f"**{threshold:.2f}** (chosen)" if threshold == chosen else f"{threshold:.2f}"
        rows.append(_row(label, measured))
    print_table(headers, rows, numeric_right=True)

    print("\n### What each part is worth\n")
    print_table(
        ["decision", "precision", "recall", "right merges", "wrong merges", "missed"],
        [
            _row("canonical forms only", canonical_only(pairs)),
            _row("canonical forms + word rules, no similarity", _words_only(pairs)),
            _row(
                f"bare predicates (no 'owner'), {chosen:.2f}",
                score(pairs, bare, SlotPolicy(same_slot_cosine=chosen)),
            ),
            _row(f"no word rules, {chosen:.2f}", _without_word_rules(pairs, cosines, chosen)),
            _row(f"everything, {chosen:.2f}", score(pairs, cosines, SlotPolicy())),
        ],
        numeric_right=True,
    )

    print(f"\n### Wrong at {chosen:.2f}\n")
    for kind, wrong in mistakes(pairs, cosines, SlotPolicy()).items():
        listed = ", ".join(f"{p.first} / {p.second} ({c:.2f})" for p, c in wrong)
        print(f"- {kind} ({len(wrong)}): {listed}")


if __name__ == "__main__":
    main()
