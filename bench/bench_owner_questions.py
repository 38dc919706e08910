"""The owner's own questions: is the note that answers first in the block?

``bench/data/owner_questions.json`` holds stores of an owner's notes (kept as ``memoryd
remember TEXT --now AT`` keeps them: facts, stamped when written) and, for each store,
questions in everyday words with the note(s) that answer them ("Who's my boss?" of "Weekly
one-to-one with my line manager Priyanka"), questions about a relative or a thing no note
covers ("When is my brother's flight?" where only the owner's own flight is noted) and general
questions ("How long should I boil an egg?"). Store ``heldout16`` was written for this bench;
store ``walk15`` is the new owner's afternoon of bench/README.md with its four questions.

Reported per store and policy: the answer note first in the block (first by score: the
block's attention order undone), in the block, the block empty for questions no note answers
and for general questions, and how often a question no note answers gets first a
look-alike (a note that would answer it as if it were about the owner: the owner's own flight
for "my brother's flight"; fewer is better); with ``--misses``, each question that missed,
what came first and where the answer was lost (never a candidate, a gate, the relative cut,
the budget).

    .venv/bin/python bench/bench_owner_questions.py [--policies "field=value+field=value,..."]
        [--misses]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import (
    EMBEDDERS,
    TOKENIZER,
    Built,
    Conversation,
    Question,
    build,
    embedder_named,
    gather,
    parse_settings,
    with_settings,
)
from report import print_table, progress
from stores import open_with_store

import memoryd
from memoryd.memory.model import Kind
from memoryd.recall.excerpt_policy import Focus
from memoryd.recall.pack_policy import pack_block
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score import rank
from memoryd.recall.score_policy import relative_cut

DATA = Path(__file__).resolve().parent / "data" / "owner_questions.json"


@dataclass(frozen=True)
class Answered:
    """What one question's block held: the ids by score (block only) and why each answer
    note that missed it was lost."""

    first: str | None
    block: tuple[str, ...]
    lost: dict[str, str]


def conversation(store: dict[str, Any], now: datetime) -> Conversation:
    """One store of the set as the bench builds it (every note a fact, stamped when written)."""
    items = tuple(
        (note["key"], note["text"], datetime.fromisoformat(note["at"])) for note in store["notes"]
    )
    questions = tuple(
        Question(q["question"], "answer", frozenset(q["answers"])) for q in store["questions"]
    )
    return Conversation(store["name"], items, questions, now, Kind.FACT)


def ask(built: Built, text: str, policy: RecallPolicy) -> Answered:
    """Recall ``text`` as the service does under ``policy``; the block's ids by score."""
    evidence = gather(built, text, policy)
    ranking, ranked = rank(built.store, evidence, built.conversation.now, policy, built.zone)
    kept, cut = relative_cut(ranking.items, policy)
    focus = Focus.of(evidence.facts, policy)
    packed = pack_block([], kept, TOKENIZER, policy.budget_tokens, focus) if kept else None
    packed_ids = {s.memory.id for s in packed.items} if packed else set()
    block = tuple(s.memory.id for s in kept if s.memory.id in packed_ids)
    reasons = {d.memory_id: d.reason for d in ranking.dropped}
    cut_ids = {d.memory_id for d in cut}
    lost: dict[str, str] = {}
    for memory_id in ranked.candidates:
        if memory_id in packed_ids:
            continue
        if memory_id in reasons:
            lost[memory_id] = f"gate: {reasons[memory_id]}"
        elif memory_id in cut_ids:
            lost[memory_id] = "relative cut"
        else:
            lost[memory_id] = "budget"
    return Answered(block[0] if block else None, block, lost)


def measure(
    built: Built, store: dict[str, Any], policy: RecallPolicy, misses: list[str] | None
) -> list[Any]:
    """One row: answer first, answer in the block, empty for no-note questions, a look-alike
    first for them, empty for general questions."""
    memory_of = built.memory_of
    content = {m: t for k, t, _ in built.conversation.items for m in [memory_of.get(k)] if m}
    first = held = 0
    for question in built.conversation.questions:
        answers = {memory_of[k] for k in question.evidence if k in memory_of}
        got = ask(built, question.text, policy)
        first += got.first in answers
        held += bool(answers & set(got.block))
        if misses is not None and got.first not in answers:
            where = [
                f"#{got.block.index(a) + 1}" if a in got.block else got.lost.get(a, "never")
                for a in sorted(answers)
            ]
            top = content.get(got.first or "", "(empty)")
            misses.append(f"{question.text} → first: {top!r}; answer: {', '.join(where)}")
    look_alike_first = 0
    empty: dict[str, list[bool]] = {"no_note": [], "general": []}
    for kind, asked in empty.items():
        for entry in store[kind]:
            text = entry if kind == "general" else entry["question"]
            got = ask(built, text, policy)
            asked.append(not got.block)
            if kind == "no_note":
                look_alikes = {memory_of[k] for k in entry["look_alikes"] if k in memory_of}
                look_alike_first += got.first in look_alikes
            if misses is not None and got.block:
                misses.append(f"{text} ({kind}) → first: {content.get(got.block[0])!r}")
    count = len(built.conversation.questions)
    return [
        f"{first}/{count}",
        f"{held}/{count}",
        f"{sum(empty['no_note'])}/{len(empty['no_note'])}",
        f"{look_alike_first}/{len(empty['no_note'])}",
        f"{sum(empty['general'])}/{len(empty['general'])}",
    ]


def main() -> int:
    """Build each store once, measure every policy on it, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policies", default="", help="RecallPolicy variants (bench_beam.py's)")
    parser.add_argument("--misses", action="store_true", help="list each miss and its loss")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm")
    args = parser.parse_args()
    policies = {"shipped": RecallPolicy()}
    for spec in filter(None, args.policies.split(",")):
        policies[spec] = with_settings(RecallPolicy(), parse_settings(spec))
    data = json.loads(DATA.read_text(encoding="utf-8"))
    now = datetime.fromisoformat(data["now"])
    asked = [q["question"] for s in data["stores"] for q in s["questions"]]
    asked += [t for s in data["stores"] for t in s["no_note"] + s["general"]]
    embedder = embedder_named(args.embedder, asked)
    started = time.time()
    print(
        f"Owner questions, {args.embedder}, memoryd from {Path(memoryd.__file__).parent}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
    )
    rows: list[list[Any]] = []
    misses: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for store in data["stores"]:
            built = build(
                conversation(store, now), f"{tmp}/{store['name']}.db", embedder, open_with_store
            )
            for name, policy in policies.items():
                listed = misses.setdefault(f"{store['name']}, {name}", []) if args.misses else None
                rows.append([store["name"], name, *measure(built, store, policy, listed)])
            built.service.close()
            progress(f"  {store['name']} done")
    print_table(
        ("store", "policy", "answer first", "answer in the block", "no such note: empty",
         "no such note: a look-alike first", "general: empty"),
        rows,
    )  # fmt: skip
    for name, listed in misses.items():
        print(f"\n{name}: {len(listed)} misses\n")
        for line in listed:
            print(f"- {line}")
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
