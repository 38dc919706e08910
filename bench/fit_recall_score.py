"""Fit recall's relevance score (memoryd.recall.relevance_policy) on the dev sets,
leave-one-set-out.

For every question of LoCoMo, BEAM and the owner paraphrase set (protocols in devsets.py and
bench_paraphrase.py) and every general question (``bench/data/offtopic_questions.txt``, or the
owner set's unrelated ones, asked of every store), the legs gather their candidates once and
recall ranks them; each admitted candidate becomes one row of features. The model's target is the
decision it serves: whether the question has an answer in the store (general questions have
none), read from the question's most relevant candidate, which is chosen by the previous fit (a
logistic regression, L2, Newton's method in numpy; four rounds, the first by cosine). Leg
features whose coefficient comes out negative are left out, so a leg finding a memory never
lowers its relevance.

The logistic fit's target (the likelihood of the most relevant candidate) is not the decision
it serves, and it weighs the message's background (``background``: the mean cosine of its
closest candidates) low. So after the fit the background's coefficient is chosen again, on a
grid, for the decision itself: the most answerable questions opened on the fitting sets, each at
the open score that keeps its general questions empty often enough.

Fitted on each conversational set alone, on LoCoMo + BEAM, on each with the owner set, on all
three without the ``personal`` feature, with each set weighing the same (``balanced``) and on all
three (main's coefficients are measured beside them, on the same rows, as shipped and with the
open scores chosen again); the held-out owner set (``bench/data/owner_paraphrase_heldout.json``,
with its personal questions that no memory answers) is measured, never fitted on. For each fit:

- ``open_score``: the lowest value that keeps 95 % of the general questions empty on every
  fitting set (90 % of the owner set's unrelated questions, about everyday life too);
- ``small_store_open_score``: the same on the owner set's 20-memory stores (no other set has a
  store that small);
- ``relative_cut`` (on the fused score): one value for every fit, the smallest that keeps
  LoCoMo's mean block within 900 tokens (the one set with a token aim).

Every fit is measured on every set, so the out-of-set rows sit beside the in-set ones; the last
fit (all three) is what ``RecallPolicy`` ships, and the script prints its coefficients. It also
prints the relative cut read from the relevance instead of the fused score (a share of the best
relevance, a floor, a distance in logits) beside the fused-score cut, at the tokens each costs.

``--cues FILE`` stores cues (``{memory text: [cues]}``, as ``bench_paraphrase.py --cues``) on the
owner set's memories (its stores are then kept apart, under ``DIR/cued``).

``--l2`` sets the fits' L2 penalty; ``--definite-grade G`` counts a question with a bare
definite reference (``address_policy.definite_reference``, also the ``definite`` feature) as
personal at grade G in the rows as well (measured, not shipped).

``--extra NAMES`` (with ``--rows``; ``all`` for every one) fits with candidate features beside
the shipped ones: two flags kept monotone as a leg's, ``named_day`` (the memory names a day of
the message's window, time_legs.named_day_leg) and ``other_side`` (the memory the yes/no rule
moved into the first ten, sides_policy.other_side), and ``scattered``, the share of the
message's word weight a text match holds outside its best passage (proximity_policy); the
shipped coefficients give them 0 (measured, not shipped).

    .venv/bin/python bench/fit_recall_score.py [--stores DIR] [--cues F] [--save-rows F | --rows F]
        [--l2 X] [--definite-grade G] [--extra named_day,other_side,scattered]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_paraphrase as paraphrase
import numpy as np
from devsets import (
    Built,
    CachedEmbedder,
    Conversation,
    Question,
    beam,
    build,
    locomo,
    offtopic_questions,
    recall_at,
)
from report import print_table, progress
from stores import open_with_store

from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.address_policy import definite_reference
from memoryd.recall.gate_policy import read_query
from memoryd.recall.legs import Evidence
from memoryd.recall.pack_policy import render_item
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.proximity_policy import best_window
from memoryd.recall.relevance_policy import FEATURES as SHIPPED_FEATURES
from memoryd.recall.relevance_policy import as_row
from memoryd.recall.score import rank
from memoryd.recall.score_policy import candidate_features, measure_context
from memoryd.recall.sides_policy import other_side

TOKENIZER = O200kTokenizer()
# The share of general questions that must get an empty memories section, per set (the
# owner set's unrelated questions are about an owner's everyday life: 90 %).
GENERAL_EMPTY = {"locomo": 0.95, "beam": 0.95, "owner": 0.90, "owner20": 0.90}
# The sets the score is fitted on; the held-out owner set is only measured.
FITTING = ("locomo", "beam", "owner", "owner20")
SMALL = {"owner20": "owner", "heldout20": "heldout"}
# The message-level features that say it is about its writer (recall/address_policy.py).
PERSONAL = frozenset({"personal"})
# What main ships (RecallPolicy's defaults), measured on the same rows.
SHIPPED = RecallPolicy()
BEFORE = (
    SHIPPED.score_bias, dict(SHIPPED.score_weights), SHIPPED.open_score, SHIPPED.relative_cut,
    SHIPPED.small_store_open_score,
)  # fmt: skip
BEFORE_LABEL = "before (main as shipped)"
REOPENED = "main's coefficients, open scores chosen again"
TOKEN_CEILING = 900
CUT_GRID = (0.3, 0.35, 0.36, 0.37, 0.38, 0.4, 0.45, 0.5, 0.52, 0.55, 0.6, 0.7)
FIT_ROUNDS = 4
LAST = "**fit on all three**"
L2 = 1.0
# The L2 penalty the fits use (``--l2``; the default is what main shipped with).
REGULARISATION = {"l2": L2}
# The block's frame (fence, preamble, heading) in o200k tokens, about.
FRAME_TOKENS = 60
# Features that say a leg found the candidate (or how high): their coefficients stay ≥ 0.
# The model's features; ``with_extra`` adds the EXTRA flags after them.
FEATURES: tuple[str, ...] = SHIPPED_FEATURES
MONOTONE = frozenset({"vector_rank", "text_rank", "entity", "time", "episode"})
# Coefficients held at a value rather than fitted. The text match's coverage at main's value
# (1f4c329): fitted free beside `named`, it came out negative (-0.64), so a text match carrying
# the message's rare words would lower a candidate's relevance, and without an embedding no text
# match could open the block (docs/recall.md, "A bare definite reference, and a known name").
HELD = {"coverage": 2.4375}


@dataclass
class Asked:
    """One question's gathered evidence in one store (evidence keys empty: a general one)."""

    built: Built
    question: Question
    evidence: Evidence


def gather_set(
    name: str,
    conversations: list[Conversation],
    embedder: Any,
    stores: Path,
    general: list[str],
    cues: dict[str, list[str]] | None = None,
    unanswered: tuple[str, list[str]] = ("general", []),
) -> list[Asked]:
    """Build (or reopen) each store (with ``cues`` on its memories, if given) and gather every
    question's evidence once."""
    asked: list[Asked] = []
    for number, conversation in enumerate(conversations):
        built = build(conversation, str(stores / f"{name}-{number}.db"), embedder, open_with_store)
        if cues is not None:
            paraphrase.give_cues(built.service, cues)
        now = conversation.now
        for question in conversation.questions:
            asked.append(Asked(built, question, built.service.evidence(question.text, now=now)))
        for category, texts in (("general", general), unanswered):
            for text in texts:
                blank = Question(text, category, frozenset())
                asked.append(Asked(built, blank, built.service.evidence(text, now=now)))
        progress(f"  {name}: {conversation.name} gathered")
    return asked


@dataclass
class Rows:
    """Every admitted candidate of every question of one set, as arrays: features, whether
    it holds evidence (and how many evidence keys), which question, its type weight × recency
    and its line's tokens; per question its evidence count and the legs' own R@10."""

    name: str
    x: np.ndarray
    label: np.ndarray
    keys: np.ndarray
    question: np.ndarray
    weight: np.ndarray
    rrf: np.ndarray
    tokens: np.ndarray
    evidence: np.ndarray  # per question; 0 for a general question
    legs: dict[str, np.ndarray]  # per question
    category: list[str]  # per question
    # Whether the row may open the block: recall decides before the episode leg joins, so a
    # row's features are those it had then, and a candidate only the episode leg brought
    # never opens.
    opener: np.ndarray
    # Per question: its text and its conversation (for message-level features tried offline
    # on saved rows).
    texts: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    # Per row, flags not among the shipped features (``EXTRA``, tried with ``--extra``).
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def rows_of(name: str, asked: list[Asked], policy: RecallPolicy, grade: float = 0.0) -> Rows:
    """Rank every question once under ``policy`` (no silence, no cut) and keep every admitted
    candidate's features: the thresholds are then swept in numpy. ``grade``: a message with a
    bare definite reference (``address_policy.definite_reference``) counts as personal at
    least this much (the ranking itself is main's: only the feature rows change)."""
    open_policy = replace(policy, open_score=0.0, relative_cut=0.0)
    x, label, keys, qid, weight, tokens, rrf, opener = [], [], [], [], [], [], [], []
    evidence, category = [], []
    texts: list[str] = []
    stores: list[str] = []
    legs: dict[str, list[float]] = {"text": [], "vector": []}
    extra: dict[str, list[float]] = {name: [] for name in EXTRA}
    for number, item in enumerate(asked):
        built, gathered, question = item.built, item.evidence, item.question
        ranking, ranked = rank(
            built.store, gathered, built.conversation.now, open_policy, built.zone
        )
        reading = read_query(gathered.facts, open_policy)
        context = ranking.context or measure_context(
            gathered.candidates, gathered.facts, open_policy, reading
        )
        holds = built.by_memory
        moved = moved_side(built, gathered, open_policy)
        for scored in ranking.items:
            candidate = ranked.candidates[scored.memory.id]
            # Judged as the opening decision saw it: before the episode leg joined.
            first = tuple(leg for leg in scored.gates if leg != "episode")
            values = candidate_features(candidate, gathered.facts, reading, context, first)
            if grade and definite_reference(question.text):
                values["personal"] = max(values["personal"], grade)
            x.append(list(as_row(values)))
            opener.append(bool(first))
            held = len(holds.get(scored.memory.id, set()) & question.evidence)
            label.append(1.0 if held else 0.0)
            keys.append(held)
            qid.append(number)
            weight.append(scored.weight * scored.recency)
            rrf.append(scored.rrf)
            tokens.append(line_tokens(scored.memory))
            extra["named_day"].append(float(scored.memory.id in gathered.facts.window_named))
            extra["other_side"].append(float(scored.memory.id == moved))
            # The share of the message's word weight it holds outside its best passage.
            matched = candidate.words if "text" in first else frozenset()
            passage = best_window(scored.memory.content, matched, reading.weights, PASSAGE)
            extra["scattered"].append(values["coverage"] - reading.coverage(passage))
        evidence.append(len(question.evidence))
        category.append(question.category)
        texts.append(question.text)
        stores.append(built.conversation.name)
        for leg in legs:
            ids = gathered.rankings.get(leg, [])[:10]
            legs[leg].append(recall_at(holds, ids, question.evidence) if question.evidence else 0.0)
    return Rows(
        name, np.asarray(x), np.asarray(label), np.asarray(keys), np.asarray(qid),
        np.asarray(weight), np.asarray(rrf), np.asarray(tokens), np.asarray(evidence),
        {leg: np.asarray(v) for leg, v in legs.items()}, category, np.asarray(opener, dtype=bool),
        texts, stores, {name: np.asarray(v) for name, v in extra.items()},
    )  # fmt: skip


# Candidate flags tried as features with ``--extra`` (not shipped features): the memory names a
# day of the message's window (time_legs.named_day_leg, dates13), and it is the yes/no
# question's other side that joined the first ten (sides_policy.other_side, sides13).
# ``scattered`` (prox17): the share of the message's word weight a text match holds outside
# its best run of PASSAGE characters (recall/proximity_policy.best_window), not held monotone.
EXTRA = ("named_day", "other_side", "scattered")
PASSAGE = 200


def moved_side(built: Built, gathered: Evidence, policy: RecallPolicy) -> str | None:
    """The memory the yes/no rule moved into the first ten (sides_policy.other_side, read on
    the ranking made without it), or None."""
    asked = gathered.facts.yes_or_no
    if not asked:
        return None
    plain, _ = rank(
        built.store, gathered, built.conversation.now, replace(policy, other_side_depth=0),
        built.zone,
    )  # fmt: skip
    items = plain.items
    found = other_side([s.memory.content for s in items], asked, policy)
    return None if found is None else items[found].memory.id


_LINES: dict[str, int] = {}


def line_tokens(memory: Any) -> int:
    """A memory's line in the block, in o200k tokens (cached by id)."""
    if memory.id not in _LINES:
        _LINES[memory.id] = TOKENIZER.count(render_item(memory) + "\n")
    return _LINES[memory.id]


def fit(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, without: frozenset[str] = frozenset()
) -> tuple[float, dict[str, float]]:
    """Weighted, L2-regularised logistic regression by Newton's method; (bias, coefficients).
    A leg finding a memory must never lower its score (fusion is monotone): a leg feature
    whose coefficient comes out negative is left out and the rest refitted. The features in
    ``without`` are left out from the start (0)."""
    held = [i for i, name in enumerate(FEATURES) if name in HELD and name not in without]
    offset = x[:, held] @ np.asarray([HELD[FEATURES[i]] for i in held]) if held else 0.0
    free = [i for i, name in enumerate(FEATURES) if name not in without and i not in held]
    while True:
        bias, w = _newton(x[:, free], y, weights, offset)
        negative = [i for i, c in zip(free, w, strict=True) if FEATURES[i] in MONOTONE and c < 0]
        if not negative:
            break
        free = [i for i in free if i not in negative]
    coefficients = dict.fromkeys(FEATURES, 0.0)
    coefficients.update({FEATURES[i]: round(float(c), 4) for i, c in zip(free, w, strict=True)})
    coefficients.update({FEATURES[i]: HELD[FEATURES[i]] for i in held})
    return bias, coefficients


def _newton(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray | float = 0.0
) -> tuple[float, np.ndarray]:
    design = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(design.shape[1])
    penalty = np.eye(design.shape[1]) * REGULARISATION["l2"]
    penalty[0, 0] = 0.0
    for _ in range(40):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ w + offset, -60, 60)))
        gradient = design.T @ (weights * (p - y)) + penalty @ w
        hessian = (design * (weights * p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-6:
            break
    return float(w[0]), w[1:]


def probabilities(rows: Rows, bias: float, weights: dict[str, float]) -> np.ndarray:
    """Each row's relevance under a fit, as the opening decision reads it (0 for a row only the
    episode leg brought)."""
    coefficients = np.asarray([weights.get(f, 0.0) for f in FEATURES])
    p = 1.0 / (1.0 + np.exp(-np.clip(bias + rows.x @ coefficients, -60, 60)))
    return np.where(rows.opener, p, 0.0)


def best_rows(rows: Rows, bias: float, weights: dict[str, float] | None) -> np.ndarray:
    """Per question, the index of its most relevant candidate (by cosine before a first fit);
    -1 for a question without candidates."""
    if weights is None:
        score = np.where(rows.opener, rows.x[:, FEATURES.index("cosine")], -np.inf)
    else:
        score = probabilities(rows, bias, weights)
    best = np.full(len(rows.evidence), -1)
    value = np.full(len(rows.evidence), -np.inf)
    for index, question in enumerate(rows.question):
        if score[index] > value[question]:
            value[question] = score[index]
            best[question] = index
    return best


def fit_rows(
    sets: list[Rows], without: frozenset[str] = frozenset(), balanced: bool = False
) -> tuple[float, dict[str, float]]:
    """The relevance model: its target is whether the question has an answer in the store,
    read from the question's most relevant candidate (the one that decides silence); the
    most relevant one is chosen by the previous fit, so the fit is repeated a few times.
    ``balanced``: each set weighs the same in the fit (its questions share one unit of
    weight), so the set with the most questions does not decide alone."""
    bias: float = 0.0
    weights: dict[str, float] | None = None
    for _ in range(FIT_ROUNDS):
        xs, ys, ws = [], [], []
        for rows in sets:
            share = len(rows.evidence) if balanced else 1
            for question, index in enumerate(best_rows(rows, bias, weights)):
                xs.append(rows.x[index] if index >= 0 else np.zeros(len(FEATURES)))
                ys.append(1.0 if rows.evidence[question] else 0.0)
                ws.append(1.0 / share)
        scale = len(ws) / sum(ws)
        bias, weights = fit(np.asarray(xs), np.asarray(ys), np.asarray(ws) * scale, without)
    assert weights is not None
    return bias, weights


BACKGROUND_STEPS = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0)


def opened(sets: list[Rows], bias: float, weights: dict[str, float]) -> float:
    """The mean share of answerable questions that open the block on ``sets``, at the open
    score chosen on them (:func:`best_open`)."""
    threshold = best_open(sets, bias, weights)
    shares = []
    for rows in sets:
        tops = np.zeros(len(rows.evidence))
        np.maximum.at(tops, rows.question, probabilities(rows, bias, weights))
        shares.append(float((tops[rows.evidence > 0] >= threshold).mean()))
    return sum(shares) / len(shares)


def tune_background(
    sets: list[Rows], bias: float, weights: dict[str, float]
) -> tuple[float, dict[str, float]]:
    """The background's coefficient raised by the step of ``BACKGROUND_STEPS`` that opens the
    most answerable questions on ``sets`` (ties: the smallest step)."""
    best, chosen = -1.0, weights
    for step in BACKGROUND_STEPS:
        trial = {**weights, "background": round(weights["background"] + step, 4)}
        share = opened(sets, bias, trial)
        if share > best + 1e-9:
            best, chosen = share, trial
    return bias, chosen


@dataclass
class Measured:
    """One set's numbers under one policy."""

    fused: float
    text: float
    vector: float
    block: float
    tokens: float
    answerable_empty: float
    general_empty: float
    categories: dict[str, tuple[int, float, float, float, float]]
    # Questions without an answer that are not general ones (personal questions about what
    # no memory says): the share with an empty memories section.
    unanswered_empty: float | None = None


@dataclass
class Fit:
    """Coefficients and the thresholds chosen with them."""

    bias: float
    weights: dict[str, float]
    open_score: float
    cut: float = 0.35


def measure(rows: Rows, fitted: Fit, budget: int = 1500, cut_on: str = "fused") -> Measured:
    """Order (fused score), silence (best relevance), cut and pack every question as recall
    does, from the rows. ``cut_on``: the relative cut on the fused score (as shipped), or read
    from the relevance: ``share`` of the best relevance, a ``floor``, ``logits`` below the
    best."""
    p = probabilities(rows, fitted.bias, fitted.weights)
    score = rows.rrf * rows.weight
    questions = len(rows.evidence)
    order = np.lexsort((-score, rows.question))
    fused = np.zeros(questions)
    block = np.zeros(questions)
    tokens = np.zeros(questions)
    opened = np.zeros(questions, dtype=bool)
    starts = np.searchsorted(rows.question[order], np.arange(questions + 1))
    for q in range(questions):
        idx = order[starts[q] : starts[q + 1]]
        if not len(idx) or p[idx].max() < fitted.open_score:
            continue
        opened[q] = True
        kept = idx[cut_mask(score[idx], p[idx], fitted.cut, cut_on)]
        used = np.cumsum(rows.tokens[kept]) + FRAME_TOKENS
        packed = kept[used <= budget]
        tokens[q] = used[len(packed) - 1] if len(packed) else 0
        if rows.evidence[q]:
            fused[q] = rows.keys[idx[:10]].sum() / rows.evidence[q]
            block[q] = rows.keys[packed].sum() / rows.evidence[q]
    answerable = rows.evidence > 0
    categories = {}
    names = np.asarray(rows.category)
    general = ~answerable & (names == "general")
    other = ~answerable & (names != "general")
    for name in sorted(set(names[answerable])):
        mask = names == name
        categories[name] = (
            int(mask.sum()), float(rows.legs["text"][mask].mean()),
            float(rows.legs["vector"][mask].mean()), float(fused[mask].mean()),
            float(block[mask].mean()),
        )  # fmt: skip
    return Measured(
        float(fused[answerable].mean()), float(rows.legs["text"][answerable].mean()),
        float(rows.legs["vector"][answerable].mean()), float(block[answerable].mean()),
        float(tokens[answerable].mean()), float((~opened[answerable]).mean()),
        float((~opened[general]).mean()), categories,
        float((~opened[other]).mean()) if other.any() else None,
    )  # fmt: skip


def cut_mask(score: np.ndarray, p: np.ndarray, cut: float, cut_on: str) -> np.ndarray:
    """Which of one question's candidates (fused score order) the relative cut keeps."""
    kept: np.ndarray
    if cut_on == "fused":
        kept = score >= cut * score[0]
    elif cut_on == "share":
        kept = p >= cut * p.max()
    elif cut_on == "floor":
        kept = p >= cut
    else:
        logits = np.log(np.clip(p, 1e-12, 1.0)) - np.log(np.clip(1.0 - p, 1e-12, 1.0))
        kept = logits >= logits.max() - cut
    return kept


RELEVANCE_CUTS = {
    "share": (0.05, 0.1, 0.2, 0.3, 0.5),
    "floor": (0.05, 0.1, 0.2, 0.3),
    "logits": (3.0, 4.0, 5.0, 6.0),
}


def best_open(sets: list[Rows], bias: float, weights: dict[str, float]) -> float:
    """The lowest ``open_score`` that keeps the general questions empty often enough on every
    set (``GENERAL_EMPTY``)."""
    needed = 0.0
    for rows in sets:
        p = probabilities(rows, bias, weights)
        tops = np.zeros(len(rows.evidence))
        np.maximum.at(tops, rows.question, p)
        general = np.sort(tops[(rows.evidence == 0) & (np.asarray(rows.category) == "general")])
        share = GENERAL_EMPTY[rows.name]
        index = min(len(general) - 1, int(np.ceil(share * len(general))) - 1)
        needed = max(needed, float(general[index]) + 1e-4)
    return round(needed, 4)


def choose(sets: list[Rows], without: frozenset[str] = frozenset(), balanced: bool = False) -> Fit:
    """Fit the coefficients (without the features in ``without``; each set weighing the same
    when ``balanced``) and choose the open score on ``sets`` only (by their general questions).
    The relative cut is one value for every fit: the smallest whose LoCoMo blocks stay within
    ``TOKEN_CEILING`` (the one set with a token aim; see ``report``)."""
    bias, weights = tune_background(sets, *fit_rows(sets, without, balanced))
    return Fit(round(bias, 4), weights, best_open(sets, bias, weights))


def with_cut(fitted: Fit, locomo: Rows) -> Fit:
    """``fitted`` with the smallest relative cut that keeps LoCoMo's mean block within
    ``TOKEN_CEILING``."""
    for cut in CUT_GRID:
        trial = replace(fitted, cut=cut)
        if measure(locomo, trial).tokens <= TOKEN_CEILING:
            return trial
    return replace(fitted, cut=CUT_GRID[-1])


def row(label: str, name: str, m: Measured) -> list[Any]:
    """One table row."""
    return [
        label, name, f"{m.text:.3f}", f"{m.vector:.3f}", f"{m.fused:.3f}", f"{m.block:.3f}",
        f"{m.tokens:.0f}", f"{m.answerable_empty:.1%}", f"{m.general_empty:.1%}",
        "-" if m.unanswered_empty is None else f"{m.unanswered_empty:.1%}",
    ]  # fmt: skip


def main() -> int:
    """Gather, fit leave-one-set-out and on both, print the tables and the coefficients."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", type=Path, default=Path("/tmp/memoryd-recall-stores"))
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--save-rows", type=Path, help="keep the feature rows (a pickle)")
    parser.add_argument("--rows", type=Path, help="fit from rows kept by --save-rows")
    parser.add_argument("--cues", type=Path, help="cues for the owner set's memories (JSON)")
    parser.add_argument("--l2", type=float, default=L2, help="the fits' L2 penalty")
    parser.add_argument(
        "--definite-grade", type=float, default=0.0,
        help="count a bare definite reference as personal at this grade (not shipped)",
    )  # fmt: skip
    parser.add_argument(
        "--quantities", action="store_true",
        help="report main's reading and one where a match on numbers and units alone has no "
        "coverage (rows saved as NAME-True / NAME-False)",
    )  # fmt: skip
    parser.add_argument(
        "--extra", default="",
        help=f"fit with these of the candidate flags {', '.join(EXTRA)} as features too "
        "(comma-separated; 'all': every one; not shipped)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.extra and not args.rows:
        parser.error("--extra fits saved rows: give --rows (made with --save-rows)")
    REGULARISATION["l2"] = args.l2
    if args.rows:
        with args.rows.open("rb") as source:
            saved = pickle.load(source)
        chosen = EXTRA if args.extra == "all" else tuple(filter(None, args.extra.split(",")))
        report(with_extra(saved, chosen) if chosen else saved)
        return 0
    args.stores.mkdir(parents=True, exist_ok=True)
    started = time.time()
    embedder = CachedEmbedder(LocalMiniLM())
    general = offtopic_questions()
    owner = paraphrase.load()
    cues = json.loads(args.cues.read_text(encoding="utf-8")) if args.cues else None
    owned = args.stores / "cued" if cues else args.stores
    owned.mkdir(parents=True, exist_ok=True)
    heldout = paraphrase.load(paraphrase.HELDOUT)
    unanswered = ("personal, no answer", heldout["personal_unanswered"])
    sets = {
        "locomo": gather_set(
            "locomo", locomo(samples=args.samples), embedder, args.stores, general
        ),
        "beam": gather_set("beam", beam(chats=args.chats), embedder, args.stores, general),
        "owner": gather_set(
            "owner", paraphrase.stores(owner, 200), embedder, owned, owner["unrelated"], cues
        ),
        "owner20": gather_set(
            "owner20", paraphrase.stores(owner, 20), embedder, owned, owner["unrelated"], cues
        ),
        # Measured, never fitted on (written before any recall ran on it).
        "heldout": gather_set(
            "heldout", paraphrase.stores(heldout, 200), embedder, args.stores,
            heldout["unrelated"], None, unanswered,
        ),
        "heldout20": gather_set(
            "heldout20", paraphrase.stores(heldout, 20), embedder, args.stores,
            heldout["unrelated"], None, unanswered,
        ),
    }  # fmt: skip
    variants = {"": RecallPolicy()}
    if args.quantities:
        # Both readings of a match on numbers and units alone, from the one gathering.
        variants = {
            "quantities cover (main)": RecallPolicy(quantities_cover=True),
            "numbers and units alone do not cover": RecallPolicy(quantities_cover=False),
        }
    for label, base in variants.items():
        if label:
            print(f"\n## {label}")
        rows = variant_rows(sets, base, args.definite_grade)
        if args.save_rows:
            target = args.save_rows
            if label:
                target = target.with_name(f"{target.stem}-{base.quantities_cover}{target.suffix}")
            with target.open("wb") as sink:
                pickle.dump(rows, sink)
        report(rows)
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


def with_extra(rows: dict[str, Rows], chosen: tuple[str, ...] = EXTRA) -> dict[str, Rows]:
    """The rows with the ``chosen`` of the ``EXTRA`` flags as features after the shipped ones
    (the flags monotone, as the legs' are); the fits then weigh them, the shipped coefficients
    give them 0."""
    global FEATURES, MONOTONE
    if any(not data.extra for data in rows.values()):
        raise SystemExit("these rows hold no extra flags: save them again with --save-rows")
    unknown = set(chosen) - set(EXTRA)
    if unknown:
        raise SystemExit(f"--extra: no such flag {', '.join(sorted(unknown))}")
    if any(e not in data.extra for e in chosen for data in rows.values()):
        raise SystemExit("these rows lack a chosen flag: save them again with --save-rows")
    FEATURES = (*FEATURES, *chosen)
    MONOTONE = MONOTONE | (frozenset(chosen) - {"scattered"})
    return {
        name: replace(data, x=np.hstack([data.x, *(data.extra[e][:, None] for e in chosen)]))
        for name, data in rows.items()
    }


def variant_rows(sets: dict[str, list[Asked]], base: RecallPolicy, grade: float) -> dict[str, Rows]:
    """Every set's rows under ``base``. The episode leg joins after the best event, so the rows
    are made twice: the second time ranked by a first fit on all sets (the episode leg's
    anchor is then the best event)."""
    first = {
        name: rows_of(name, asked, replace(base, episode_depth=0), grade)
        for name, asked in sets.items()
    }
    progress("  first rows")
    bias, weights = fit_rows([first[name] for name in FITTING])
    ranker = replace(base, score_bias=bias, score_weights=weights)
    rows = {name: rows_of(name, asked, ranker, grade) for name, asked in sets.items()}
    progress("  rows")
    return rows


def report(rows: dict[str, Rows]) -> None:
    """Fit leave-one-set-out and on all sets; print the tables and the coefficients."""
    locomo_rows, beam_rows = rows["locomo"], rows["beam"]
    owners = [rows["owner"], rows["owner20"]]
    fits = {
        "fit on LoCoMo": choose([locomo_rows]),
        "fit on BEAM": choose([beam_rows]),
        "fit on LoCoMo + BEAM": choose([locomo_rows, beam_rows]),
        "fit on LoCoMo + owner": choose([locomo_rows, *owners]),
        "fit on BEAM + owner": choose([beam_rows, *owners]),
        "fit on all three, without personal": choose([locomo_rows, beam_rows, *owners], PERSONAL),
        "balanced, fit on LoCoMo + BEAM": choose([locomo_rows, beam_rows], balanced=True),
        "balanced, fit on LoCoMo + owner": choose([locomo_rows, *owners], balanced=True),
        "balanced, fit on BEAM + owner": choose([beam_rows, *owners], balanced=True),
        "balanced, fit on all three": choose([locomo_rows, beam_rows, *owners], balanced=True),
        LAST: choose([locomo_rows, beam_rows, *owners]),
    }
    fits = {label: with_cut(fitted, locomo_rows) for label, fitted in fits.items()}
    # Small stores (the owner set's 20-memory stores) get their own open score, chosen on them
    # with each fit's coefficients: no other dev set has a store that small.
    opens_small = {
        label: best_open([rows["owner20"]], fitted.bias, fitted.weights)
        for label, fitted in fits.items()
    }
    bias, weights, open_score, cut, small_open = BEFORE
    # Main's coefficients with the open scores chosen again on these rows (the change is then
    # the rows' features alone, e.g. --definite-grade).
    fitting = [rows[name] for name in FITTING]
    again = Fit(bias, weights, best_open(fitting, bias, weights), cut)
    fits = {BEFORE_LABEL: Fit(bias, weights, open_score, cut), REOPENED: again, **fits}
    reopened_small = best_open([rows["owner20"]], bias, weights)
    opens_small = {BEFORE_LABEL: small_open, REOPENED: reopened_small, **opens_small}
    headers = ("policy", "measured on", "text R@10", "vector R@10", "fused R@10",
               "block recall", "mean tokens", "answerable, empty", "general, empty",
               "personal, no answer, empty")  # fmt: skip
    table = []
    measured_both: dict[str, Measured] = {}
    for label, chosen in fits.items():
        for name, data in rows.items():
            small = name in SMALL
            fitted = replace(chosen, open_score=opens_small[label]) if small else chosen
            m = measure(data, fitted)
            table.append(row(label, name, m))
            if label == LAST:
                measured_both[name] = m
    print_table(headers, table)
    print("\nCoefficients and thresholds per fit:\n")
    print_table(
        ("policy", "open_score", "relative_cut", *FEATURES, "bias"),
        [
            [label, f.open_score, f.cut, *(f.weights.get(name, 0.0) for name in FEATURES), f.bias]
            for label, f in fits.items()
        ],
    )
    print("\nThe fit on all three, categories with 30 or more questions:\n")
    print_table(
        ("set", "category", "n", "text R@10", "vector R@10", "fused R@10", "block recall"),
        [
            [name, category, n, f"{t:.3f}", f"{v:.3f}", f"{f:.3f}", f"{b:.3f}"]
            for name, m in measured_both.items()
            for category, (n, t, v, f, b) in sorted(m.categories.items())
            if n >= 30
        ],
    )
    shipped = fits[LAST]
    large = {name: data for name, data in rows.items() if name not in SMALL}
    print("\nThe fit on all three with other relative cuts:\n")
    sweep = []
    for cut in CUT_GRID:
        for name, data in large.items():
            sweep.append(row(f"relative_cut {cut}", name, measure(data, replace(shipped, cut=cut))))
    print_table(headers, sweep)
    print("\nThe fit on all three, the relative cut read from the relevance instead:\n")
    sweep = []
    for cut_on, grid in RELEVANCE_CUTS.items():
        for cut in grid:
            for name, data in large.items():
                measured = measure(data, replace(shipped, cut=cut), cut_on=cut_on)
                sweep.append(row(f"{cut_on} {cut}", name, measured))
    print_table(headers, sweep)
    print("\nFITTED_WEIGHTS = MappingProxyType(")
    print("    {" + ", ".join(f'"{k}": {v}' for k, v in shipped.weights.items()) + "}")
    print(f")\nFITTED_BIAS = {shipped.bias}")
    print(f"open_score = {shipped.open_score}, relative_cut = {shipped.cut}, ", end="")
    print(f"small_store_open_score = {opens_small[LAST]}")


if __name__ == "__main__":
    sys.exit(main())
