"""A table's rows in date order, cut into months (pure): a bank statement or a log exported as
CSV is read month by month, as a printed statement is, so "what did I pay in March?" has a
heading to match.

A date column is the first column every data row fills with a date: 2026-03-14 (ISO, a time
after it allowed), 2026/03/14, 14.03.2026 (day first, as Europe writes it) or 14/03/2026 and
03/14/2026 (day or month first, told apart by a part over 12; a column where neither is ever
over 12 is ambiguous and not used). The rows must already run in date order, up or down, over
at least two months; otherwise the table stays whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

__all__ = ["month_sections"]

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_ISO = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[ T].*)?$")
_DOTTED = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})(?:\s.*)?$")
_SLASHED = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})(?:\s.*)?$")


def month_sections(rows: Sequence[list[str]]) -> list[tuple[str, list[list[str]]]]:
    """``rows`` as (month heading, its rows) runs when a column dates them in order; else one
    run under no heading."""
    width = min((len(row) for row in rows), default=0)
    for column in range(width):
        months = _months([row[column] for row in rows])
        if months is not None:
            return _runs(rows, months)
    return [("", list(rows))]


def _months(cells: list[str]) -> list[tuple[int, int]] | None:
    """Each cell's (year, month) when all are dates of one format in order, over two months
    or more; else None."""
    found = [_ISO.match(c) for c in cells]
    if all(found):
        keys: list[tuple[int, int]] | None = [
            (int(m.group(1)), int(m.group(2))) for m in found if m
        ]
    else:
        keys = _day_month(cells)
    if keys is None or not all(1 <= month <= 12 for _, month in keys) or len(set(keys)) < 2:
        return None
    rising = all(a <= b for a, b in pairwise(keys))
    falling = all(a >= b for a, b in pairwise(keys))
    return keys if rising or falling else None


def _day_month(cells: list[str]) -> list[tuple[int, int]] | None:
    dotted = [_DOTTED.match(c) for c in cells]
    if all(dotted):
        return [(int(m.group(3)), int(m.group(2))) for m in dotted if m]
    slashed = [_SLASHED.match(c) for c in cells]
    if not all(slashed):
        return None
    parts = [(int(m.group(1)), int(m.group(2)), int(m.group(3))) for m in slashed if m]
    day_first = any(first > 12 for first, _, _ in parts)
    month_first = any(second > 12 for _, second, _ in parts)
    if day_first == month_first:  # neither tells, or both: not one format
        return None
    return [(year, second if day_first else first) for first, second, year in parts]


def _runs(
    rows: Sequence[list[str]], months: list[tuple[int, int]]
) -> list[tuple[str, list[list[str]]]]:
    runs: list[tuple[str, list[list[str]]]] = []
    current: tuple[int, int] | None = None
    for row, key in zip(rows, months, strict=True):
        if key != current:
            current = key
            runs.append((f"{MONTHS[key[1] - 1]} {key[0]}", []))
        runs[-1][1].append(row)
    return runs
