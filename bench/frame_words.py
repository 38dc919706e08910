"""Offline study (issue 28, session 13): the request's frame told from its subject by how
common each word is in English, not by a list of words.

A question's word that is common in English (Zipf frequency, ``wordfreq``) but rare in a chat
store ("aspects", "order", "items", "mention") is likely the request's frame; a word rare in
both ("screenplay", "patent") its subject. Two forms are measured, each against the tree as it
is, over the bench's own stores (fused and text-leg R@10 per category):

* ``drop Z``: the text leg's words (and the relevance score's word weights, which read the
  same words) without those of Zipf >= Z, when the message has a word below Z (else all kept).
  One gathering per Z.
* ``weigh C^P``: the text leg's hits (as gathered, unchanged words) re-ordered by a BM25 whose
  term weight is IDF x min(1, C / zipf)^P (term counts and lengths from the memories' words,
  k1 1.2, b 0.75, the mean length over the hits); the fused ranking recomputed from them.
  ``99^1`` weighs nothing: this BM25 without the frequency, the control of the other forms.

Nothing in ``src/`` changes: the variants patch ``Query.words`` or the evidence in this process.
``wordfreq`` is not a dependency of the project; install it apart and put it on the path::

    pip download wordfreq==3.1.1 -d /tmp/frame13/wheels
    pip install --no-index --find-links /tmp/frame13/wheels --target /tmp/frame13/site wordfreq
    PYTHONPATH=/tmp/frame13/site:src .venv/bin/python bench/frame_words.py \
        --sets beam,locomo --stores /tmp/frame13/stores --drop 4,4.5,5,5.5 \
        --weigh 99^1,4^1,4.5^1,5^1,4^3,4.5^3

``--owner`` only counts how many of the owner paraphrase sets' questions (and the held-out
set's) would lose a word under each ``drop`` cutoff (no recall is run for them).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import beam, build, embedder_named, locomo, offtopic_questions, recall_at
from stores import open_with_store

from memoryd.recall.legs import Evidence
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import Query
from memoryd.recall.score import rank
from memoryd.words import query_terms

DATA = Path(__file__).resolve().parent / "data"
Zipf = Callable[[str], float]


def zipf_lookup() -> Zipf:
    """English Zipf frequency of a word (0 for a word wordfreq does not know)."""
    try:
        wordfreq = importlib.import_module("wordfreq")
    except ImportError:
        sys.exit("frame_words.py needs wordfreq on the path (see the module's docstring)")
    cache: dict[str, float] = {}

    def zipf(word: str) -> float:
        if word not in cache:
            cache[word] = float(wordfreq.zipf_frequency(word, "en"))
        return cache[word]

    return zipf


def dropped(words: Sequence[str], zipf: Zipf, cutoff: float | None) -> tuple[str, ...]:
    """``words`` without those of Zipf >= ``cutoff``, unless that leaves none."""
    if cutoff is None:
        return tuple(words)
    kept = tuple(w for w in words if zipf(w) < cutoff)
    return kept or tuple(words)


def patch_words(zipf: Zipf) -> Callable[[float | None], None]:
    """Make ``Query.words`` drop the frame at a cutoff set by the returned function."""
    words_property = vars(Query)["words"]
    assert isinstance(words_property, property)
    original = words_property.fget
    assert original is not None
    state: dict[str, float | None] = {"cutoff": None}

    def words(query: Query) -> tuple[str, ...]:
        return dropped(original(query), zipf, state["cutoff"])

    setattr(Query, "words", property(words))  # noqa: B010 (a property replaced in place)

    def set_cutoff(cutoff: float | None) -> None:
        state["cutoff"] = cutoff

    return set_cutoff


def weighed(evidence: Evidence, zipf: Zipf, scale: float, power: float, store: object) -> Evidence:
    """``evidence`` with its text leg re-ordered by the frequency-weighted BM25."""
    ids = evidence.rankings.get("text")
    if not ids:
        return evidence
    memories = store.memories.get_many(ids)  # type: ignore[attr-defined]
    terms = {i: query_terms(memories[i].content) for i in ids if i in memories}
    if not terms:
        return evidence
    facts = evidence.facts
    count = max(facts.memory_count, 1)
    mean_length = sum(len(t) for t in terms.values()) / len(terms) or 1.0

    def weight(word: str) -> float:
        df = facts.word_frequency.get(word, 0)
        idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
        z = zipf(word)
        return idf * (min(1.0, scale / z) ** power if z > 0 else 1.0)

    def score(memory_id: str) -> float:
        held = terms.get(memory_id, [])
        norm = 1.2 * (0.25 + 0.75 * len(held) / mean_length)
        total = 0.0
        for word in set(facts.words):
            tf = held.count(word)
            if tf:
                total += weight(word) * tf * 2.2 / (tf + norm)
        return total

    order = sorted(ids, key=lambda i: (-score(i), ids.index(i)))
    position = {memory_id: n for n, memory_id in enumerate(order, start=1)}
    candidates = {
        memory_id: replace(c, ranks={**c.ranks, "text": position[memory_id]})
        if "text" in c.ranks and memory_id in position
        else c
        for memory_id, c in evidence.candidates.items()
    }
    return replace(evidence, candidates=candidates, rankings={**evidence.rankings, "text": order})


def measure(
    name: str,
    stores: Path,
    cutoffs: Sequence[float],
    weights: Sequence[tuple[float, float]],
    zipf: Zipf,
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Per variant, per category: each question's (fused R@10, text-leg R@10)."""
    data = beam() if name == "beam" else locomo()
    emb = embedder_named(
        "minilm", [q.text for c in data for q in c.questions] + offtopic_questions()
    )
    policy = RecallPolicy()
    set_cutoff = patch_words(zipf)
    got: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    changed: dict[str, int] = defaultdict(int)
    for number, conv in enumerate(data):
        built = build(conv, str(stores / f"{name}-{number}.db"), emb, open_with_store)
        for q in conv.questions:
            for cutoff in (None, *cutoffs):
                set_cutoff(cutoff)
                evidence = built.service.evidence(q.text, now=conv.now)
                variants = {"as is" if cutoff is None else f"drop {cutoff:g}": evidence}
                if cutoff is None:
                    for scale, power in weights:
                        variants[f"weigh {scale:g}^{power:g}"] = weighed(
                            evidence, zipf, scale, power, built.store
                        )
                else:
                    original = query_terms(q.text)
                    changed[f"drop {cutoff:g}"] += dropped(original, zipf, cutoff) != tuple(
                        original
                    )
                for label, ev in variants.items():
                    ranking, _ = rank(built.store, ev, conv.now, policy, built.zone)
                    fused = recall_at(
                        built.by_memory, [s.memory.id for s in ranking.items[:10]], q.evidence
                    )
                    text = recall_at(built.by_memory, ev.rankings.get("text", [])[:10], q.evidence)
                    got[label][q.category].append((fused, text))
                    got[label]["all"].append((fused, text))
            set_cutoff(None)
        built.service.close()
    total = sum(len(c.questions) for c in data)
    for label, n in changed.items():
        print(f"{name}: {label} changes the words of {n} of {total} questions", flush=True)
    return got


def report(name: str, got: dict[str, dict[str, list[tuple[float, float]]]]) -> None:
    """One row per category: n, then fused (text leg) R@10 per variant."""
    labels = list(got)
    print(f"\n{name} | category | n | " + " | ".join(labels))
    for category in sorted(got["as is"], key=lambda c: (c != "all", c)):
        rows = [got[label][category] for label in labels]
        cells = [
            f"{sum(f for f, _ in r) / len(r):.3f} ({sum(t for _, t in r) / len(r):.3f})"
            for r in rows
        ]
        print(f"{name} | {category} | {len(rows[0])} | " + " | ".join(cells), flush=True)


def owner(cutoffs: Sequence[float], zipf: Zipf) -> None:
    """How many of the owner sets' questions would lose a word, and which words."""
    for path in ("owner_paraphrase.json", "owner_paraphrase_heldout.json"):
        data = json.loads((DATA / path).read_text(encoding="utf-8"))
        general = data.get("unrelated", data.get("general", []))
        questions = [p["question"] for p in data["pairs"]] + list(general)
        questions += list(data.get("personal_unanswered", []))
        for cutoff in cutoffs:
            lost: dict[str, int] = defaultdict(int)
            touched = 0
            for question in questions:
                words = query_terms(question)
                kept = dropped(words, zipf, cutoff)
                if kept != tuple(words):
                    touched += 1
                    for word in set(words) - set(kept):
                        lost[word] += 1
            common = ", ".join(f"{w} {n}" for w, n in sorted(lost.items(), key=lambda x: -x[1])[:8])
            print(f"{path} drop {cutoff:g}: {touched} of {len(questions)} questions ({common})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--stores", type=Path, default=Path("/tmp/frame13/stores"))
    parser.add_argument("--drop", default="4.5,5,5.5", help="Zipf cutoffs (comma-separated)")
    parser.add_argument(
        "--weigh", default="99^1,4^1,4^3", help="C^P pairs (comma-separated; 99: no weight)"
    )
    parser.add_argument("--owner", action="store_true", help="only count the owner sets' words")
    args = parser.parse_args()
    zipf = zipf_lookup()
    cutoffs = [float(c) for c in args.drop.split(",") if c]
    weights = [(float(c.split("^")[0]), float(c.split("^")[1])) for c in args.weigh.split(",") if c]
    if args.owner:
        owner(cutoffs, zipf)
        return
    args.stores.mkdir(parents=True, exist_ok=True)
    for name in args.sets.split(","):
        if name not in ("beam", "locomo"):
            sys.exit(f"unknown set {name!r}: beam or locomo")
        started = time.perf_counter()
        report(name, measure(name, args.stores, cutoffs, weights, zipf))
        print(f"{name}: {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
