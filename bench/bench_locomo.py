"""LoCoMo retrieval benchmark: recall@5/10/20 of each leg alone and fused, block recall and
block size, per category; and how often recall stays quiet when it should (off-topic).

Protocol (../shared/data/README.md): every turn of a conversation is stored as an event memory
("Speaker: text", occurred_at = its session date); for every QA item with evidence we recall
within that conversation and score |evidence ∩ retrieved| / |evidence|.

Two ways of stamping the memories, side by side (``--created-at both``, the default):
- ``session``: each memory created at its session date, as an assistant that lived through the
  conversations would have stored it (older sessions are older memories);
- ``now``: every memory created the day after the last session, as an import would.

Off-topic sets, asked of every conversation's store:
- (a) the 100 questions of ``bench/data/offtopic_questions.txt``, about nobody's life;
- (b) the questions of the next conversation (conversation i gets i+1's): another person's life.
For each we report the share of recalls whose memories section is empty and the mean tokens of
the block.

    .venv/bin/python bench/bench_locomo.py [--samples N] [--created-at both|session|now]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import mean, percentile, print_table, progress
from stores import open_with_store

from memoryd.config.settings import resolve_settings
from memoryd.memory.model import Kind
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from memoryd.storage.protocols import Store

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data" / "locomo" / "locomo10.json"
OFFTOPIC = HERE / "data" / "offtopic_questions.txt"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 20)
EVIDENCE = re.compile(r"D\d+:\d+")
LEGS = ("text", "vector", "entity", "time")


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(sample: dict[str, Any]) -> list[tuple[str, str, datetime]]:
    """(dia_id, stored text, session time) for every turn of one conversation."""
    conversation = sample["conversation"]
    out = []
    number = 1
    while f"session_{number}" in conversation:
        when = session_time(conversation[f"session_{number}_date_time"])
        for turn in conversation[f"session_{number}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo of {turn['blip_caption']}]"
            out.append((turn["dia_id"], text, when))
        number += 1
    return out


@dataclass
class Conversation:
    """One conversation's store, with the map from memories back to dialog ids."""

    sample: dict[str, Any]
    store: Store
    service: MemoryService
    by_memory: dict[str, set[str]]
    now: datetime
    zone: tzinfo

    def questions(self) -> Iterator[tuple[str, int, set[str]]]:
        """(question, category, evidence dialog ids) of every QA item with evidence."""
        for qa in self.sample["qa"]:
            evidence = set(EVIDENCE.findall(" ".join(qa.get("evidence", []))))
            if evidence:
                yield qa["question"], qa["category"], evidence

    def recall_at(self, retrieved: list[str], evidence: set[str], k: int) -> float:
        """Share of the evidence dialog ids among the first ``k`` retrieved memories."""
        got: set[str] = set()
        for memory_id in retrieved[:k]:
            got |= self.by_memory.get(memory_id, set())
        return len(got & evidence) / len(evidence)


def build(
    sample: dict[str, Any], where: str, created_at: str, embedder: LocalMiniLM
) -> Conversation:
    """Store every turn of one conversation; 'now' is the day after the last session."""
    store, service = open_with_store(where, embedder=embedder, environ={})
    by_memory: dict[str, set[str]] = defaultdict(set)
    rows = turns(sample)
    now = max(when for _, _, when in rows) + timedelta(days=1)
    for dia_id, text, when in rows:
        stamp = when if created_at == "session" else now
        result = service.remember(text[:2000], kind=Kind.EVENT, occurred_at=when, now=stamp)
        assert result.memory is not None
        by_memory[result.memory.id].add(dia_id)
    service.settle()
    zone = resolve_settings(where, {}).zone
    return Conversation(sample, store, service, dict(by_memory), now, zone)


def offtopic_questions() -> list[str]:
    """Set (a): written by hand, one per line."""
    lines = OFFTOPIC.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def measure(conversations: list[Conversation]) -> dict[str, Any]:
    """Every number of one mode."""
    legs = (*LEGS, "fused")
    scores: dict[str, dict[int, defaultdict[int, list[float]]]] = {
        leg: {k: defaultdict(list) for k in KS} for leg in legs
    }
    block: dict[int, list[float]] = defaultdict(list)
    tokens: list[int] = []
    quiet_own: list[bool] = []
    offtopic = offtopic_questions()
    quiet: dict[str, list[bool]] = {"a": [], "b": []}
    quiet_tokens: dict[str, list[int]] = {"a": [], "b": []}
    for index, conversation in enumerate(conversations):
        service, now = conversation.service, conversation.now
        for question, category, evidence in conversation.questions():
            alone, _ = service.leg_rankings(question, now=now)
            fused = service.search_memory(question, limit=max(KS), now=now).items
            ranked = {leg: alone.get(leg, []) for leg in LEGS}
            ranked["fused"] = [s.memory.id for s in fused]
            for leg, ids in ranked.items():
                for k in KS:
                    scores[leg][k][category].append(conversation.recall_at(ids, evidence, k))
            result = service.recall(question, now=now)
            packed = [s.memory.id for s in result.packed.items]
            block[category].append(conversation.recall_at(packed, evidence, len(packed)))
            tokens.append(result.packed.tokens)
            quiet_own.append(not packed)
        other = conversations[(index + 1) % len(conversations)]
        asked = {"a": offtopic, "b": [q for q, _, _ in other.questions()]}
        for name, questions in asked.items():
            for question in questions:
                result = service.recall(question, now=now)
                quiet[name].append(not result.packed.items)
                quiet_tokens[name].append(result.packed.tokens)
    return {
        "scores": scores,
        "block": block,
        "tokens": tokens,
        "quiet_own": quiet_own,
        "quiet": quiet,
        "quiet_tokens": quiet_tokens,
    }


def overall(values: dict[int, list[float]]) -> float:
    """Mean over every category's scores."""
    return mean([v for category in values.values() for v in category])


def report(mode: str, numbers: dict[str, Any], conversations: int) -> None:
    """The tables of one mode: each retriever, each category, the off-topic sets."""
    scores, block = numbers["scores"], numbers["block"]
    legs = (*LEGS, "fused")
    n = sum(len(v) for v in block.values())
    print(f"\n### created_at = {mode}: {conversations} conversations, {n} QA items with evidence\n")
    rows: list[list[str]] = [
        [
            "**fused**" if leg == "fused" else leg,
            *(f"{overall(scores[leg][k]):.3f}" for k in KS),
        ]
        for leg in legs
    ]
    rows.append(["block recall (budget 1,500)", f"{overall(block):.3f}", "", ""])
    print_table(("retriever", *(f"R@{k}" for k in KS)), rows)
    tokens = numbers["tokens"]
    print(
        f"\nBlock: mean {mean(tokens):.0f} tokens, median {percentile(tokens, 0.5):.0f}, "
        f"max {max(tokens)}; memories section empty for {mean(numbers['quiet_own']):.1%} "
        "of these (answerable) questions.\n"
    )
    print_table(
        ("category", "n", *(f"{leg} R@10" for leg in legs), "block recall"),
        [
            (
                f"{category} {name}",
                len(block[category]),
                *(f"{mean(scores[leg][10][category]):.3f}" for leg in legs),
                f"{mean(block[category]):.3f}",
            )
            for category, name in CATEGORIES.items()
            if block.get(category)
        ],
    )
    print()
    names = {"a": "(a) nobody's life", "b": "(b) another conversation's questions"}
    print_table(
        ("off-topic set", "recalls", "memories section empty", "mean block tokens"),
        [
            (
                label,
                len(numbers["quiet"][key]),
                f"{mean(numbers['quiet'][key]):.1%}",
                f"{mean(numbers['quiet_tokens'][key]):.0f}",
            )
            for key, label in names.items()
        ],
    )


def main() -> int:
    """Store the conversations in each mode, measure, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--created-at", choices=["both", "session", "now"], default="both")
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres", "postgres-plain-ts-rank"],
        default="sqlite",
        help="postgres uses an embedded server; -plain-ts-rank turns off the IDF weighting of "
        "the full-text leg, to measure what it is worth",
    )
    args = parser.parse_args()
    data = json.loads(args.data.read_text())[: args.samples]
    postgres = None
    if args.backend != "sqlite":
        sys.path.insert(0, str(HERE.parent))  # the repository root, for tests.pg
        from memoryd.storage import postgres as postgres_backend
        from tests.pg import TestPostgres

        postgres_backend.IDF_WEIGHTING = args.backend == "postgres"
        postgres = TestPostgres.start(Path(tempfile.mkdtemp(prefix="memoryd-bench-pg-")))
    embedder = LocalMiniLM()
    modes = ["session", "now"] if args.created_at == "both" else [args.created_at]
    started = time.time()
    print(
        f"LoCoMo retrieval, backend {args.backend}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
    )
    for mode in modes:
        with tempfile.TemporaryDirectory() as tmp:
            conversations = []
            for number, sample in enumerate(data):
                where = postgres.create_database() if postgres else str(Path(tmp) / f"{number}.db")
                conversations.append(build(sample, where, mode, embedder))
                progress(f"  {mode}: stored {sample['sample_id']}")
            numbers = measure(conversations)
            for conversation in conversations:
                conversation.service.close()
        report(mode, numbers, len(data))
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
