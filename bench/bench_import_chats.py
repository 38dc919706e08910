"""How long `import-chats` takes on a large export, and how much memory it needs.

A generated ChatGPT export (every conversation a system message and N owner/assistant pairs)
is imported into a fresh store; the ``extract`` route is a stub that is never called (the
import only queues). Timed: parsing the file alone, the first import (one transaction), and a
second import of the same file (which queues nothing).

With ``--real MB,…``: exports the size of years of chats (``chat_export_files``: ChatGPT and
Claude, plain and zipped, written once under ``--folder``) imported from their path as
`memoryd import-chats` does, each in a fresh interpreter per ``--tree`` (old code beside new);
the child's peak resident memory (VmHWM) before and after the import, the import's time and the
second import's. ``--upload`` also imports the exports up to 50 MB as the HTTP upload does
(from the spooled upload's file object; an old tree, from its bytes).

    .venv/bin/python bench/bench_import_chats.py [--sizes 300,3000] [--turns 8]
        [--postgres postgresql://…]
    .venv/bin/python bench/bench_import_chats.py --real 50,200 --folder /tmp/exports \
        --tree base=/tmp/base-973/src --tree new=src [--upload]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chat_export_files import write_export
from report import print_table, progress, stamp
from rss_sampler import status_kb
from stores import open_with_store
from trees import parse_trees, run_tree

try:
    from memoryd.extraction.chat_export_file import parse_export
except ImportError:  # a checkout from before exports were read a conversation at a time
    from memoryd.extraction.chat_export_policy import parse_export  # type: ignore[attr-defined,no-redef]
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


def child(path: Path, upload: bool) -> dict[str, object]:
    """In this interpreter (one tree's memoryd): import ``path`` into a fresh store; the peak
    resident memory before and after, the import's time and the second import's."""
    gateway = Gateway({}, clients={"extract": NeverCalled()})
    with tempfile.TemporaryDirectory() as folder:
        _, service = open_with_store(str(Path(folder) / "s.db"), gateway=gateway)
        try:
            before = status_kb(os.getpid(), "VmHWM")

            def once() -> object:
                if not upload:
                    return service.import_chats(path, now=NOW)
                with path.open("rb") as body:
                    stream = getattr(service, "import_chat_stream", None)
                    if stream is not None:
                        return stream(body, now=NOW)
                    return service.import_chat_bytes(body.read(), now=NOW)

            started = time.perf_counter()
            first: Any = once()
            first_s = time.perf_counter() - started
            peak = status_kb(os.getpid(), "VmHWM")
            started = time.perf_counter()
            again: Any = once()
            again_s = time.perf_counter() - started
        finally:
            service.close()
    assert again.turns_queued == 0 and first.turns_queued > 0
    return {
        "conversations": first.conversations,
        "turns": first.turns_queued,
        "before_mb": before / 1024,
        "peak_mb": peak / 1024,
        "import_s": first_s,
        "again_s": again_s,
    }


def real_rows(args: argparse.Namespace) -> list[list[object]]:
    """Every generated export through every tree, a row each."""
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    trees = parse_trees(args.tree) or {"this": Path(__file__).resolve().parents[1] / "src"}
    rows: list[list[object]] = []
    for megabytes in (float(m) for m in args.real.split(",")):
        for kind in args.kinds.split(","):
            progress(f"writing the {kind} export of {megabytes:g} MB")
            plain, packed = write_export(folder, kind, megabytes)
            ways = [("path", plain), ("path", packed)]
            if args.upload and megabytes <= 50:
                ways += [("upload", plain), ("upload", packed)]
            for way, path in ways:
                options = ["--child", str(path)] + (["--upload"] if way == "upload" else [])
                for name, src in trees.items():
                    progress(f"{path.name} {way}: {name}")
                    got = run_tree(Path(__file__).resolve(), src, options)
                    rows.append([
                        kind, path.suffix[1:], way, f"{path.stat().st_size / 1e6:.0f}", name,
                        got["conversations"], got["turns"], f"{got['before_mb']:.0f}",
                        f"{got['peak_mb']:.0f}", f"{got['import_s']:.1f}",
                        f"{got['again_s']:.1f}",
                    ])  # fmt: skip
    return rows


def main() -> None:
    """Parse the arguments, run every size on each backend, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300,3000", help="conversations per export")
    parser.add_argument("--turns", type=int, default=8, help="owner turns per conversation")
    parser.add_argument("--postgres", help="a PostgreSQL URL of an empty database, too")
    parser.add_argument("--real", help="MB of the generated exports (e.g. 50,200)")
    parser.add_argument("--kinds", default="chatgpt,claude", help="with --real")
    parser.add_argument("--folder", default="/tmp/memoryd-chat-exports", help="with --real")
    parser.add_argument("--upload", action="store_true", help="with --real: as uploaded too")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=SRC")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child), args.upload)))
        return
    if args.real:
        rows = real_rows(args)
        print(f"import-chats from a file, peak resident memory of a fresh process, {stamp()}")
        print_table(
            ["export", "file", "read as", "MB", "tree", "conversations", "turns",
             "RSS before MB", "peak MB", "import s", "again s"],
            rows,
            numeric_right=True,
        )  # fmt: skip
        return
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
