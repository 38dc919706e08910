"""bench_write's results and the Markdown tables they print as."""

from __future__ import annotations

import os
import platform
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version

from report import markdown_table, percentile


@dataclass
class WriteSample:
    """One timed write and how its time split."""

    total: float
    embed: float
    knn: float
    knn_calls: int
    outcomes: tuple[str, ...]
    # The process's CPU time over the write (all threads: the embedder's too).
    cpu: float = 0.0


@dataclass
class WriteRun:
    """All timed writes of one operation at one store size."""

    operation: str
    size_before: int
    size_after: int
    wall: float
    items_per_op: int
    samples: list[WriteSample] = field(default_factory=list)


@dataclass
class FillRun:
    """Filling the store up to one size."""

    size: int
    added: int
    seconds: float
    embed: float
    knn: float
    outcomes: Counter[str]


@dataclass
class SizeRow:
    """Bytes on disk at one store size, with a per-table breakdown."""

    memories: int
    db_bytes: int
    wal_bytes: int
    parts: dict[str, int]


@dataclass
class EmbedRow:
    """Embedding throughput for one kind of input."""

    label: str
    texts: int
    batch: int
    size_note: str
    windows: float
    seconds: float
    batch_ms: list[float]


def outcome_text(counter: Counter[str]) -> str:
    """'activated 990, pending 10' in a stable order."""
    order = ("activated", "pending", "reinforced", "dropped")
    return ", ".join(f"{name} {counter[name]}" for name in order if counter[name])


def write_table(runs: Sequence[WriteRun]) -> str:
    """Latency, throughput and time split of the timed writes."""
    rows = []
    for run in runs:
        totals = [s.total * 1000 for s in run.samples]
        n = len(run.samples)
        embed = sum(s.embed for s in run.samples) / n * 1000
        knn = sum(s.knn for s in run.samples) / n * 1000
        mean = sum(totals) / n
        calls = sum(s.knn_calls for s in run.samples) / n
        outcomes: Counter[str] = Counter(o for s in run.samples for o in s.outcomes)
        ops_per_s = n / run.wall
        rows.append(
            [
                run.operation,
                f"{run.size_before:,}→{run.size_after:,}",
                str(n),
                f"{percentile(totals, 0.5):.1f}",
                f"{percentile(totals, 0.95):.1f}",
                f"{mean:.1f}",
                f"{ops_per_s:.1f}",
                f"{ops_per_s * run.items_per_op:.1f}",
                f"{embed:.1f}",
                f"{knn:.1f} ({calls:.0f})",
                f"{mean - embed - knn:.1f}",
                outcome_text(outcomes),
            ]
        )
    headers = (
        "operation",
        "memories",
        "ops",
        "p50 ms",
        "p95 ms",
        "mean ms",
        "ops/s",
        "items/s",
        "embed ms",
        "KNN ms (queries)",
        "rest ms",
        "outcomes",
    )
    return markdown_table(headers, rows, numeric_right=True)


def fill_table(runs: Sequence[FillRun]) -> str:
    """How long filling took and where the time went."""
    rows = [
        [
            f"{run.size:,}",
            f"{run.added:,}",
            f"{run.seconds:.1f}",
            f"{run.added / run.seconds:.0f}" if run.seconds else "-",
            f"{run.embed:.1f}",
            f"{run.knn:.1f}",
            f"{run.seconds - run.embed - run.knn:.1f}",
            outcome_text(run.outcomes),
        ]
        for run in runs
    ]
    headers = (
        "fill to",
        "added",
        "seconds",
        "memories/s",
        "embed s",
        "KNN s",
        "rest s",
        "outcomes",
    )
    return markdown_table(headers, rows, numeric_right=True)


def size_table(rows: Sequence[SizeRow]) -> str:
    """Bytes on disk per memory, in total and by table."""

    def per(value: int, row: SizeRow) -> str:
        return f"{value / row.memories:,.0f}"

    out = [
        [
            f"{row.memories:,}",
            f"{row.db_bytes / 2**20:.2f}",
            f"{row.wal_bytes:,}",
            per(row.db_bytes + row.wal_bytes, row),
            per(row.parts.get("rows", 0), row),
            per(row.parts.get("fts", 0), row),
            per(row.parts.get("vectors", 0), row),
            per(row.parts.get("entities", 0), row),
            per(row.parts.get("audit", 0), row),
            per(row.parts.get("other", 0), row),
        ]
        for row in rows
    ]
    headers = (
        "memories",
        "db MiB",
        "wal bytes",
        "bytes/memory",
        "rows+indexes",
        "FTS5",
        "vectors",
        "entities",
        "audit",
        "other",
    )
    return markdown_table(headers, out, numeric_right=True)


def embed_table(rows: Sequence[EmbedRow]) -> str:
    """Texts per second and per-batch latency of the embedder."""
    out = [
        [
            row.label,
            row.size_note,
            f"{row.windows:.2f}",
            str(row.texts),
            str(row.batch),
            f"{percentile(row.batch_ms, 0.5):.1f}",
            f"{percentile(row.batch_ms, 0.95):.1f}",
            f"{row.texts / row.seconds:.1f}",
        ]
        for row in rows
    ]
    headers = (
        "input",
        "mean size",
        "windows/text",
        "texts",
        "batch",
        "p50 ms/batch",
        "p95 ms/batch",
        "texts/s",
    )
    return markdown_table(headers, out, numeric_right=True)


def render(
    load_seconds: float,
    run_seconds: float,
    loads: tuple[tuple[float, float, float], tuple[float, float, float]],
    embed_rows: Sequence[EmbedRow],
    fills: Sequence[FillRun],
    writes: Sequence[WriteRun],
    sizes_on_disk: Sequence[SizeRow],
) -> str:
    """The whole report as Markdown."""
    cores = os.cpu_count()
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    machine = (
        f"{cores} cores ({platform.machine()}), Python {platform.python_version()}, "
        f"onnxruntime {version('onnxruntime')}, sqlite-vec {version('sqlite-vec')}, "
        f"sqlean.py {version('sqlean.py')}"
    )

    def section(title: str, body: str) -> Iterator[str]:
        yield f"## {title}\n"
        yield f"{stamp} · {machine}\n"
        yield body + "\n"

    before, after = (" / ".join(f"{x:.2f}" for x in load) for load in loads)
    parts = [
        "# memoryd write benchmark\n",
        f"Run time {run_seconds:.0f} s. MiniLM cold load: {load_seconds:.2f} s. "
        f"Load average (1/5/15 min) at start: {before}, at end: {after} "
        "(other work on the machine inflates every number below).\n",
    ]
    parts += section("Writes (owner remember, turn propose)", write_table(writes))
    parts += section("Embedding throughput (LocalMiniLM, warm)", embed_table(embed_rows))
    parts += section("Store size per memory (after WAL checkpoint)", size_table(sizes_on_disk))
    parts += section("Fill (propose in batches of 100)", fill_table(fills))
    return "\n".join(parts)
