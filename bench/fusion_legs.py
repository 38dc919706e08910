"""Where fusion loses to its own legs: the fusion, or the gates before it?

For every question of LoCoMo, BEAM and the owner paraphrase set (200 memories), gathers the
evidence once, ranks it as recall does and prints, per category (per store size for the owner
set): each leg's recall@10 as ``bench_beam.py`` counts it (its first ten, whatever the gates
said), the same counting only the candidates the gates admitted (what the fusion can rank;
a silenced question admits none), the fused recall@10, and its ceiling (the ten admitted
candidates holding the most evidence). Fused below a leg but level with that leg's admitted
share: the gates lost it, not the fusion.

``--policies`` also prints the fused recall@10 under other ``RecallPolicy`` numbers (as
``bench_beam.py --policies``), from the same gathering. Stores are kept in ``--stores``.
``--misses`` lists, question by question, every evidence memory a leg's first ten holds and the
fused ten lacks, and where it went (the gate that stopped it, or its place in the fused ranking).

    .venv/bin/python bench/fusion_legs.py [--sets beam,locomo,owner] \
        [--policies fused_vector_margin=0] [--stores /tmp/fusion-legs] [--misses]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_paraphrase import load as load_owner
from bench_paraphrase import stores as owner_stores
from devsets import (
    Conversation,
    beam,
    build,
    embedder_named,
    locomo,
    parse_settings,
    with_settings,
)
from report import mean, print_table, progress
from stores import open_with_store

from memoryd.recall.legs import Evidence
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score import rank
from memoryd.recall.score_policy import Ranking

LEGS = ("text", "vector")
Keys = frozenset[str]


def share(held: set[str], evidence: frozenset[str]) -> float:
    return len(held & evidence) / len(evidence)


def why_stopped(reason: str) -> str:
    """The gate a dropped candidate's reason names, in a word."""
    if reason.startswith("no strong evidence"):
        return "silenced"
    if "time window" in reason:
        return "time window"
    if "the meaning does not" in reason:
        return "text: meaning"
    return "vector gate" if "vector: cosine" in reason else "other gate"


def print_misses(
    title: str, evidence: Evidence, ranking: Ranking, by_memory: dict[str, set[str]], keys: Keys
) -> None:
    """The evidence memories in a leg's first ten that the fused ten lacks, and where each went."""
    place = {s.memory.id: n for n, s in enumerate(ranking.items, start=1)}
    reasons = {d.memory_id: d.reason for d in ranking.dropped}
    lines = []
    for memory_id in sorted({i for i in by_memory if by_memory[i] & keys}):
        found = {leg: evidence.rankings.get(leg, []) for leg in LEGS}
        ranks = {leg: ids.index(memory_id) + 1 for leg, ids in found.items() if memory_id in ids}
        if min(ranks.values(), default=11) > 10 or place.get(memory_id, 11) <= 10:
            continue
        where = (
            f"fused #{place[memory_id]}"
            if memory_id in place
            else f"stopped: {why_stopped(reasons.get(memory_id, ''))}"
        )
        legs = ", ".join(f"{leg} #{n}" for leg, n in ranks.items())
        cosine = evidence.candidates[memory_id].cosine or 0.0
        lines.append(
            f"    {'/'.join(sorted(by_memory[memory_id]))}: {legs}, cosine {cosine:.3f}: {where}"
        )
    if lines:
        print(title, *lines, sep="\n")


def measure(
    name: str,
    conversations: Sequence[Conversation],
    where: Path,
    policies: dict[str, RecallPolicy],
    stopped: Counter[str],
    misses: bool = False,
) -> list[tuple[str, dict[str, float]]]:
    """(category, measures) for every question; measures as the module says. ``stopped``
    counts the evidence memories in a leg's first ten that the gates did not admit, by gate."""
    asked = [q.text for c in conversations for q in c.questions]
    embedder = embedder_named("minilm", asked)
    out = []
    for number, conversation in enumerate(conversations):
        path = str(where / f"{name}-{number}.db")
        built = build(conversation, path, embedder, open_with_store)
        for question in conversation.questions:
            evidence = built.service.evidence(question.text, now=conversation.now)
            found: dict[str, float] = {}
            for label, policy in policies.items():
                ranking, _ = rank(built.store, evidence, conversation.now, policy, built.zone)
                keys = [built.by_memory.get(s.memory.id, set()) for s in ranking.items]
                found[f"fused, {label}"] = share(set().union(*keys[:10]), question.evidence)
                if label != "shipped":
                    continue
                for leg in LEGS:
                    first = evidence.rankings.get(leg, [])[:10]
                    held = set().union(*(built.by_memory.get(i, set()) for i in first))
                    found[leg] = share(held, question.evidence)
                    admitted = [k for s, k in zip(ranking.items, keys, strict=True) if
                                s.ranks.get(leg, 11) <= 10]  # fmt: skip
                    found[f"{leg}, admitted"] = share(set().union(*admitted), question.evidence)
                reasons = {d.memory_id: d.reason for d in ranking.dropped}
                firsts = {i for leg in LEGS for i in evidence.rankings.get(leg, [])[:10]}
                for memory_id in firsts & reasons.keys():
                    if built.by_memory.get(memory_id, set()) & question.evidence:
                        stopped[why_stopped(reasons[memory_id])] += 1
                best = sorted(keys, key=lambda k: -len(k & question.evidence))[:10]
                found["ceiling"] = share(set().union(*best), question.evidence)
                if misses and found[f"fused, {label}"] < max(found[leg] for leg in LEGS):
                    title = f"{name} {number}, {question.category}: {question.text[:100]!r}"
                    print_misses(title, evidence, ranking, built.by_memory, question.evidence)
            out.append((question.category, found))
        built.service.close()
        progress(f"  {name}: {conversation.name} done")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo,owner")
    parser.add_argument("--policies", default="", help="as bench_beam.py --policies")
    parser.add_argument("--stores", type=Path, default=Path("/tmp/fusion-legs"))
    parser.add_argument("--misses", action="store_true", help="list the fused ten's misses")
    args = parser.parse_args()
    args.stores.mkdir(parents=True, exist_ok=True)
    policies = {"shipped": RecallPolicy()}
    for spec in filter(None, args.policies.split(",")):
        policies[spec] = with_settings(RecallPolicy(), parse_settings(spec))
    columns = ["text", "text, admitted", "vector", "vector, admitted"]
    columns += [f"fused, {label}" for label in policies] + ["ceiling"]
    for name in args.sets.split(","):
        data = {"beam": beam, "locomo": locomo}.get(name)
        conversations = data() if data else owner_stores(load_owner(), 200)
        stopped: Counter[str] = Counter()
        measured = measure(name, conversations, args.stores, policies, stopped, args.misses)
        groups: dict[str, list[dict[str, float]]] = defaultdict(list)
        for category, found in measured:
            groups[category].append(found)
            groups["(all)"].append(found)
        rows = [
            [category, len(group), *(f"{mean([f[c] for f in group]):.3f}" for c in columns)]
            for category, group in sorted(groups.items())
        ]
        print(f"\n{name}:\n")
        print_table(("category", "n", *columns), rows)
        where = ", ".join(f"{gate} {n}" for gate, n in stopped.most_common())
        print(f"\nEvidence in a leg's first ten the gates stopped: {where or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
