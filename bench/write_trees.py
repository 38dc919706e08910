"""bench_write across checkouts: each tree's run in a child process importing memoryd from that
tree's src (``moved_modules`` lets an old checkout answer to today's paths), rounds interleaved
(old, new, old, new …), then one table per round and the ratio of the medians (later tree /
first tree). Every measure is a time, so a ratio above 1 means the later tree is slower."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import percentile, print_table, stamp
from trees import run_interleaved
from write_results import FillRun, WriteRun

# (label, key) of each measure a child reports, all in milliseconds.
MEASURES = (
    ("fill, per memory", "fill_ms"),
    ("remember p50", "remember_p50"),
    ("remember p95", "remember_p95"),
    ("remember CPU p50", "remember_cpu_p50"),
    ("propose 5 p50", "propose_p50"),
    ("propose 5 p95", "propose_p95"),
    ("propose 5 CPU p50", "propose_cpu_p50"),
)


def summary(fills: Sequence[FillRun], writes: Sequence[WriteRun]) -> dict[str, dict[str, float]]:
    """A child's figures by store size: fill time per memory added, and each write's wall and
    CPU percentiles (CPU: the process's, all threads)."""
    found: dict[str, dict[str, float]] = {}
    for fill in fills:
        found[str(fill.size)] = {"fill_ms": fill.seconds / max(fill.added, 1) * 1000}
    for run in writes:
        name = run.operation.split()[0]
        # The writes timed at a size follow its fill: the largest size not above the count.
        size = max((s for s in found if int(s) <= run.size_before), key=int)
        totals = [s.total * 1000 for s in run.samples]
        cpu = [s.cpu * 1000 for s in run.samples]
        found[size][f"{name}_p50"] = percentile(totals, 0.5)
        found[size][f"{name}_p95"] = percentile(totals, 0.95)
        found[size][f"{name}_cpu_p50"] = percentile(cpu, 0.5)
    return found


def compare_trees(script: Path, trees: dict[str, Path], rounds: int, options: list[str]) -> None:
    """Run every tree ``rounds`` times, interleaved, and print the figures and the ratios."""
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, dict[str, float]]]] = run_interleaved(
        script, trees, rounds, options
    )
    loads = (load_before, os.getloadavg())
    sizes = list(next(iter(runs.values()))[0])
    print(f"\nWrite path by tree, {rounds} interleaved rounds, {stamp()}")
    print(f"load average before / after: {loads[0][0]:.1f} / {loads[1][0]:.1f}\n")
    rows: list[Any] = []
    for size in sizes:
        for name in trees:
            rows.append(
                (
                    f"{int(size):,}",
                    name,
                    *(" / ".join(f"{r[size][key]:.1f}" for r in runs[name]) for _, key in MEASURES),
                )
            )
    print_table(("memories", "tree", *(f"{label} ms" for label, _ in MEASURES)), rows)
    first, *others = runs
    for other in others:
        print(f"\n{other} / {first}: median of the rounds' figures, ms\n")
        ratios = []
        for size in sizes:
            for label, key in MEASURES:
                old, new = (
                    statistics.median(r[size][key] for r in runs[name]) for name in (first, other)
                )
                ratios.append(
                    (f"{int(size):,}", label, f"{old:.2f}", f"{new:.2f}", f"{new / old:.3f}")
                )
        print_table(("memories", "measure", first, other, "ratio"), ratios)
