"""A document's chunk writes in the SQLite store, old code beside new: the statements
``replace_chunks``, ``save_chunk_vectors``, ``vectors_by_position`` and ``delete_document``
run (they should be the same, in the same order), and the time of ``replace_chunks`` for a
document of many chunks, each with a small table (two table rows), half of them with a vector.

    python bench/bench_kb_writes.py --tree old=../main/src --tree new=src --rounds 4

Each tree runs in a fresh interpreter (``bench/trees.py``), the trees interleaved round by
round; a round's time is the best of ``--repeats`` writes of the same document.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trees import add_tree_arguments, parse_trees, run_interleaved

TABLE = "| name | value |\n| --- | --- |\n| alpha | 1 |\n| beta | 2 |"


def measure(chunk_count: int, repeats: int, trace: bool) -> dict[str, Any]:
    """One tree's figures: the best time, what the writes stored, and (``trace``) every
    statement run, white space folded."""
    import numpy as np

    from memoryd.kb.model import Chunk, Document, DocumentStatus, SourceType
    from memoryd.storage.protocols import EmbeddingSignature
    from memoryd.storage.sqlite import SqliteStore

    store = SqliteStore(Path(tempfile.mkdtemp()) / "kb.db", create=True)
    store.initialize_embeddings(EmbeddingSignature("bench", 8))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    document = Document(
        "doc1", "file:///a", "c", SourceType.CURATED, "T", DocumentStatus.READY, now, now
    )
    chunks = [Chunk("doc1", i, ("H",), "H", f"text {i}\n\n{TABLE}", 10) for i in range(chunk_count)]
    rng = np.random.default_rng(1)
    vectors = [
        rng.standard_normal(8).astype(np.float32) if i % 2 else None for i in range(chunk_count)
    ]
    with store.transaction():
        store.kb.save_document(document)
    statements: list[str] = []
    if trace:
        db: Any = store.kb._db  # the bench watches the connection's statements
        execute = db.execute

        def traced(sql: str, params: Sequence[Any] = ()) -> Any:
            statements.append(" ".join(sql.split()))
            return execute(sql, params)

        db.execute = traced
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        with store.transaction():
            store.kb.replace_chunks("doc1", chunks, vectors)
        best = min(best, time.perf_counter() - start)
    pending = [chunk for chunk, vector in zip(chunks, vectors, strict=True) if vector is None]
    with store.transaction():
        filled = store.kb.save_chunk_vectors(pending, [np.ones(8, np.float32)] * len(pending))
    stored = len(store.kb.vectors_by_position("doc1"))
    with store.transaction():
        store.kb.delete_document("doc1")
    return {"ms": best * 1000, "filled": filled, "vectors": stored, "statements": statements}


def main() -> None:
    """Measure this tree (a child), or every ``--tree`` interleaved (the parent)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=2000, help="chunks of the timed document")
    parser.add_argument("--repeats", type=int, default=15, help="timed writes per round")
    parser.add_argument("--json", action="store_true", help="print one tree's figures as JSON")
    add_tree_arguments(parser, rounds=4)
    args = parser.parse_args()
    if not args.tree:
        timed = measure(args.chunks, args.repeats, trace=False)
        traced = measure(3, 1, trace=True)
        print(json.dumps({**timed, "statements": traced["statements"]}))
        return
    options = ["--chunks", str(args.chunks), "--repeats", str(args.repeats)]
    runs = run_interleaved(Path(__file__).resolve(), parse_trees(args.tree), args.rounds, options)
    first = next(iter(runs.values()))[0]
    for name, figures in runs.items():
        times = ", ".join(f"{f['ms']:.0f}" for f in figures)
        same = figures[0]["statements"] == first["statements"]
        print(
            f"{name}: replace_chunks of {args.chunks} chunks, best of {args.repeats} per round: "
            f"{times} ms; vectors filled {figures[0]['filled']}, read {figures[0]['vectors']}; "
            f"{len(figures[0]['statements'])} statements for 3 chunks"
            + ("" if name == next(iter(runs)) else f", same as the first tree: {same}")
        )


if __name__ == "__main__":
    main()
