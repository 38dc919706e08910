"""A query adapter for the vector leg, fitted out of set (issue 28, session 13, adapt14).

A linear map W applied to the message's vector only (memory vectors unchanged), fitted so that
questions land nearer their evidence; measured leave-one-set-out: fitted on LoCoMo, measured on
BEAM, and fitted on BEAM, measured on LoCoMo. The maps:

- ``ridge:L`` ridge toward the identity, W = (QᵀQ + L·I)⁻¹ (QᵀE + L·I), Q the questions' vectors
  (what the vector leg embeds: the message without the names that tag most memories), E the
  normalised mean of each question's evidence vectors;
- ``diag:M`` / ``full:M`` / ``low:M`` a contrastive fit (softmax over the question's own store,
  temperature 0.05, 200 steps of gradient descent from the identity, M · ||W − I||² as penalty):
  a diagonal map, a full one, or the identity plus a rank-16 term;
- ``centre:A`` the mean question vector of the fitting set, times A, taken off the query;
- ``general:A`` the mean vector of the general questions (``bench/data/offtopic_questions.txt``,
  no dev set's), times A, taken off the query (the same map for both sets).

First table: the vector leg's recall@10 alone (each conversation's memories ranked by the
adapted query's cosine, as the leg's KNN does), every map out of set and in set (in set is
fitted and measured on the same questions: an upper bound, not a result); ``--within`` fits on
a set's other conversations (5 folds by conversation). ``--pipeline MAP``
then runs recall as it is (gates, fusion, cut, packing, the general questions) on each set with
the map fitted on the other: ``rank`` (the vector leg ranks by the adapted query, every gate and
score reads the raw cosine) and ``everywhere`` (the adapted vector is the query vector for all;
gates as calibrated on the raw one). ``--owner``: the vector leg alone on the owner
paraphrase sets (20, 200, 2,000 memories; never fitted on), each map fitted on both dev sets.
``--save F`` writes the map fitted on both sets (float16).

    .venv/bin/python bench/fit_query_adapter.py [--maps ridge:10,diag:0.1,centre:0.5] \
        [--within ridge:10] [--owner] [--pipeline ridge:100] [--stores /tmp/adapter-stores] \
        [--save W.npy]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from bench_paraphrase import DATA, HELDOUT
from bench_paraphrase import load as load_owner
from bench_paraphrase import stores as owner_stores
from devsets import (
    CATEGORY_HEADERS,
    SUMMARY_HEADERS,
    Conversation,
    _matcher,
    beam,
    build,
    category_rows,
    embedder_named,
    gather,
    judge,
    locomo,
    offtopic_questions,
    quiet,
    summary_rows,
)
from report import print_table, progress
from stores import open_with_store

import memoryd.recall.legs as legs
from memoryd.memory.model import Status
from memoryd.providers.embedder import Embedder, Vector
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import read_message
from memoryd.recall.vector_legs import cosines_of
from memoryd.storage.protocols import VectorHit

DIMENSION = 384
TEMPERATURE = 0.05
STEPS = 200
RATE = 0.5
RANK = 16


@dataclass
class Chat:
    """One conversation's memory ids and vectors, and per question what the vector leg embeds
    (its vector), its category, its evidence memories and how many evidence keys it has."""

    ids: list[str]
    vectors: Any
    questions: Any
    categories: list[str]
    evidence: list[list[tuple[int, int]]]  # (memory row, keys it holds) per question
    keys: list[int]


def chats_of(
    conversations: Sequence[Conversation], name: str, embedder: Any, where: Path
) -> list[Chat]:
    """Each conversation's store (built once under ``where``) read as the vector leg sees it."""
    policy = RecallPolicy()
    out = []
    for number, conversation in enumerate(conversations):
        built = build(conversation, str(where / f"{name}-{number}.db"), embedder, open_with_store)
        stored = built.store.memories.vectors(sorted(built.by_memory))
        ids = sorted(stored)
        row = {memory: i for i, memory in enumerate(ids)}
        texts, categories, evidence, keys = [], [], [], []
        for question in conversation.questions:
            query = read_message(
                built.store,
                functools.partial(_matcher, built.store),
                question.text,
                conversation.now,
                built.zone,
                policy,
            )
            texts.append(query.vector_text)
            categories.append(question.category)
            held = [
                (row[m], len(k & question.evidence))
                for m, k in built.by_memory.items()
                if m in row and k & question.evidence
            ]
            evidence.append(sorted(held))
            keys.append(len(question.evidence))
        vectors = np.asarray([stored[i] for i in ids], dtype=np.float32)
        asked = np.asarray(embedder.embed(texts), dtype=np.float64)
        out.append(Chat(ids, vectors.astype(np.float64), asked, categories, evidence, keys))
        built.service.close()
    progress(f"  {name}: {len(out)} stores read")
    return out


def pairs(chats: Sequence[Chat]) -> tuple[Any, Any]:
    """Questions' vectors and their evidence's normalised mean vectors."""
    questions, targets = [], []
    for chat in chats:
        for vector, held in zip(chat.questions, chat.evidence, strict=True):
            if held:
                mean = chat.vectors[[r for r, _ in held]].mean(axis=0)
                questions.append(vector)
                targets.append(mean / np.linalg.norm(mean))
    return np.asarray(questions), np.asarray(targets)


def ridge(chats: Sequence[Chat], weight: float) -> Any:
    """W = (QᵀQ + λI)⁻¹ (QᵀE + λI)."""
    q, e = pairs(chats)
    eye = np.eye(q.shape[1])
    return np.linalg.solve(q.T @ q + weight * eye, q.T @ e + weight * eye)


def contrastive(chats: Sequence[Chat], form: str, weight: float) -> Any:
    """Softmax over each question's own store toward its evidence, from the identity, with
    ``weight`` · ||W − I||²; ``form`` diag, full or low (identity + rank 16). Deterministic."""
    batches = []
    for chat in chats:
        rows = [i for i, held in enumerate(chat.evidence) if held]
        target = np.zeros((len(rows), len(chat.ids)))
        for n, i in enumerate(rows):
            held = chat.evidence[i]
            target[n, [r for r, _ in held]] = 1.0 / len(held)
        if rows:
            batches.append((chat.questions[rows], target, chat.vectors))
    count = sum(len(b[0]) for b in batches)
    rng = np.random.default_rng(0)
    eye = np.eye(DIMENSION)
    low = (
        rng.standard_normal((DIMENSION, RANK)) * 0.01,
        rng.standard_normal((DIMENSION, RANK)) * 0.01,
    )
    delta = np.zeros((DIMENSION, DIMENSION)) if form == "full" else np.zeros(DIMENSION)

    def mapped() -> Any:
        if form == "full":
            return eye + delta
        if form == "diag":
            return np.diag(1.0 + delta)
        return eye + low[0] @ low[1].T

    for _ in range(STEPS):
        w = mapped()
        grad = np.zeros((DIMENSION, DIMENSION))
        for questions, target, vectors in batches:
            scores = (questions @ w) @ vectors.T / TEMPERATURE
            scores -= scores.max(axis=1, keepdims=True)
            shares = np.exp(scores)
            shares /= shares.sum(axis=1, keepdims=True)
            grad += questions.T @ ((shares - target) @ vectors) / TEMPERATURE
        grad /= count
        if form == "full":
            delta = delta - RATE * (grad + 2 * weight * delta)
        elif form == "diag":
            delta = delta - RATE * (np.diag(grad) + 2 * weight * delta)
        else:
            u, v = low
            step_u = grad @ v + 2 * weight * u @ (v.T @ v)
            step_v = grad.T @ u + 2 * weight * v @ (u.T @ u)
            low = (u - RATE * step_u, v - RATE * step_v)
    return mapped()


Map = Callable[[Any], Any]


def fitted(spec: str, chats: Sequence[Chat]) -> Map:
    """The map ``spec`` (form:number) fitted on ``chats``: a function of a query matrix."""
    form, _, number = spec.partition(":")
    value = float(number)
    if form == "ridge":
        w = ridge(chats, value)
        return lambda q: q @ w
    if form in ("diag", "full", "low"):
        w = contrastive(chats, form, value)
        return lambda q: q @ w
    if form == "centre":
        mean = pairs(chats)[0].mean(axis=0)
        return lambda q: q - value * mean
    if form == "general":
        general = embedder_named("minilm").embed(offtopic_questions())
        away = np.asarray(general, dtype=np.float64).mean(axis=0)
        return lambda q: q - value * away
    raise SystemExit(f"unknown map {spec!r} (ridge:L, diag:M, full:M, low:M, centre:A, general:A)")


def leg_recall(chats: Sequence[Chat], moved: Map | None = None) -> float:
    """The vector leg's recall@10 over every question (evidence keys in its first ten)."""
    shares = []
    for chat in chats:
        queries = chat.questions if moved is None else moved(chat.questions)
        scores = queries @ chat.vectors.T  # ranking by cosine: the query's norm does not matter
        for score, held, keys in zip(scores, chat.evidence, chat.keys, strict=True):
            top = set(np.argsort(-score, kind="stable")[:10].tolist())
            shares.append(sum(n for r, n in held if r in top) / keys)
    return float(np.mean(shares))


def within_set(chats: Sequence[Chat], spec: str, folds: int = 5) -> float:
    """The vector leg's recall@10 with the map fitted on the set's other conversations (its
    ``folds`` folds by conversation, every ``folds``-th one held out in turn)."""
    total, count = 0.0, 0
    for fold in range(folds):
        held = list(chats[fold::folds])
        moved = fitted(spec, [c for i, c in enumerate(chats) if i % folds != fold])
        asked = sum(len(c.keys) for c in held)
        total += leg_recall(held, moved) * asked
        count += asked
    return total / count


def matrix_of(spec: str, chats: Sequence[Chat]) -> Any:
    """The map as a matrix (centre: the identity and a shift are not one; refused)."""
    if spec.startswith("centre"):
        raise SystemExit("--save: centre is a shift, not a matrix")
    return fitted(spec, chats)(np.eye(DIMENSION))


def patched(moved: Map, where: str) -> Callable[[], None]:
    """Recall's vector leg with the adapted query: ``rank`` (the KNN reads W q, the hits carry
    their raw cosine) or ``everywhere`` (W q is the query vector). Returns the undo."""
    # legs.py's names (vector_leg is imported there from vector_legs.py), patched where read.
    names = vars(legs)
    leg, vector_of = names["vector_leg"], legs.query_vector

    def adapted(query: Any) -> Any:
        out = moved(np.asarray(query, dtype=np.float64)[None, :])[0]
        return (out / np.linalg.norm(out)).astype(np.float32)

    def ranked(store: Any, vector: Any, depth: int, kinds: Sequence[Any] = ()) -> list[VectorHit]:
        hits = store.vectors.nearest(adapted(vector), [Status.ACTIVE], depth, kinds)
        raw = cosines_of(store, vector, [h.memory_id for h in hits], {})
        return [VectorHit(h.memory_id, raw.get(h.memory_id, h.cosine)) for h in hits]

    def adapted_query(embedder: Embedder, query: str) -> Vector:
        vector: Vector = adapted(vector_of(embedder, query))
        return vector

    if where == "rank":
        names["vector_leg"] = ranked
    else:
        legs.query_vector = adapted_query

    def undo() -> None:
        names["vector_leg"] = leg
        legs.query_vector = vector_of

    return undo


def run_recall(
    name: str, conversations: Sequence[Conversation], embedder: Any, where: Path
) -> tuple[list[Any], list[Any]]:
    """Recall as it is on every question and general question of a set."""
    policy = RecallPolicy()
    general_questions = offtopic_questions()
    outcomes, general = [], []
    for number, conversation in enumerate(conversations):
        built = build(conversation, str(where / f"{name}-{number}.db"), embedder, open_with_store)
        for question in conversation.questions:
            evidence = gather(built, question.text, policy)
            outcomes.append(judge(built, question, evidence, policy)[0])
        general.extend(quiet(built, general_questions, policy)[None])
        built.service.close()
    return outcomes, general


def print_owner(maps: str, both: Sequence[Chat], embedder: Any, where: Path) -> None:
    """The vector leg's recall@10 on the owner paraphrase sets (never fitted on), each map
    fitted on both dev sets."""
    owner: dict[str, list[Chat]] = {}
    for name, path in (("owner", DATA), ("held-out", HELDOUT)):
        data = load_owner(path)
        for size in (20, 200, 2000):
            label = f"{name}-{size}"
            owner[label] = chats_of(owner_stores(data, size), label, embedder, where)
    rows = [["identity", *(f"{leg_recall(c):.3f}" for c in owner.values())]]
    for spec in filter(None, maps.split(",")):
        moved = fitted(spec, both)
        rows.append([spec, *(f"{leg_recall(c, moved):.3f}" for c in owner.values())])
    print("\nVector leg recall@10 on the owner sets, map fitted on LoCoMo and BEAM together:\n")
    print_table(("map", *owner), rows)


def main() -> int:
    """Fit, measure out of set, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--maps", default="ridge:1,ridge:10,ridge:100,centre:0.5")
    parser.add_argument("--within", default="", help="these maps fitted within each set too")
    parser.add_argument(
        "--owner", action="store_true", help="the maps fitted on both sets, on the owner sets"
    )
    parser.add_argument("--pipeline", default="", help="this map through recall as it is")
    parser.add_argument("--stores", type=Path, default=Path("/tmp/adapter-stores"))
    parser.add_argument("--save", type=Path, help="the --pipeline map fitted on both, float16")
    args = parser.parse_args()
    started = time.time()
    args.stores.mkdir(parents=True, exist_ok=True)
    sets = {"locomo": locomo(), "beam": beam()}
    embedder = embedder_named("minilm")
    chats = {name: chats_of(c, name, embedder, args.stores) for name, c in sets.items()}
    other = {"locomo": "beam", "beam": "locomo"}
    rows = [["identity", *(f"{leg_recall(chats[s]):.3f}" for s in sets), "-", "-"]]
    for spec in filter(None, args.maps.split(",")):
        row = [spec]
        fits = {s: fitted(spec, chats[s]) for s in sets}
        row += [f"{leg_recall(chats[s], fits[other[s]]):.3f}" for s in sets]
        row += [f"{leg_recall(chats[s], fits[s]):.3f}" for s in sets]
        rows.append(row)
        progress(f"  {spec} measured")
    print("Vector leg recall@10, map fitted on the other set (out of set) and on the same one:\n")
    heads = ("map", "LoCoMo, fitted on BEAM", "BEAM, fitted on LoCoMo")
    print_table((*heads, "LoCoMo in set", "BEAM in set"), rows)
    if args.within:
        print("\nWithin one set, fitted on its other conversations (5 folds by conversation):\n")
        within = [
            [spec, *(f"{within_set(chats[s], spec):.3f}" for s in sets)]
            for spec in filter(None, args.within.split(","))
        ]
        print_table(("map", "LoCoMo", "BEAM"), within)
    if args.owner:
        print_owner(args.maps, [*chats["locomo"], *chats["beam"]], embedder, args.stores)
    if args.pipeline:
        results: dict[str, tuple[list[Any], list[Any]]] = {}
        for name, conversations in sets.items():
            results[f"{name}, as is"] = run_recall(name, conversations, embedder, args.stores)
            moved = fitted(args.pipeline, chats[other[name]])
            for where in ("rank", "everywhere"):
                undo = patched(moved, where)
                try:
                    label = f"{name}, {args.pipeline} from {other[name]}, {where}"
                    results[label] = run_recall(name, conversations, embedder, args.stores)
                finally:
                    undo()
                progress(f"  {name} {where} done")
        print("\nRecall as it is, with the map fitted on the other set:\n")
        print_table(SUMMARY_HEADERS, [summary_rows(n, o, g) for n, (o, g) in results.items()])
        for label, (outcomes, _) in results.items():
            print(f"\n{label}, per category (30+ questions):\n")
            print_table(CATEGORY_HEADERS, category_rows(outcomes, 30))
    if args.save:
        both = [*chats["locomo"], *chats["beam"]]
        np.save(args.save, matrix_of(args.pipeline or "ridge:100", both).astype(np.float16))
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
