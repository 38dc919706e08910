"""Recall on the owner's paraphrase set: questions a person asks about their own life, in none
of the words the memory was written in, on small and large stores.

``bench/data/owner_paraphrase.json`` holds 152 memories about an owner's life (health, family,
work, home, money, plans, tastes), each with a question that shares no content word with it
("Which medicines should I avoid?" for a penicillin allergy), 100 questions about none of them,
and templates for unrelated owner memories ("The owner bought a desk lamp at IKEA on Friday")
that fill the larger stores. Stores of 20 memories (every group of 20 pairs, each its own
store), 200 and 2,000 (all pairs, the rest filler), every memory a fact kept with ``remember``.

Reported per store size: the paired memory in the block (block recall), in the first 10 of
``search_memory``, answerable questions with an empty memories section, unrelated questions
with an empty one, and the mean block; then where each paired memory that missed the block was
lost (as ``bench_beam.py``: never a candidate, gate, silenced, relative cut, budget).

``--set heldout`` measures the held-out owner set instead (its own memories and questions, general
questions, and personal questions no memory answers: the share of those with an empty section).
``--set told`` measures ``owner_told.json``: questions that ask what the owner told the assistant
("Did I mention what I do for a living?") about DATA's memories, and such questions about things
never told ("Did I ever mention my boat?", the "personal, no answer" column: every one that is not
empty puts a wrong memory first).

    .venv/bin/python bench/bench_paraphrase.py [--sizes 20,200,2000] [--set heldout] \
        [--policies rrf_k=30+relative_cut=0.48]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_owner_questions import ask
from devsets import (
    EMBEDDERS,
    LOSS_HEADERS,
    Conversation,
    Question,
    build,
    embedder_named,
    gather,
    judge,
    loss_row,
    parse_settings,
    quiet,
    with_settings,
)
from report import mean, print_table, progress
from stores import open_with_store

import memoryd
from memoryd.memory.model import Kind, Status, embedded_text
from memoryd.providers.embedder import Embedder, Vector
from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

DATA = Path(__file__).resolve().parent / "data" / "owner_paraphrase.json"
# Written before any recall ran on it, to check what was calibrated on DATA (its own memories,
# general questions and personal questions with no answer; DATA's filler).
HELDOUT = Path(__file__).resolve().parent / "data" / "owner_paraphrase_heldout.json"
# Questions that ask what the owner told the assistant ("Did I mention …?"; stream ask16): pairs
# on DATA's memories, questions about things never told, general questions shaped alike.
TOLD = Path(__file__).resolve().parent / "data" / "owner_told.json"
SETS = {"owner": DATA, "heldout": HELDOUT, "told": TOLD}
START = datetime(2026, 1, 5, 9, tzinfo=UTC)


def load(path: Path = DATA) -> dict[str, Any]:
    """The paraphrase set (or the held-out one, with the paraphrase set's filler; its general
    questions as ``unrelated``)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if path != DATA:
        data["filler"] = json.loads(DATA.read_text(encoding="utf-8"))["filler"]
        data["unrelated"] = data.pop("general")
    if "never_told" in data:  # the told set's questions about things never told
        data["personal_unanswered"] = data.pop("never_told")
    data.setdefault("personal_unanswered", [])
    return data


def filler(data: dict[str, Any], count: int, seed: int = 7) -> list[str]:
    """``count`` distinct unrelated owner memories from the set's templates."""
    rng = random.Random(seed)
    templates, slots = data["filler"]["templates"], data["filler"]["slots"]
    made: dict[str, None] = {}
    while len(made) < count:
        template = rng.choice(templates)
        fields = {name: rng.choice(values) for name, values in slots.items()}
        made.setdefault(template.format(**fields), None)
    return list(made)


def stores(data: dict[str, Any], size: int) -> list[Conversation]:
    """The stores of one size, each with its paired questions."""
    pairs = data["pairs"]
    groups = (
        [pairs[i : i + size] for i in range(0, len(pairs), size)] if size < len(pairs) else [pairs]
    )
    out = []
    for number, group in enumerate(groups):
        extra = filler(data, size - len(group), seed=number)
        texts = [(f"p{pairs.index(p)}", p["memory"]) for p in group]
        texts += [(f"f{i}", text) for i, text in enumerate(extra)]
        random.Random(number).shuffle(texts)
        items = tuple(
            (key, text, START + timedelta(hours=index)) for index, (key, text) in enumerate(texts)
        )
        questions = tuple(
            Question(p["question"], p.get("topic", "held out"), frozenset({f"p{pairs.index(p)}"}))
            for p in group
        )
        now = START + timedelta(days=120)
        out.append(Conversation(f"{size}-{number}", items, questions, now, Kind.FACT))
    return out


def give_cues(service: MemoryService, cues: dict[str, list[str]], text_only: bool = False) -> int:
    """Store the given cues (by memory text) as the write-cues consolidation stage does: on the
    row, its text index and its vector (``text_only``: the vector stays the content's, to tell
    the legs' shares apart). Returns how many memories got some."""
    memories = [
        replace(m, cues=tuple(cues[m.content]))
        for m in service.store.memories.query(status=Status.ACTIVE)
        if cues.get(m.content)
    ]
    texts = [embedded_text(m.content, m.cues) for m in memories]
    vectors: list[Vector] = list(service.embedder.embed(texts)) if texts else []
    with service.store.transaction():
        for memory, vector in zip(memories, vectors, strict=True):
            service.store.memories.set_cues(memory, None if text_only else vector)
    return len(memories)


def measure(
    data: dict[str, Any],
    size: int,
    embedder: Embedder,
    tmp: str,
    policy: RecallPolicy,
    cues: dict[str, list[str]] | None = None,
    text_only: bool = False,
    losses: list[list[Any]] | None = None,
) -> list[Any]:
    """One row: block recall, the paired memory first in the block (by score), R@10
    (fused), answerable empty, unrelated empty, mean tokens
    (and, into ``losses``, where the paired memories that missed the block were lost)."""
    outcomes = []
    firsts: list[bool] = []  # the paired memory first in the block (by score)
    general: list[bool] = []
    personal: list[bool] = []
    for conversation in stores(data, size):
        where = str(Path(tmp) / f"paraphrase-{conversation.name}.db")
        built = build(conversation, where, embedder, open_with_store)
        if cues is not None:
            give_cues(built.service, cues, text_only)
        for question in conversation.questions:
            evidence = gather(built, question.text, policy)
            outcomes.append(judge(built, question, evidence, policy)[0])
            paired = {built.memory_of.get(key) for key in question.evidence}
            firsts.append(ask(built, question.text, policy).first in paired)
        general.extend(quiet(built, data["unrelated"], policy)[None])
        personal.extend(quiet(built, data["personal_unanswered"], policy)[None])
        built.service.close()
    progress(f"  paraphrase: {size} done")
    if losses is not None:
        losses.append(loss_row(str(size), outcomes))
    return [
        size,
        len(outcomes),
        f"{mean([o.block for o in outcomes]):.1%}",
        f"{mean([float(f) for f in firsts]):.1%}",
        f"{mean([o.legs['fused'] for o in outcomes]):.1%}",
        f"{mean([o.legs['vector'] for o in outcomes]):.1%}",
        f"{mean([o.legs['text'] for o in outcomes]):.1%}",
        f"{mean([float(o.empty) for o in outcomes]):.1%}",
        f"{mean([float(q) for q in general]):.1%}",
        f"{mean([float(q) for q in personal]):.1%}" if personal else "-",
        f"{mean([float(o.tokens) for o in outcomes]):.0f}",
    ]


def main() -> int:
    """Build the stores of each size, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="20,200,2000")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm")
    parser.add_argument(
        "--set",
        choices=sorted(SETS),
        default="owner",
        help="heldout: the held-out set; told: 'did I mention' questions (owner_told.json)",
    )
    parser.add_argument(
        "--cues", type=Path, help="JSON {memory text: [cues]} (bench/write_cues.py) to store"
    )
    parser.add_argument(
        "--cues-text-only", action="store_true", help="index the cues as text, keep the vectors"
    )
    parser.add_argument(
        "--policies",
        default="",
        help="also measure under these RecallPolicy numbers (as bench_beam.py --policies); "
        "each store is built once",
    )
    args = parser.parse_args()
    policies = {"shipped": RecallPolicy()}
    for spec in filter(None, args.policies.split(",")):
        policies[spec] = with_settings(RecallPolicy(), parse_settings(spec))
    cues = json.loads(args.cues.read_text(encoding="utf-8")) if args.cues else None
    started = time.time()
    data = load(SETS[args.set])
    asked = [p["question"] for p in data["pairs"]] + data["unrelated"]
    asked += data["personal_unanswered"]
    embedder = embedder_named(args.embedder, asked)
    with_cues = f"cues from {args.cues}" if args.cues else "no cues"
    with_cues += ", text leg only" if args.cues_text_only else ""
    print(
        f"Owner paraphrase set ({args.set}), memoryd from {Path(memoryd.__file__).parent}, "
        f"{args.embedder}, {with_cues}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
    )
    losses: list[list[Any]] = []
    only_text = args.cues_text_only
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            [
                f"{size}, {name}" if len(policies) > 1 else size,
                *measure(data, int(size), embedder, tmp, policy, cues, only_text, losses)[1:],
            ]
            for size in args.sizes.split(",")
            for name, policy in policies.items()
        ]
    for row, loss in zip(rows, losses, strict=True):
        loss[0] = row[0]
    print_table(
        ("store size", "questions", "paired memory in the block", "paired memory first",
         "paired memory in search top 10",
         "vector leg top 10", "text leg top 10", "answerable, empty", "unrelated, empty",
         "personal, no answer, empty", "mean block tokens"),
        rows,
    )  # fmt: skip
    print("\nWhere the paired memories that missed the block were lost:\n")
    print_table(("store size", *LOSS_HEADERS[1:]), losses)
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
