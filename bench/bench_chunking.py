"""Chunking time against text length, 0.1 MB to 50 MB, for two kinds of text: prose with
sentence ends, and a log with none (one "sentence" as long as the file, which is what made
chunking quadratic). Time per MB should stay flat as the text grows.

    .venv/bin/python bench/bench_chunking.py [--sizes 0.1,1,10,50]

Pass ``--module-path /work/main/src`` to time another checkout's chunker in the same run
(``--max-mb`` caps its sizes: the old chunker took 118 s on 1 MB of log).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import print_table, progress, stamp

PROSE = "The harbour council met in the library and agreed to repair the ferry pier. "
LOG = "2026-12-02T05:40:11Z host=web7 path=/v1/recall status=200 bytes=1834 ms=31 "


def text_of(kind: str, megabytes: float) -> str:
    """``megabytes`` million characters of prose or log lines (no blank line: one block)."""
    unit = PROSE if kind == "prose" else LOG
    size = int(megabytes * 1_000_000)
    return (unit * (size // len(unit) + 1))[:size]


def main() -> None:
    """One row per (text kind, size): seconds, MB/s and chunks."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="0.1,1,10,50")
    parser.add_argument("--module-path", help="import memoryd from here instead")
    parser.add_argument("--max-mb", type=float, default=1e9, help="skip sizes above this")
    args = parser.parse_args()
    if args.module_path:
        sys.path.insert(0, args.module_path)
    chunking = importlib.import_module("memoryd.kb.chunking")
    tokens = importlib.import_module("memoryd.providers.tokenizer")
    tokenizer = tokens.O200kTokenizer()

    def tail(text: str, n: int) -> str:
        ids = tokenizer.encode(text)
        return str(tokenizer.decode(ids[-n:])) if n < len(ids) else text

    print(f"Chunking time by text length ({stamp()}; {chunking.__file__})\n")
    header = ("text", "MB", "seconds", "MB/s", "chunks")
    print_table(header, [])
    for kind in ("log", "prose"):
        for size in (float(s) for s in args.sizes.split(",")):
            if size > args.max_mb:
                continue
            text = text_of(kind, size)
            progress(f"{kind} {size:g} MB …")
            started = time.perf_counter()
            drafts = chunking.chunk_markdown(text, tokenizer.count, tail)
            seconds = time.perf_counter() - started
            row = (kind, f"{size:g}", f"{seconds:.2f}", f"{size / seconds:.2f}", len(drafts))
            # A row as soon as it is measured: the largest sizes take minutes.
            print("| " + " | ".join(str(cell) for cell in row) + " |", flush=True)


if __name__ == "__main__":
    main()
