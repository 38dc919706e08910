"""Cold start of the command line: ``memoryd --help``, ``list`` and ``recall "x"``, each a fresh
process, hyperfine-style (min and median wall time of ``--runs`` runs, and peak RSS).

Two stores: an empty one and one holding ``--memories`` facts. With ``--old PATH`` (another
checkout's ``src``) each command runs under both trees, interleaved (old, new, old, new …), so
the ratio holds on a busy machine even when the absolute times do not.

Bytecode is compiled first (one discarded run per tree and command, with ``.pyc`` files kept
under a temporary ``PYTHONPYCACHEPREFIX``), as an installed package has it.

    .venv/bin/python bench/bench_startup.py [--runs 10] [--memories 5] [--old ../old/src]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import percentile, print_table, progress, stamp

MEMORYD = Path(sys.executable).parent / "memoryd"
NEW_SRC = Path(__file__).resolve().parent.parent / "src"
COMMANDS: tuple[tuple[str, list[str], str], ...] = (
    ("memoryd --help", ["--help"], "-"),
    ("memoryd list", ["list"], "empty"),
    ('memoryd recall "x"', ["recall", "x"], "empty"),
    ("memoryd list", ["list"], "few"),
    ('memoryd recall "x"', ["recall", "x"], "few"),
)
FACTS = (
    "I live in Lisbon",
    "My sister Ana is a nurse in Porto",
    "I drink green tea every morning",
    "The team standup is at 9:30 on weekdays",
    "My bike is a blue Brompton",
    "I am allergic to penicillin",
    "The wifi password is kept in the kitchen drawer",
    "I prefer window seats on flights",
)


@dataclass
class Runs:
    """Wall seconds and peak RSS (KiB) of each run of one command under one tree."""

    seconds: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)


def run_once(src: Path, args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Run ``memoryd ARGS`` with ``src`` first on the path; its wall time and peak RSS."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(MEMORYD), *args],
        env={**env, "PYTHONPATH": str(src)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # wait4 gives this child's own rusage (RUSAGE_CHILDREN would accumulate the maximum).
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = process.stderr.read().decode() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    if process.returncode != 0:
        raise SystemExit(f"memoryd {' '.join(args)} under {src} failed: {errors}")
    return seconds, int(usage.ru_maxrss)


def seeded_stores(home: Path, env: dict[str, str], memories: int) -> dict[str, Path]:
    """An empty store and one holding ``memories`` facts, made with the new code."""
    stores = {"empty": home / "empty.db", "few": home / "few.db"}
    for name, db in stores.items():
        run_once(NEW_SRC, ["--db", str(db), "init"], env)
        if name == "few":
            for index in range(memories):
                fact = f"{FACTS[index % len(FACTS)]} (note {index})"
                run_once(NEW_SRC, ["--db", str(db), "remember", fact], env)
    return stores


def measure(trees: dict[str, Path], runs: int, memories: int) -> list[list[object]]:
    """Every command under every tree, interleaved; one row per command and store."""
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-startup-") as tmp:
        home = Path(tmp)
        env = {key: value for key, value in os.environ.items() if key != "MEMORYD_DB"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {"MEMORYD_HOME": str(home), "PYTHONPYCACHEPREFIX": str(home / "pycache")}
        stores = seeded_stores(home, env, memories)
        rows: list[list[object]] = []
        for label, args, store in COMMANDS:
            command = args if store == "-" else ["--db", str(stores[store]), *args]
            results = {name: Runs() for name in trees}
            for src in trees.values():
                run_once(src, command, env)  # bytecode compiled, files in the page cache
            progress(f"{label} ({store} store): {runs} runs per tree")
            for _ in range(runs):
                for name, src in trees.items():
                    seconds, peak = run_once(src, command, env)
                    results[name].seconds.append(seconds)
                    results[name].peak_kib.append(peak)
            rows.append(row(label, store, results))
        return rows


def row(label: str, store: str, results: dict[str, Runs]) -> list[object]:
    """One table row: min/median seconds and peak RSS per tree, and new ÷ old medians."""
    cells: list[object] = [label, store]
    medians: list[float] = []
    for runs in results.values():
        median = percentile(runs.seconds, 0.5)
        medians.append(median)
        cells += [f"{min(runs.seconds):.3f}", f"{median:.3f}", f"{max(runs.peak_kib) / 1024:.0f}"]
    if len(medians) == 2:
        cells.append(f"{medians[1] / medians[0]:.2f}")
    return cells


def main() -> None:
    """Parse the options, run the commands and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--memories", type=int, default=5)
    parser.add_argument("--old", type=Path, help="another checkout's src, measured beside")
    options = parser.parse_args()
    trees = {"old": options.old.resolve()} if options.old else {}
    trees["new"] = NEW_SRC
    rows = measure(trees, options.runs, options.memories)
    headers = ["command", "store"]
    for name in trees:
        headers += [f"{name} min s", f"{name} median s", f"{name} peak MB"]
    if len(trees) == 2:
        headers.append("new ÷ old (median)")
    print(f"Cold start, {options.runs} runs each, {stamp()}\n")
    print_table(headers, rows, numeric_right=True)


if __name__ == "__main__":
    main()
