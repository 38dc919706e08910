"""How long `import-chats` takes on a large export: reading, queueing, and the second import.

A generated ChatGPT export (every conversation a system message and N owner/assistant pairs)
is imported into a fresh store; the ``extract`` route is a stub that is never called (the
import only queues). Timed: parsing the file alone, the first import (one transaction), and a
second import of the same file (which queues nothing).

    .venv/bin/python bench/bench_import_chats.py [--sizes 300,3000] [--turns 8]
        [--postgres postgresql://…]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from report import print_table, progress, stamp
from stores import open_with_store

from memoryd.extraction.chat_export_policy import parse_export
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.llm import Gateway, Message
from tests.chat_exports import as_json, gpt_chat

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
START = datetime(2023, 1, 1, 8, 0, tzinfo=UTC)


class NeverCalled:
    """An ``extract`` route, so the import queues; the worker never runs here."""

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str:
        """Never reached."""
        raise AssertionError("the import must not call the model")


def export_bytes(conversations: int, turns: int) -> bytes:
    """A ChatGPT export of ``conversations`` conversations of ``turns`` pairs each."""
    chats = []
    for c in range(conversations):
        day = START + timedelta(hours=7 * c)
        pairs = []
        for t in range(turns):
            at = (day + timedelta(minutes=2 * t)).isoformat()
            pairs.append(
                ("user", f"Message {t} of chat {c}: we planned the trip to Porto " * 3, at)
            )
            pairs.append(("assistant", "A helpful answer with some detail. " * 20, at))
        chats.append(gpt_chat(f"conv-{conversations}-{c}", f"Chat {c}", pairs))
    return as_json(chats)


def run(where: str, conversations: int, turns: int) -> list[object]:
    """One row: size, parse, first and second import."""
    data = export_bytes(conversations, turns)
    started = time.perf_counter()
    parse_export(data)
    parse_s = time.perf_counter() - started
    gateway = Gateway({}, clients={"extract": NeverCalled()})
    _, service = open_with_store(where, embedder=LocalMiniLM(), gateway=gateway)
    try:
        started = time.perf_counter()
        first = service.import_chat_bytes(data, now=NOW)
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        again = service.import_chat_bytes(data, now=NOW)
        again_s = time.perf_counter() - started
    finally:
        service.close()
    assert again.turns_queued == 0 and first.turns_queued == conversations * turns
    return [
        conversations,
        first.turns_queued,
        f"{len(data) / 1e6:.1f}",
        f"{parse_s:.2f}",
        f"{first_s:.2f}",
        f"{first.turns_queued / first_s:.0f}",
        f"{again_s:.2f}",
    ]


def main() -> None:
    """Parse the arguments, run every size on each backend, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300,3000", help="conversations per export")
    parser.add_argument("--turns", type=int, default=8, help="owner turns per conversation")
    parser.add_argument("--postgres", help="a PostgreSQL URL of an empty database, too")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            progress(f"sqlite: {size} conversations")
            rows.append(["sqlite", *run(str(Path(folder) / f"s{size}.db"), size, args.turns)])
            if args.postgres:
                progress(f"postgres: {size} conversations")
                rows.append(["postgres", *run(args.postgres, size, args.turns)])
    print(f"import-chats, {stamp()}")
    print_table(
        ["backend", "conversations", "turns", "MB", "parse s", "import s", "turns/s", "again s"],
        rows,
        numeric_right=True,
    )


if __name__ == "__main__":
    main()
