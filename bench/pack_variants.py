"""Packing variants that are not `RecallPolicy` numbers, judged beside recall's own packing
from one gathering per question (LoCoMo and BEAM): block recall, mean block tokens, the
answer's words in the block, and where the evidence was lost.

- ``shipped``: recall's relative cut and :func:`pack_block` (excerpt only what does not fit).
- ``skip``: an item that does not fit, even as its excerpt, is left out and packing goes on
  (a smaller one below it may fit), as the context pack does.
- ``downgrade``: as many of the kept items as fit, each whole, the lowest-ranked long ones
  packed as their excerpts just as far as needed to fit one more (the best ones stay whole).
- ``second``: the relative cut read against the second-best score, not the best (a single
  very strong first item no longer cuts the rest).
- ``days``: recall's cut, the kept items reordered to spread the block over more days.
- ``density``: recall's cut, the kept items after the best ordered by score per length.
- ``nocut``: every ranked item offered to packing (the budget alone decides: the cut's ceiling).
- ``items5``, ``items10``: recall's cut, but never fewer than 5 / 10 items (a question whose
  answer is spread over several messages).
- ``mean3``: the relative cut read against the mean of the first three scores (one very strong
  first item no longer cuts the rest; the second-best rule smoothed).
- ``smooth``: recall's cut, and below it the next items while each scores at least 0.9 of the
  one before it (no cliff: a run of near-equal scores is kept or cut together); ``smooth95``
  at 0.95.
- ``yield70``, ``yield80``, ``yield90``, ``yield95``: recall's cut keeps as many items, but an
  item whose vector is within cosine 0.7 / 0.8 / 0.9 / 0.95 of an item already in the block,
  and that holds no query word the block does not, yields its place to the next one (a
  near-duplicate spends no budget; the best stays first).

Besides the tables per variant, it prints where the evidence the shipped relative cut removes
sits in the fused ranking, and why it falls there: its score against the best, its length, and
whether its question has other evidence kept above the cut; and how alike the fused ranking's
places 2-30 are (each item's highest cosine to a better one), evidence or not, kept or cut.

Each variant also takes RecallPolicy numbers after a colon (``downgrade:excerpt_chars=300``),
as ``bench_beam.py --policies`` does.

    .venv/bin/python bench/pack_variants.py --variants \\
        shipped,skip,downgrade,downgrade:excerpt_chars=300,second:relative_cut=0.4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import (
    CATEGORY_HEADERS,
    LOSS_HEADERS,
    SUMMARY_HEADERS,
    Cut,
    Outcome,
    Pack,
    beam,
    build,
    category_rows,
    embedder_named,
    judge,
    locomo,
    loss_row,
    offtopic_questions,
    parse_settings,
    summary_rows,
    with_settings,
)
from report import print_table, progress
from stores import open_with_store

from memoryd.recall.excerpt_policy import Focus
from memoryd.recall.pack_policy import (
    _PLACEHOLDER,
    Packed,
    TokenCounter,
    attention_order,
    pack_block,
    render_block,
    render_item,
)
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score import rank
from memoryd.recall.score_policy import Dropped, Scored, relative_cut


def cut_from_second(
    items: Sequence[Scored], policy: RecallPolicy
) -> tuple[list[Scored], list[Dropped]]:
    """The relative cut against the second-best score (the best's when it is alone)."""
    if not items:
        return [], []
    floor = policy.relative_cut * items[min(1, len(items) - 1)].score
    kept = [s for s in items if s.score >= floor]
    return kept, [Dropped(s.memory.id, "cut") for s in items[len(kept) :]]


def cut_by_days(
    items: Sequence[Scored], policy: RecallPolicy
) -> tuple[list[Scored], list[Dropped]]:
    """Recall's cut, then the kept items reordered so that each day's second item weighs 0.8
    of its score, its third 0.64, … (a block spread over more days, for questions about the
    whole conversation)."""
    kept, dropped = relative_cut(items, policy)
    seen: Counter[object] = Counter()
    order: list[Scored] = []
    rest = list(kept)
    while rest:
        best = max(rest, key=lambda s: s.score * 0.8 ** seen[_day(s)])
        rest.remove(best)
        order.append(best)
        seen[_day(best)] += 1
    return order, dropped


def _day(item: Scored) -> object:
    when = item.memory.occurred_at
    return when.date() if when is not None else None


def cut_by_density(
    items: Sequence[Scored], policy: RecallPolicy
) -> tuple[list[Scored], list[Dropped]]:
    """Recall's cut, then the best item first and the rest by score per √(characters + 100)
    (more of the budget for short memories)."""
    kept, dropped = relative_cut(items, policy)
    rest = sorted(kept[1:], key=lambda s: -s.score / (len(s.memory.content) + 100) ** 0.5)
    return kept[:1] + rest, dropped


def cut_none(items: Sequence[Scored], policy: RecallPolicy) -> tuple[list[Scored], list[Dropped]]:
    """No cut: the budget alone decides."""
    return list(items), []


def cut_keeping(least: int) -> Cut:
    """Recall's cut, never keeping fewer than ``least`` items."""

    def cut(items: Sequence[Scored], policy: RecallPolicy) -> tuple[list[Scored], list[Dropped]]:
        kept, dropped = relative_cut(items, policy)
        if len(kept) >= least:
            return kept, dropped
        return list(items[:least]), dropped[least - len(kept) :]

    return cut


def cut_from_mean3(
    items: Sequence[Scored], policy: RecallPolicy
) -> tuple[list[Scored], list[Dropped]]:
    """The relative cut against the mean of the first three scores."""
    if not items:
        return [], []
    head = [s.score for s in items[:3]]
    floor = policy.relative_cut * sum(head) / len(head)
    kept = [s for s in items if s.score >= floor]
    return kept, [Dropped(s.memory.id, "cut") for s in items[len(kept) :]]


def cut_smooth(ratio: float) -> Cut:
    """Recall's cut, then the next items while each holds ``ratio`` of the score before it."""

    def cut(items: Sequence[Scored], policy: RecallPolicy) -> tuple[list[Scored], list[Dropped]]:
        kept, _ = relative_cut(items, policy)
        for item in items[len(kept) :]:
            if not kept or item.score < ratio * kept[-1].score:
                break
            kept.append(item)
        return kept, [Dropped(s.memory.id, "cut") for s in items[len(kept) :]]

    return cut


class Question:
    """The question being judged: its store and its candidates' query words (the yield
    variants read the memories' vectors and words)."""

    store: Any = None
    words: dict[str, frozenset[str]] = {}  # noqa: RUF012 (one question at a time)


def cut_yielding(cosine: float) -> Cut:
    """Recall's cut's number of items, a near-duplicate (within ``cosine`` of an item already
    kept, no query word of its own) passed over for the next item."""

    def cut(items: Sequence[Scored], policy: RecallPolicy) -> tuple[list[Scored], list[Dropped]]:
        shipped, _ = relative_cut(items, policy)
        ids = [s.memory.id for s in items[: 3 * len(shipped) + 10]]
        stored = Question.store.memories.vectors(ids) if shipped else {}
        unit = {i: np.asarray(v) / np.linalg.norm(v) for i, v in stored.items()}
        kept: list[Scored] = []
        held: set[str] = set()
        for item in items:
            if len(kept) == len(shipped):
                break
            vector = unit.get(item.memory.id)
            words = Question.words.get(item.memory.id, frozenset())
            close = vector is not None and any(
                float(vector @ unit[k.memory.id]) >= cosine for k in kept if k.memory.id in unit
            )
            if close and words <= held:
                continue
            kept.append(item)
            held |= words
        chosen = {s.memory.id for s in kept}
        return kept, [Dropped(s.memory.id, "cut") for s in items if s.memory.id not in chosen]

    return cut


def likeness(
    store: Any, items: Sequence[Scored], kept: int, evidence: set[str], into: dict[str, list[float]]
) -> None:
    """Each of places 2-30's highest cosine to a better item, by evidence or not, kept or cut."""
    ids = [s.memory.id for s in items[:30]]
    stored = store.memories.vectors(ids)
    unit = np.zeros((len(ids), len(next(iter(stored.values())))) if stored else (0, 0))
    for i, memory_id in enumerate(ids):
        if memory_id in stored:
            unit[i] = np.asarray(stored[memory_id]) / np.linalg.norm(stored[memory_id])
    for place in range(1, len(ids) if stored else 0):
        group = "evidence" if ids[place] in evidence else "other"
        group += ", kept" if place < kept else ", cut"
        into.setdefault(group, []).append(float((unit[:place] @ unit[place]).max()))


def frame(counter: TokenCounter) -> int:
    """What the block costs around its lines (fence, preamble, heading)."""
    line = counter.count(render_item(_PLACEHOLDER) + "\n")
    return counter.count(render_block([], [_PLACEHOLDER])) - line


def finish(kept: list[Scored], lines: dict[int, str], counter: TokenCounter, budget: int) -> Packed:
    """The block of ``kept`` in attention order, trimmed from its weakest until it fits."""
    dropped: list[Dropped] = []
    while True:
        ordered = attention_order(kept)
        text = render_block([], [s.memory for s in ordered], lines)
        tokens = counter.count(text) if text else 0
        if tokens <= budget or not kept:
            return Packed(text, tokens, (), tuple(ordered), tuple(dropped))
        dropped.append(Dropped(kept.pop().memory.id, "over the token budget"))


def pack_skipping(
    lessons: Sequence[object],
    scored: Sequence[Scored],
    counter: TokenCounter,
    budget: int,
    focus: Focus | None = None,
) -> Packed:
    """Best first, whole or else as its excerpt; what fits in neither is left out and the
    next ones are still tried."""
    lines: dict[int, str] = {}
    used, kept = frame(counter), []
    for candidate in scored:
        for about in (None, focus):
            line = render_item(candidate.memory, about)
            cost = counter.count(line + "\n")
            if used + cost <= budget:
                lines[id(candidate.memory)] = line
                kept.append(candidate)
                used += cost
                break
    return finish(kept, lines, counter, budget)


def pack_downgrading(
    lessons: Sequence[object],
    scored: Sequence[Scored],
    counter: TokenCounter,
    budget: int,
    focus: Focus | None = None,
) -> Packed:
    """The longest prefix of ``scored`` that fits when its lowest-ranked long items are
    excerpted (from the bottom up, only as many as needed)."""
    whole = [render_item(s.memory) for s in scored]
    cut = [render_item(s.memory, focus) for s in scored]
    whole_cost = [counter.count(line + "\n") for line in whole]
    cut_cost = [counter.count(line + "\n") for line in cut]
    room = budget - frame(counter)
    for n in range(len(scored), 0, -1):
        total = sum(whole_cost[:n])
        excerpted: set[int] = set()
        for i in range(n - 1, -1, -1):
            if total <= room:
                break
            if cut_cost[i] < whole_cost[i]:
                total -= whole_cost[i] - cut_cost[i]
                excerpted.add(i)
        if total <= room:
            lines = {id(scored[i].memory): (cut if i in excerpted else whole)[i] for i in range(n)}
            return finish(list(scored[:n]), lines, counter, budget)
    return finish([], {}, counter, budget)


RANK_BUCKETS = (("1-10", 10), ("11-20", 20), ("21-50", 50), ("51+", 10**9))

VARIANTS: dict[str, tuple[Cut, Pack]] = {
    "shipped": (relative_cut, pack_block),
    "skip": (relative_cut, pack_skipping),
    "downgrade": (relative_cut, pack_downgrading),
    "second": (cut_from_second, pack_block),
    "days": (cut_by_days, pack_block),
    "density": (cut_by_density, pack_block),
    "nocut": (cut_none, pack_block),
    "items5": (cut_keeping(5), pack_block),
    "items10": (cut_keeping(10), pack_block),
    "mean3": (cut_from_mean3, pack_block),
    "smooth": (cut_smooth(0.9), pack_block),
    "smooth95": (cut_smooth(0.95), pack_block),
    "yield70": (cut_yielding(0.7), pack_block),
    "yield80": (cut_yielding(0.8), pack_block),
    "yield90": (cut_yielding(0.9), pack_block),
    "yield95": (cut_yielding(0.95), pack_block),
}


def main() -> int:
    """Gather each question once, judge it under every variant, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--variants", default="shipped,skip,downgrade,second")
    parser.add_argument(
        "--stores", default="", help="build the stores here, or reopen those built before"
    )
    args = parser.parse_args()
    variants = []
    for spec in args.variants.split(","):
        name, _, numbers = spec.partition(":")
        if name not in VARIANTS:
            raise SystemExit(f"--variants: {name!r} is not one of {', '.join(VARIANTS)}")
        policy = (
            with_settings(RecallPolicy(), parse_settings(numbers)) if numbers else RecallPolicy()
        )
        variants.append((spec, policy, *VARIANTS[name]))
    data = {name: beam() if name == "beam" else locomo() for name in args.sets.split(",")}
    asked = [q.text for sets in data.values() for c in sets for q in c.questions]
    embedder = embedder_named("minilm", asked + offtopic_questions())
    results: dict[str, list[Outcome]] = {}
    # Where in the fused ranking the evidence that the shipped relative cut removed sits.
    places: dict[str, Counter[str]] = {}
    # Why they fall there: the evidence memory's score against the best, its length, and
    # whether its question has other evidence kept above the cut.
    why: dict[str, Counter[str]] = {}
    # How alike the fused places 2-30 are (highest cosine to a better item), per set and group.
    alike: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.stores or scratch
        for name, conversations in data.items():
            for number, conversation in enumerate(conversations):
                built = build(
                    conversation, str(Path(tmp) / f"{name}-{number}.db"), embedder, open_with_store
                )
                for question in conversation.questions:
                    evidence = built.service.evidence(question.text, now=conversation.now)
                    Question.store = built.store
                    Question.words = {i: c.words for i, c in evidence.candidates.items()}
                    for spec, policy, cut_by, pack_by in variants:
                        outcome, _ = judge(built, question, evidence, policy, cut_by, pack_by)
                        results.setdefault(f"{name}, {spec}", []).append(outcome)
                    ranking, _ = rank(
                        built.store, evidence, conversation.now, RecallPolicy(), built.zone
                    )
                    kept, _ = relative_cut(ranking.items, RecallPolicy())
                    place = {s.memory.id: i for i, s in enumerate(ranking.items)}
                    memory_of = built.memory_of
                    kept_ids = {s.memory.id for s in kept}
                    evidence_ids = {memory_of.get(k, "") for k in question.evidence}
                    likeness(
                        built.store,
                        ranking.items,
                        len(kept),
                        evidence_ids,
                        alike.setdefault(name, {}),
                    )
                    held = {memory_of.get(k) for k in question.evidence} & kept_ids
                    for key in question.evidence:
                        found = place.get(memory_of.get(key, ""))
                        if found is not None and found >= len(kept):
                            depth = next(b for b in RANK_BUCKETS if found < b[1])[0]
                            places.setdefault(name, Counter())[depth] += 1
                            item = ranking.items[found]
                            share = item.score / ranking.items[0].score
                            tally = why.setdefault(name, Counter())
                            tally[
                                "score ≥ 0.3 of best"
                                if share >= 0.3
                                else "0.2-0.3"
                                if share >= 0.2
                                else "< 0.2"
                            ] += 1
                            tally[
                                "over 400 chars"
                                if len(item.memory.content) > 400
                                else "400 chars or fewer"
                            ] += 1
                            tally["other evidence kept" if held else "none kept"] += 1
                built.service.close()
                progress(f"  {name}: {conversation.name} done")
    # The cut never empties a block: general questions are as bench_beam.py measures them.
    print_table(
        SUMMARY_HEADERS[:-2] + SUMMARY_HEADERS[-1:],
        [[*row[:-2], row[-1]] for row in (summary_rows(n, o, []) for n, o in results.items())],
    )
    print()
    print_table(LOSS_HEADERS, [loss_row(name, outcomes) for name, outcomes in results.items()])
    print("\nFused rank of the evidence lost at the shipped relative cut:\n")
    buckets = [b[0] for b in RANK_BUCKETS]
    print_table(
        ("set", *buckets), [[n, *(c.get(b, 0) for b in buckets)] for n, c in places.items()]
    )
    print("\nThe evidence lost at the shipped relative cut, by its score, length, question:\n")
    keys = sorted({k for c in why.values() for k in c})
    print_table(("set", *keys), [[n, *(c.get(k, 0) for k in keys)] for n, c in why.items()])
    print(
        "\nFused places 2-30 under the shipped policy: each one's highest cosine to a better one\n"
    )
    print_table(
        ("set, items", "n", "mean", "≥ 0.6", "≥ 0.8", "≥ 0.9"),
        [
            [f"{n}, {g}", len(v), f"{np.mean(v):.3f}"]
            + [f"{np.mean(np.asarray(v) >= t):.3f}" for t in (0.6, 0.8, 0.9)]
            for n, groups in alike.items()
            for g, v in sorted(groups.items())
        ],
    )
    for name, outcomes in results.items():
        print(f"\n{name}, per category:\n")
        print_table(CATEGORY_HEADERS, category_rows(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
