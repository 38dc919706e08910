"""The hand-labelled predicate pairs (tests/data/predicate_pairs.tsv) and how well the slot
policy tells "same slot" from "two slots" on them; shared by the calibration test and
bench/bench_slots.py, so both measure the very decision the writer makes (``plan_slot``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.memory.slot_policy import (
    SlotPolicy,
    VocabularyEntry,
    canonical_predicate,
    plan_slot,
    similarity_text,
    slot_key,
)
from memoryd.providers.embedder import Embedder

PAIRS_FILE = Path(__file__).resolve().parent / "data" / "predicate_pairs.tsv"


@dataclass(frozen=True)
class Pair:
    """Two predicates and whether they mean one slot, as labelled by hand."""

    first: str
    second: str
    same: bool


@dataclass(frozen=True)
class Score:
    """Precision and recall of "same slot" over the pairs."""

    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def precision(self) -> float:
        """Of the pairs called one slot, the share that are."""
        called = self.true_positives + self.false_positives
        return self.true_positives / called if called else 1.0

    @property
    def recall(self) -> float:
        """Of the pairs that are one slot, the share called so."""
        same = self.true_positives + self.false_negatives
        return self.true_positives / same if same else 1.0


def load_pairs(path: Path = PAIRS_FILE) -> list[Pair]:
    """The pairs of the data file (tab-separated a, b, same; '#' lines are comments)."""
    lines = [
        line.rstrip("\n")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    header, *rows = lines
    assert header.split("\t") == ["a", "b", "same"], header
    pairs = []
    for row in rows:
        first, second, same = row.split("\t")
        pairs.append(Pair(first, second, same == "1"))
    return pairs


def pair_cosines(
    pairs: Sequence[Pair], embedder: Embedder, text: Callable[[str], str] = similarity_text
) -> list[float]:
    """The cosine between the two predicates of each pair, as the writer embeds them."""
    texts = sorted({text(p) for pair in pairs for p in (pair.first, pair.second)})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    return [float(vectors[text(pair.first)] @ vectors[text(pair.second)]) for pair in pairs]


def judged_same(pair: Pair, cosine: float, policy: SlotPolicy) -> bool:
    """Whether the writer puts ``pair.second`` in the slot of ``pair.first`` (a subject
    whose only fact has predicate ``pair.first``)."""
    existing = VocabularyEntry(pair.first, slot_key("owner", pair.first))
    choice = plan_slot("owner", pair.second, [existing], {pair.first: cosine}, policy)
    return choice.slot == existing.slot


def score(pairs: Sequence[Pair], cosines: Sequence[float], policy: SlotPolicy) -> Score:
    """Precision and recall of the writer's "same slot" on ``pairs`` under ``policy``."""
    tp = fp = fn = 0
    for pair, cosine in zip(pairs, cosines, strict=True):
        judged = judged_same(pair, cosine, policy)
        tp += judged and pair.same
        fp += judged and not pair.same
        fn += pair.same and not judged
    return Score(tp, fp, fn)


def canonical_only(pairs: Sequence[Pair]) -> Score:
    """What canonical forms alone (no vocabulary) call one slot."""
    tp = fp = fn = 0
    for pair in pairs:
        judged = canonical_predicate(pair.first) == canonical_predicate(pair.second)
        tp += judged and pair.same
        fp += judged and not pair.same
        fn += pair.same and not judged
    return Score(tp, fp, fn)


def mistakes(
    pairs: Sequence[Pair], cosines: Sequence[float], policy: SlotPolicy
) -> Mapping[str, list[tuple[Pair, float]]]:
    """The pairs called wrongly, as false merges and missed merges."""
    wrong: dict[str, list[tuple[Pair, float]]] = {"false merges": [], "missed": []}
    for pair, cosine in zip(pairs, cosines, strict=True):
        judged = judged_same(pair, cosine, policy)
        if judged and not pair.same:
            wrong["false merges"].append((pair, cosine))
        elif pair.same and not judged:
            wrong["missed"].append((pair, cosine))
    return wrong
