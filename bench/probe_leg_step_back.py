"""Where a leg's evidence falls out of the fused ten, and rules that would let one leg step back
(issue 28, session 14, stream info15). A probe over the shipped ranking, not recall: each rule
re-orders the ranking recall made (the gates, the relevance and the episode leg as shipped) and
the fused recall@10 is counted as ``bench_beam.py`` counts it; a rule worth building would then
be a ``RecallPolicy`` field measured end to end with ``bench_beam.py --policies``.

The rules, each applied per question:

- ``winner M``: a clear winner of the vector leg (its first cosine at least M above its second)
  is placed first in the fused ranking;
- ``text x F when vector tenth >= T``: when the vector leg's tenth cosine reaches T (ten close
  matches: the leg is sure), a candidate whose cosine is below that tenth counts its text rank
  at F of its weight (the text leg's word matches that the meaning ranks below the vector
  leg's ten step back);
- ``cosine x W when vector tenth >= T``: the fused score's cosine weighs W ranks' worth (1.5
  shipped) when the vector leg's tenth cosine reaches T;
- ``text x F when overlap < O``: the text leg's rank counts at F when the two legs' first tens
  share fewer than O memories (the legs disagree);
- ``text x F when cosines < R``: the same when the text leg's first ten's mean cosine is under
  R times the vector leg's;
- ``asked opens``: a silenced question that asks what its writer said ("What … did I mention
  …?") is ranked again with the vector gate and the opening score set aside.

``--cases CATEGORY`` prints, for every question of that category where the fused ten hold
less evidence than a leg's first ten, each evidence memory's ranks and cosine and the fused
ranking's first ``--above`` items (score, relevance, cosine, ranks, the query words a text
match holds). Stores are kept in ``--stores`` (those of ``fusion_legs.py`` are reused).

    .venv/bin/python bench/probe_leg_step_back.py [--sets beam,locomo] \
        [--cases information_extraction] [--above 16] [--stores /tmp/fusion-legs]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import Built, Question, beam, build, embedder_named, locomo
from report import mean, print_table, progress
from stores import open_with_store

from memoryd.recall.legs import Evidence
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.relevance_policy import UNKNOWN_COSINE
from memoryd.recall.score import rank
from memoryd.recall.score_policy import Ranking, Scored

POLICY = RecallPolicy()
# A question that asks what its writer said before.
ASKS_WHAT_I_SAID = re.compile(
    r"\b(did|have) i (ever )?(mention|say|said|tell|told|share)|\bi (mentioned|said|told you)\b",
    re.IGNORECASE,
)
Rule = Callable[[Sequence[Scored], Evidence], list[str]]


def ids(items: Sequence[Scored]) -> list[str]:
    return [s.memory.id for s in items]


def cosine_of(evidence: Evidence, memory_id: str) -> float:
    return evidence.candidates[memory_id].cosine or 0.0


def clear_winner(margin: float) -> Rule:
    def rule(items: Sequence[Scored], evidence: Evidence) -> list[str]:
        order = ids(items)
        vector = evidence.rankings.get("vector", [])
        if len(vector) < 2 or vector[0] not in order[1:]:
            return order
        if cosine_of(evidence, vector[0]) - cosine_of(evidence, vector[1]) < margin:
            return order
        return [vector[0], *(i for i in order if i != vector[0])]

    return rule


def rescored(
    items: Sequence[Scored],
    text_weight: Callable[[Scored], float],
    cosine_weight: float = POLICY.fused_cosine_weight,
) -> list[str]:
    """``items`` ordered by the fused score again, each one's text rank weighed as told (and
    the cosine at ``cosine_weight``)."""
    scored = []
    for s in items:
        rrf = sum(
            (text_weight(s) if leg == "text" else 1.0) / (POLICY.rrf_k + r)
            for leg, r in s.ranks.items()
        )
        cosine = UNKNOWN_COSINE if s.cosine is None else max(0.0, s.cosine)
        rrf += cosine_weight * cosine / POLICY.rrf_k
        scored.append((rrf * s.weight * s.recency, s.memory.id))
    scored.sort(key=lambda t: t[1], reverse=True)
    scored.sort(key=lambda t: -t[0])
    return [memory_id for _, memory_id in scored]


def confident_vector(tenth_at_least: float, weight: float) -> Rule:
    def rule(items: Sequence[Scored], evidence: Evidence) -> list[str]:
        vector = evidence.rankings.get("vector", [])
        tenth = cosine_of(evidence, vector[9]) if len(vector) >= 10 else 0.0
        if tenth < tenth_at_least:
            return ids(items)

        def below(s: Scored) -> float:
            return weight if s.cosine is not None and s.cosine < tenth else 1.0

        return rescored(items, below)

    return rule


def sure_cosine(tenth_at_least: float, weight: float) -> Rule:
    def rule(items: Sequence[Scored], evidence: Evidence) -> list[str]:
        vector = evidence.rankings.get("vector", [])
        tenth = cosine_of(evidence, vector[9]) if len(vector) >= 10 else 0.0
        if tenth < tenth_at_least:
            return ids(items)
        return rescored(items, lambda _: 1.0, weight)

    return rule


def legs_disagree(measure: str, under: float, weight: float) -> Rule:
    def rule(items: Sequence[Scored], evidence: Evidence) -> list[str]:
        text = evidence.rankings.get("text", [])[:10]
        vector = evidence.rankings.get("vector", [])[:10]
        if measure == "overlap":
            value = float(len(set(text) & set(vector)))
        else:
            vector_mean = mean([cosine_of(evidence, i) for i in vector])
            text_mean = mean([cosine_of(evidence, i) for i in text])
            value = text_mean / vector_mean if text and vector_mean > 0 else 1.0
        return rescored(items, lambda _: weight) if value < under else ids(items)

    return rule


RULES: dict[str, Rule] = {f"winner {m}": clear_winner(m) for m in (0.03, 0.05, 0.1)}
RULES |= {
    f"text x {f} when vector tenth >= {t}": confident_vector(t, f)
    for t in (0.3, 0.4, 0.45, 0.5)
    for f in (0.0, 0.5)
}
RULES |= {
    f"cosine x {w} when vector tenth >= {t}": sure_cosine(t, w)
    for t in (0.45, 0.5)
    for w in (2.5, 3.5)
}
RULES |= {f"text x 0.5 when overlap < {o}": legs_disagree("overlap", o, 0.5) for o in (2, 3, 4)}
RULES |= {
    f"text x 0.5 when cosines < {r}": legs_disagree("cosines", r, 0.5) for r in (0.7, 0.8, 0.9)
}


def share(built: Built, question: Question, ranked: Sequence[str]) -> float:
    held = set().union(*(built.by_memory.get(i, set()) for i in ranked[:10]))
    return len(held & question.evidence) / len(question.evidence)


def print_case(
    built: Built, question: Question, evidence: Evidence, ranking: Ranking, above: int
) -> None:
    order = ids(ranking.items)
    print(f"\n{built.conversation.name}, {question.text!r}: silence {ranking.silence}")
    for memory_id, keys in sorted(built.by_memory.items()):
        if not keys & question.evidence:
            continue
        ranks = {leg: found.index(memory_id) + 1 for leg, found in evidence.rankings.items()
                 if memory_id in found}  # fmt: skip
        place = order.index(memory_id) + 1 if memory_id in order else None
        cosine = evidence.candidates[memory_id].cosine if memory_id in evidence.candidates else None
        print(f"  evidence {ranks}, cosine {cosine}, fused place {place}")
    for place, s in enumerate(ranking.items[:above], start=1):
        mark = "*" if built.by_memory.get(s.memory.id, set()) & question.evidence else " "
        known = evidence.candidates.get(s.memory.id)
        words = sorted(known.words) if known is not None and "text" in s.ranks else []
        shown = "-" if s.cosine is None else f"{s.cosine:.3f}"
        print(
            f"  {mark}{place:2} score {s.score:.4f} relevance {s.relevance:.2f} cosine {shown}"
            f" {dict(s.ranks)} {words} {s.memory.content[:70]!r}"
        )


def measure(built: Built, question: Question, cases: str | None, above: int) -> dict[str, float]:
    now = built.conversation.now
    evidence = built.service.evidence(question.text, now=now)
    ranking, after = rank(built.store, evidence, now, POLICY, built.zone)
    found = {"shipped": share(built, question, ids(ranking.items))}
    for leg in ("text", "vector"):
        found[leg] = share(built, question, evidence.rankings.get(leg, []))
    for label, rule in RULES.items():
        found[label] = share(built, question, rule(ranking.items, after))
    found["asked opens"] = found["shipped"]
    if ranking.silence is not None and ASKS_WHAT_I_SAID.search(question.text):
        opened = replace(POLICY, vector_gate=-1.0, open_score=0.0)
        again, _ = rank(built.store, evidence, now, opened, built.zone)
        found["asked opens"] = share(built, question, ids(again.items))
    if question.category == cases and found["shipped"] < max(found["text"], found["vector"]):
        print_case(built, question, after, ranking, above)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--cases", default=None, help="a category whose misses to print")
    parser.add_argument("--above", type=int, default=16, help="fused places printed per case")
    parser.add_argument("--stores", type=Path, default=Path("/tmp/fusion-legs"))
    args = parser.parse_args()
    args.stores.mkdir(parents=True, exist_ok=True)
    for name in args.sets.split(","):
        conversations = {"beam": beam, "locomo": locomo}[name]()
        embedder = embedder_named("minilm", [q.text for c in conversations for q in c.questions])
        groups: dict[str, list[dict[str, float]]] = defaultdict(list)
        for number, conversation in enumerate(conversations):
            path = str(args.stores / f"{name}-{number}.db")
            built = build(conversation, path, embedder, open_with_store)
            for question in conversation.questions:
                found = measure(built, question, args.cases, args.above)
                groups[question.category].append(found)
                groups["(all)"].append(found)
            built.service.close()
            progress(f"  {name}: {conversation.name} done")
        shown = sorted(c for c, g in groups.items() if len(g) >= 30)
        labels = list(groups["(all)"][0])
        rows = [
            [label, *(f"{mean([f[label] for f in groups[c]]):.3f}" for c in shown)]
            for label in labels
        ]
        print(f"\n{name}, fused recall@10 (categories of 30+ questions):\n")
        print_table(("rule", *shown), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
