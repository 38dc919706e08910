"""LoCoMo retrieval benchmark: recall@5/10/20 per category for each leg alone and fused, and
block recall (evidence inside the packed 1,500-token block).

Protocol (../shared/data/README.md): every turn of a conversation is stored as an event memory
("Speaker: text", occurred_at = its session date); for every QA item with evidence we recall
within that conversation and score |evidence ∩ retrieved| / |evidence|.

    .venv/bin/python bench/bench_locomo.py [--data PATH] [--samples N] [--created-at session|now]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoryd.app import open_service
from memoryd.embedding import LocalMiniLM
from memoryd.model import Kind
from memoryd.service import MemoryService
from memoryd.settings import resolve_settings

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 20)
EVIDENCE = re.compile(r"D\d+:\d+")


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(sample: dict) -> list[tuple[str, str, datetime]]:
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


def ingest(
    service: MemoryService, sample: dict, created_at: str
) -> tuple[dict[str, set[str]], datetime]:
    """Store every turn; returns memory id → dia ids, and a 'now' after the last session."""
    by_memory: dict[str, set[str]] = defaultdict(set)
    rows = turns(sample)
    last = max(when for _, _, when in rows)
    now = last + timedelta(days=1)
    for dia_id, text, when in rows:
        stamp = when if created_at == "session" else now
        result = service.remember(text[:2000], kind=Kind.EVENT, occurred_at=when, now=stamp)
        assert result.memory is not None
        by_memory[result.memory.id].add(dia_id)
    return by_memory, now


def recall_at(
    retrieved: list[str], by_memory: dict[str, set[str]], evidence: set[str], k: int
) -> float:
    got: set[str] = set()
    for memory_id in retrieved[:k]:
        got |= by_memory.get(memory_id, set())
    return len(got & evidence) / len(evidence)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument(
        "--created-at",
        choices=["session", "now"],
        default="now",
        help="stamp memories at ingestion, as an import does (default), or with their session "
        "date, as if the assistant had lived through the conversations",
    )
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres", "postgres-plain-ts-rank"],
        default="sqlite",
        help="postgres uses MEMORYD_TEST_PG_URL or an embedded server; -plain-ts-rank turns "
        "off the IDF weighting of the full-text leg, to measure what it is worth",
    )
    args = parser.parse_args()
    data = json.loads(args.data.read_text())[: args.samples]
    postgres = None
    if args.backend != "sqlite":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from memoryd.storage import postgres as postgres_backend
        from tests.pg import TestPostgres

        postgres_backend.IDF_WEIGHTING = args.backend == "postgres"
        postgres = TestPostgres.start(Path(tempfile.mkdtemp(prefix="memoryd-bench-pg-")))
    embedder = LocalMiniLM()
    legs = ("bm25", "vector", "entity", "time", "fused")
    scores: dict[str, dict[int, dict[int, list[float]]]] = {
        leg: {k: defaultdict(list) for k in KS} for leg in legs
    }
    block: dict[int, list[float]] = defaultdict(list)
    block_tokens: list[int] = []
    started = time.time()
    for sample in data:
        with tempfile.TemporaryDirectory() as tmp:
            where = postgres.create_database() if postgres else str(Path(tmp) / "m.db")
            service = open_service(resolve_settings(where, {}), embedder=embedder)
            by_memory, now = ingest(service, sample, args.created_at)
            for qa in sample["qa"]:
                evidence = set(EVIDENCE.findall(" ".join(qa.get("evidence", []))))
                if not evidence:
                    continue
                question, category = qa["question"], qa["category"]
                legs_alone, _ = service.leg_rankings(question, now=now)
                fused = service.search_memory(question, limit=max(KS), now=now).items
                ranked = {
                    "bm25": legs_alone.get("text", []),
                    "vector": legs_alone.get("vector", []),
                    "entity": legs_alone.get("entity", []),
                    "time": legs_alone.get("time", []),
                    "fused": [s.memory.id for s in fused],
                }
                for leg, ids in ranked.items():
                    for k in KS:
                        scores[leg][k][category].append(recall_at(ids, by_memory, evidence, k))
                result = service.recall(question, now=now)
                packed = [s.memory.id for s in result.packed.items]
                block[category].append(recall_at(packed, by_memory, evidence, len(packed)))
                block_tokens.append(result.packed.tokens)
            service.close()
            if postgres:
                postgres.drop_database(where)
        print(f"  {sample['sample_id']}: done ({time.time() - started:.0f} s)", file=sys.stderr)

    def overall(values: dict[int, list[float]]) -> float:
        every = [v for cat in values.values() for v in cat]
        return statistics.fmean(every) if every else 0.0

    n = sum(len(v) for v in block.values())
    print(
        f"\nLoCoMo retrieval, {len(data)} conversations, {n} QA items with evidence "
        f"(created_at = {args.created_at}, backend {args.backend}), "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
    )
    print("| retriever | R@5 | R@10 | R@20 |")
    print("|---|---|---|---|")
    for leg in legs:
        print(f"| {leg} | " + " | ".join(f"{overall(scores[leg][k]):.3f}" for k in KS) + " |")
    print(f"| block recall (fused, 1,500 tokens) | {overall(block):.3f} | | |")
    print(
        f"\nmean block size {statistics.fmean(block_tokens):.0f} tokens, max {max(block_tokens)}\n"
    )
    print("| category | n | " + " | ".join(f"{leg} R@10" for leg in legs) + " | block recall |")
    print("|---|---|" + "---|" * (len(legs) + 1))
    for category, name in CATEGORIES.items():
        count = len(block.get(category, []))
        if not count:
            continue
        cells = " | ".join(f"{statistics.fmean(scores[leg][10][category]):.3f}" for leg in legs)
        print(
            f"| {category} {name} | {count} | {cells} | {statistics.fmean(block[category]):.3f} |"
        )
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
