"""Recall on BEAM (and LoCoMo, side by side): each leg's recall@10, the fused ranking's, block
recall and size, how often an answerable question gets an empty memories section, how often a
general question (capitals, code, recipes) does, and where the evidence that did not reach the
block was lost.

BEAM protocol (../shared/data/README.md): each user message of a chat is an event memory
("User: " + its first 2,000 characters), each session one day after the one before; a question
keeps its evidence ids that are user messages; recall within the chat, one day after its last
session. LoCoMo: every turn an event at its session date (as bench_locomo.py, stamped at the
session). The general questions are ``bench/data/offtopic_questions.txt``, asked of every store.

Where evidence is lost, in pipeline order: not stored (the credential screen), never a candidate
(no leg ranked it within its depth), gate (found, but no leg's gate let it in), silenced (let
in, but nothing was strong enough to open the block), relative cut, budget; and, beside them,
evidence in the block only as an excerpt that left the answer's words out.

    .venv/bin/python bench/bench_beam.py [--sets beam,locomo] [--chats N] [--samples N] \
        [--depths 70,50] [--cuts 0.5] [--excerpts 0,200/400/always] \
        [--neighbours 0,2] [--policies rrf_k=30+relative_cut=0.48]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import (
    CATEGORY_HEADERS,
    EMBEDDERS,
    LOSS_HEADERS,
    SUMMARY_HEADERS,
    Conversation,
    LegDepth,
    Outcome,
    Settings,
    beam,
    build,
    category_rows,
    compound,
    embedder_named,
    gather,
    gathering,
    judge,
    locomo,
    loss_row,
    offtopic_questions,
    parse_settings,
    quiet,
    summary_rows,
    truncated,
    with_settings,
)
from devsets import _matcher as name_matcher
from report import print_table, progress
from respell import SAME_PERSON, by_kind, load_table, respelled, taken_for
from stores import open_with_store

from memoryd.recall.legs import Evidence
from memoryd.recall.policy import RecallPolicy

Variant = tuple[LegDepth, float | None, tuple[int, ...] | None, int | None, Settings | None]
"""A leg depth, a relative cut and an excerpt size to judge at (None: the shipped policy's own;
excerpt (0, 0): every memory packed whole; else (excerpt characters, memories longer than
this many excerpted); the episode leg's neighbours of the best event; any other
``RecallPolicy`` numbers, by field name)."""


def policy_of(shipped: RecallPolicy, variant: Variant) -> RecallPolicy:
    """The shipped policy with what ``variant`` changes."""
    _, cut, sizes, neighbours, settings = variant
    policy = shipped if cut is None else replace(shipped, relative_cut=cut)
    if settings:
        policy = with_settings(policy, settings)
    if neighbours is not None:
        policy = replace(policy, episode_neighbours=neighbours)
    if sizes is not None:
        always = len(sizes) > 2
        return replace(
            policy,
            excerpt_chars=sizes[0],
            excerpt_over_chars=sizes[1],
            excerpt_only_over_budget=not always,
        )
    return policy


def parse_excerpt(spec: str) -> tuple[int, ...]:
    """``0`` (packed whole), ``200`` (200 characters of memories over the shipped length, when
    they do not fit whole), ``200/400`` (of memories over 400), ``200/400/always`` (every such
    memory, fitting or not)."""
    chars, _, rest = spec.partition("/")
    over, _, always = rest.partition("/")
    if int(chars) == 0:
        return (0, 0)
    sizes = (int(chars), int(over) if over else RecallPolicy().excerpt_over_chars)
    return (*sizes, 1) if always == "always" else sizes


def run_set(
    name: str,
    conversations: list[Conversation],
    embedder: Any,
    tmp: str,
    variants: list[Variant],
    general_questions: list[str],
    names_asked: dict[str, list[tuple[str, str, str]]] | None = None,
    names_taken: dict[str, list[int]] | None = None,
) -> dict[Variant, tuple[list[Outcome], list[bool]]]:
    """Build each conversation's store, ask its questions and the general ones; judged at
    each variant (a smaller leg depth: :func:`devsets.truncated`; another relative cut) from
    one gathering. With ``names_asked`` (respelled names per conversation), counts into
    ``names_taken`` how many the store's name matcher takes for the name they replace."""
    shipped = RecallPolicy()
    policies = {variant: policy_of(shipped, variant) for variant in variants}
    depths = list(dict.fromkeys(variant[0] for variant in variants))
    results: dict[Variant, tuple[list[Outcome], list[bool]]] = {v: ([], []) for v in variants}
    for number, conversation in enumerate(conversations):
        built = build(
            conversation, str(Path(tmp) / f"{name}-{number}.db"), embedder, open_with_store
        )
        if names_asked is not None and names_taken is not None:
            matcher = name_matcher(built.store)
            for kind, counts in taken_for(matcher, names_asked[conversation.name]).items():
                row = names_taken.setdefault(kind, [0, 0, 0])
                row[:] = [a + b for a, b in zip(row, counts, strict=True)]
        for question in conversation.questions:
            # One gathering per reading of the message (a variant may change what the legs read).
            gathered: dict[tuple[float | None, ...], Evidence] = {}
            for variant, policy in policies.items():
                key = gathering(policy)
                if key not in gathered:
                    gathered[key] = gather(built, question.text, policy)
                evidence = gathered[key]
                outcome, _ = judge(built, question, truncated(evidence, variant[0]), policy)
                results[variant][0].append(outcome)
        # The relative cut never empties a block: the general questions depend on the depth
        # and on the policy's other numbers (the open score, the coverage of a text match).
        distinct: list[RecallPolicy] = []
        for policy in policies.values():
            if policy not in distinct:
                distinct.append(policy)
        for same in distinct:
            empty = quiet(built, general_questions, same, depths)
            for variant in variants:
                if policies[variant] == same:
                    results[variant][1].extend(empty[variant[0]])
        built.service.close()
        progress(f"  {name}: {conversation.name} done")
    return results


def parse_depth(spec: str) -> LegDepth:
    """``50`` (every leg), or ``vector:50+text:70`` (those legs; the others as gathered)."""
    if ":" not in spec:
        return int(spec)
    return tuple((leg, int(n)) for leg, n in (part.split(":") for part in spec.split("+")))


def label(name: str, variant: Variant) -> str:
    """The set's name with what its variant changes."""
    depth, cut, sizes, neighbours, settings = variant
    deep = depth if not isinstance(depth, tuple) else " ".join(f"{g} {n}" for g, n in depth)
    changed = [f"leg depth {deep}"] * (depth is not None) + [f"cut {cut}"] * (cut is not None)
    excerpted = "off" if sizes == (0, 0) else "{} of {}+".format(*sizes[:2]) if sizes else ""
    excerpted += ", always" if sizes and len(sizes) > 2 else ""
    changed += [f"excerpt {excerpted}"] * (sizes is not None)
    changed += [f"neighbours {neighbours}"] * (neighbours is not None)
    if settings:
        changed.append(" ".join(f"{name} {value:g}" for name, value in settings))
    return ", ".join([name, *changed])


def main() -> int:
    """Measure each set, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--chats", type=int, default=20, help="BEAM chats (of 20)")
    parser.add_argument("--samples", type=int, default=10, help="LoCoMo conversations (of 10)")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm")
    parser.add_argument(
        "--depths",
        default="",
        help="also judge at these smaller leg depths (comma-separated; one leg's alone as "
        "vector:50 or vector:50+text:70), cut from one gathering",
    )
    parser.add_argument(
        "--cuts", default="", help="also judge at these relative cuts (comma-separated)"
    )
    parser.add_argument(
        "--excerpts",
        default="",
        help="also judge with long memories excerpted to these many characters, as 200 or "
        "200/400 (memories over 400 characters; 0: packed whole, as before excerpts)",
    )
    parser.add_argument(
        "--neighbours",
        default="",
        help="also judge with the episode leg bringing first this many events made before and "
        "after the best one (comma-separated)",
    )
    parser.add_argument(
        "--policies",
        default="",
        help="also judge under these RecallPolicy numbers, comma-separated variants of "
        "field=value joined by + (rrf_k=30+relative_cut=0.48)",
    )
    parser.add_argument(
        "--compound",
        action="store_true",
        help="ask each set's questions two at a time, one message of two sentences whose "
        "evidence is both's (devsets.compound), and the general questions two at a time",
    )
    parser.add_argument(
        "--respell",
        default="",
        help="ask only the questions that name a person of --respell-table, once per kind "
        "(comma-separated: none, misspell, nickname, lookalike; bench/respell.py)",
    )
    parser.add_argument("--respell-table", type=Path, default=None)
    args = parser.parse_args()
    depths: list[LegDepth] = [None, *(parse_depth(d) for d in args.depths.split(",") if d)]
    cuts: list[float | None] = [None, *(float(c) for c in args.cuts.split(",") if c)]
    excerpts = [None, *(parse_excerpt(c) for c in args.excerpts.split(",") if c)]
    near: list[int | None] = [None, *(int(n) for n in args.neighbours.split(",") if n)]
    settings: list[Settings | None] = [
        None,
        *(parse_settings(p) for p in args.policies.split(",") if p),
    ]
    variants = [
        (d, cut, chars, n, more)
        for d in depths
        for cut in cuts
        for chars in excerpts
        for n in near
        for more in settings
    ]
    started = time.time()
    data = {
        name: beam(chats=args.chats) if name == "beam" else locomo(samples=args.samples)
        for name in args.sets.split(",")
    }
    if args.compound:
        data = {f"{name}-compound": compound(sets) for name, sets in data.items()}
    asked_names: dict[str, dict[str, list[tuple[str, str, str]]]] = {}
    if args.respell:
        table = load_table(args.respell_table) if args.respell_table else load_table()
        for name in list(data):
            data[name], asked_names[name] = respelled(data[name], table, args.respell.split(","))
    asked = [q.text for sets in data.values() for c in sets for q in c.questions]
    general = offtopic_questions()
    if args.compound:
        pairs = zip(general[0::2], general[1::2], strict=False)
        general = [f"{first} {second}" for first, second in pairs]
    embedder = embedder_named(args.embedder, asked + general)
    print(f"Recall dev sets, {args.embedder}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n")
    results = {}
    taken: dict[str, dict[str, list[int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, conversations in data.items():
            taken[name] = {}
            asked_here = asked_names.get(name)
            measures = run_set(
                name, conversations, embedder, tmp, variants, general, asked_here, taken[name]
            )
            for variant, measured in measures.items():
                if asked_here is None:
                    results[label(name, variant)] = measured
                    continue
                for kind, outcomes in by_kind(measured[0]).items():
                    results[label(f"{name} {kind}", variant)] = (outcomes, measured[1])
    if asked_names:
        print("Respelled names taken for the name they replace (start's rule; names_policy):\n")
        rows = [
            [name, kind, "yes" if SAME_PERSON[kind] else "no (another person)", *counts]
            for name, kinds in taken.items()
            for kind, counts in sorted(kinds.items())
        ]
        headers = ("set", "kind", "same person", "variants of known names", "start", "new")
        print_table(headers, rows)
        print()
    print_table(
        SUMMARY_HEADERS,
        [summary_rows(name, outcomes, general) for name, (outcomes, general) in results.items()],
    )
    print("\nWhere the evidence that missed the block was lost (evidence memories):\n")
    print_table(LOSS_HEADERS, [loss_row(name, outcomes) for name, (outcomes, _) in results.items()])
    for name, (outcomes, _) in results.items():
        print(f"\n{name}, per category:\n")
        print_table(CATEGORY_HEADERS, category_rows(outcomes))
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
