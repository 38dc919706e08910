"""What every benchmark shares to measure and to print: percentiles, timers, Markdown tables."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` (0-1) percentile with linear interpolation between the two nearest values
    (numpy's default; ``percentile(v, 0.5)`` is the median); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return float(ordered[below] + (ordered[above] - ordered[below]) * (position - below))


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; 0.0 for no values."""
    return math.fsum(values) / len(values) if values else 0.0


def markdown_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, numeric_right: bool = False
) -> str:
    """A Markdown table; with ``numeric_right`` every column but the first is right-aligned."""
    align = [":---"] + ["---:" if numeric_right else "---"] * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, numeric_right: bool = False
) -> None:
    """Print a Markdown table to stdout, flushed."""
    print(markdown_table(headers, rows, numeric_right=numeric_right), flush=True)


def elapsed_ms(call: Callable[[], object]) -> float:
    """Run ``call`` and return its wall time in milliseconds."""
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


@dataclass
class Meter:
    """Seconds spent inside one kind of call, and how many calls."""

    seconds: float = 0.0
    calls: int = 0

    def timed(self, call: Callable[[], T]) -> T:
        """Run ``call`` and add its wall time to this meter."""
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def progress(message: str) -> None:
    """A progress line on stderr, so stdout stays pure Markdown."""
    print(message, file=sys.stderr, flush=True)


def stamp() -> str:
    """When and where a run happened: UTC minute and core count, for a table's caption."""
    return f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores"
