"""Old code beside new in one run: a bench measured once per checkout, each in a fresh
interpreter importing memoryd from that checkout's ``src``, the checkouts interleaved round by
round (a, b, a, b …) so that the machine's load falls on both alike."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from report import progress


def add_tree_arguments(parser: argparse.ArgumentParser, *, rounds: int) -> None:
    """``--tree NAME=SRC`` (repeated) and ``--rounds``."""
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="measure this checkout's src in a child process (repeat; interleaved by round)",
    )
    parser.add_argument("--rounds", type=int, default=rounds, help="rounds of --tree runs")


def parse_trees(specs: list[str]) -> dict[str, Path]:
    """``["old=../old/src", "new=src"]`` → ``{"old": Path(...), "new": Path(...)}``."""
    return {name: Path(src).resolve() for name, _, src in (t.partition("=") for t in specs)}


def run_tree(script: Path, src: Path, options: list[str]) -> Any:
    """``script``'s figures (its last line, JSON, under ``--json``) in a fresh interpreter
    importing memoryd from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, str(script), *options, "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{src}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_interleaved(
    script: Path, trees: dict[str, Path], rounds: int, options: list[str]
) -> dict[str, list[Any]]:
    """Every tree's figures, ``rounds`` times each, interleaved round by round."""
    runs: dict[str, list[Any]] = {name: [] for name in trees}
    for round_number in range(rounds):
        for name, src in trees.items():
            progress(f"round {round_number + 1}: {name} ({src})")
            runs[name].append(run_tree(script, src, options))
    return runs
