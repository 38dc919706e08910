"""Recall and search on a pasted document: a message of 100,000 characters with the question at
its end, read whole (``--whole``, what recall did before the bound) and as the policy reads it
(its first 500 and last 1,500 characters, the question in them searched), over a store of
``--memories`` facts; and whether the answer is in the block and in search's first 10.

    .venv/bin/python bench/bench_long_message.py [--runs 5] [--memories 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import elapsed_ms, percentile, print_table, progress, stamp

import memoryd
from memoryd.config.settings import resolve_settings
from memoryd.recall.policy import RecallPolicy
from memoryd.wiring import open_service

FILLER = "The quarterly filing lists revenue, costs and the auditors' notes in full. "
QUESTION = "What did Ana say about the Lisbon office?"
TOPICS = ("tea", "cycling", "Porto", "the garden", "chess", "the standup", "flights", "jazz")


def main() -> None:
    """Print one row per way of reading the message: recall and search wall times."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--chars", type=int, default=100_000)
    args = parser.parse_args()
    message = (FILLER * (args.chars // len(FILLER) + 1))[: args.chars] + " " + QUESTION
    whole = replace(RecallPolicy(), message_head_chars=len(message), message_tail_chars=0)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        service = memoryd.open(path)
        for number in range(args.memories):
            service.remember(f"Fact {number}: the owner likes {TOPICS[number % len(TOPICS)]}")
        answer = service.remember("Ana said the Lisbon office moves to Alcântara in May").memory
        assert answer is not None
        service.close()
        ways: tuple[tuple[str, RecallPolicy | None], ...] = (
            ("whole message (before)", whole),
            ("bounded (after)", None),
        )
        for name, policy in ways:
            progress(f"{name} …")
            service = open_service(resolve_settings(str(path)), recall_policy=policy)
            service.recall(QUESTION)  # load the models first
            recalls = [elapsed_ms(partial(service.recall, message)) for _ in range(args.runs)]
            searches = [
                elapsed_ms(partial(service.search_memory, message)) for _ in range(args.runs)
            ]
            recalled = service.recall(message, stamp=False)
            found = service.search_memory(message, stamp=False)
            service.close()
            rows.append(
                (
                    name,
                    f"{percentile(recalls, 0.5):.0f}",
                    f"{max(recalls):.0f}",
                    f"{percentile(searches, 0.5):.0f}",
                    "yes" if answer.id in {s.memory.id for s in recalled.packed.items} else "no",
                    "yes" if answer.id in {s.memory.id for s in found.items[:10]} else "no",
                )
            )
    print(f"{len(message):,}-character message, {args.memories + 1} memories ({stamp()})\n")
    print_table(
        ("read", "recall p50 ms", "recall max ms", "search p50 ms", "in the block", "in search"),
        rows,
        numeric_right=True,
    )


if __name__ == "__main__":
    main()
