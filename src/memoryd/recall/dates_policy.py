"""Dates as people write them, pure: a day ("on 16 June, 2023", "April 10", "2026-08-27"), a
run of days ("April 6-7", "6–7 April", "the 6th to the 9th of April", "between April 6 and
April 9", "April 30 - May 2"), a month of a year ("August 2023") or a year ("in 2022"), read
from a message (:func:`explicit_date`, a day without a year being the most recent such day) or
from a memory's text (:func:`named_days`, a day without a year being the one nearest the day it
was written: "my appointment is on March 15", written on 2 March, is 15 March to come).
Numbers for a day and a month are read only when the text itself says which is the month
(:func:`numeric_days`): "15/11" and "11/15" (a number over 12 is the day), "15.11." (dotted is
day first), "2026/11/15"; not "5/11", which is 5 November to some writers and May 11 to others.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): n for n, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
# A day and month without a year count only after one of these, or with an ordinal ("3rd"):
# "I may 5 times …" is not the fifth of May.
DAY_LEAD = re.compile(r"\b(on|by|since|until|till|from|to|before|after|the|of|between|and|for)\s+$")
# Month names that are everyday words too ("we march 5 to 6 miles"): a run of days joined by a
# word after them needs a lead, as a single day does.
_WORDLIKE_MONTHS = frozenset(("may", "march", "mar"))
_YEAR_DIGITS = r"(?:19|20)\d\d"
_YEAR = rf"({_YEAR_DIGITS})"
# Where a span with no start begins: a day after the calendar's first, so that the window's
# start stays a valid instant in any time zone.
EARLIEST = date.min + timedelta(days=1)


@dataclass(frozen=True)
class DaySpan:
    """Days [first, after) named by a phrase found at text[begin:end]."""

    first: date
    after: date
    begin: int
    end: int


def explicit_date(
    text: str, today: date, since: int = 0, *, nearest: bool = False
) -> DaySpan | None:
    """The first explicit date in the (lower-cased) text from ``since`` on: a day, a run of
    days, a month of a year, or a year. A day without a year is the most recent such day,
    ``today`` included, or (``nearest``) the one nearest ``today``, either way."""
    found: list[DaySpan] = []
    finders = (
        _iso_days,
        _iso_months,
        numeric_days,
        _days_and_months,
        _day_runs,
        _month_year,
        _year,
    )
    for finder in finders:
        try:
            found.extend(s for s in finder(text, today, nearest) if s.begin >= since)
        except OverflowError:  # a date at the calendar's end (9999-12-31) has no day after it
            continue
    if not found:
        return None
    # The earliest in the text; at one position, the phrase read furthest ("April 6-7" over
    # "April 6"), then the most specific (shortest span of days).
    return min(found, key=lambda s: (s.begin, -(s.end - s.begin), (s.after - s.first).days))


def named_days(text: str, written: date) -> list[DaySpan]:
    """The days and runs of days a memory's text names (not months or years), a day without a
    year read as the one nearest ``written``, the day the text was written."""
    lowered = " ".join(text.lower().split())
    found: list[DaySpan] = []
    for finder in (_iso_days, numeric_days, _days_and_months, _day_runs):
        try:
            found.extend(finder(lowered, written, True))
        except OverflowError:
            continue
    return found


def names_day_within(text: str, written: date, first: date, after: date) -> date | None:
    """The first day in [first, after) that the text names (see :func:`named_days`), or None."""
    return first_day_within(named_days(text, written), first, after)


def first_day_within(spans: Iterable[DaySpan], first: date, after: date) -> date | None:
    """The first day in [first, after) that any of ``spans`` holds, or None."""
    days = [max(s.first, first) for s in spans if s.first < after and s.after > first]
    return min(days, default=None)


def day_phrases(first: date, after: date) -> list[str]:
    """How a text names a day in [first, after), as words in a row: "april 6", "6 april",
    "april 6th", "6th april", "6th of april", with the month's name and its short name (a run
    of days, "April 6-7", holds "april 6" too)."""
    phrases: dict[str, None] = {}
    day = first
    while day < after:
        number, ordinal = str(day.day), f"{day.day}{ordinal_suffix(day.day)}"
        for month in (calendar.month_name[day.month], calendar.month_abbr[day.month]):
            month = month.lower()
            phrases.update(
                dict.fromkeys(
                    (
                        f"{month} {number}",
                        f"{number} {month}",
                        f"{month} {ordinal}",
                        f"{ordinal} {month}",
                        f"{ordinal} of {month}",
                    )
                )
            )
        day += timedelta(days=1)
    return list(phrases)


def numeric_phrases(first: date, after: date) -> list[str]:
    """How a text writes a day in [first, after) in numbers, in the forms :func:`numeric_days`
    reads: "15/11", "11/15" (a day over 12 only), "15.11.", "05.11.", "2026-11-15",
    "2026/11/15"."""
    phrases: dict[str, None] = {}
    day = first
    while day < after:
        d, m, y = day.day, day.month, day.year
        forms = [f"{d}.{m}.", f"{d:02}.{m:02}.", f"{y}-{m:02}-{d:02}", f"{y}/{m:02}/{d:02}"]
        if d > 12 or d == m:
            forms += [f"{d}/{m}", f"{m}/{d}", f"{d:02}/{m:02}", f"{m:02}/{d:02}"]
        phrases.update(dict.fromkeys(forms))
        day += timedelta(days=1)
    return list(phrases)


def ordinal_suffix(day: int) -> str:
    """ "st", "nd", "rd" or "th" for a day of the month."""
    if day in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _iso_days(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    for match in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        day = valid_date(int(match[1]), int(match[2]), int(match[3]))
        if day is not None:
            yield DaySpan(day, day + timedelta(days=1), match.start(), match.end())


def _iso_months(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    for match in re.finditer(r"\b(\d{4})-(\d{2})\b(?!-)", text):
        if 1 <= int(match[2]) <= 12 and int(match[1]) >= 1000:
            first = date(int(match[1]), int(match[2]), 1)
            yield DaySpan(first, next_month(first), match.start(), match.end())


# Day and month in numbers (see the module's docstring): slashed, either order, an optional
# year after; dotted, day first, ending in a dot or a year; a year first, slashed. Not in a
# longer run of numbers ("1/2/3", "3.4.5"), nor "24/7" (all the time).
_SLASHED = re.compile(r"(?<![\w/.-])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\w/]|\.\d)")
_DOTTED = re.compile(r"(?<![\w/.])(\d{1,2})\.(\d{1,2})\.(?:(\d{4})\b|(?![\w.]))")
_FIGURES = re.compile(r"\d[/.]\d")
_YEAR_SLASHED = re.compile(r"(?<![\w/.-])(\d{4})/(\d{1,2})/(\d{1,2})(?![\w/])")


def numeric_days(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    """Every day written in numbers whose order the text makes plain (see ``_SLASHED``); a day
    without a year is resolved as a named one is (``nearest``, or the most recent)."""
    if not _FIGURES.search(text):  # most texts hold none: one quick look first
        return
    for match in _SLASHED.finditer(text):
        if match[0] == "24/7":
            continue
        year = match[3] if match[3] is None or len(match[3]) == 4 else f"20{match[3]}"
        first, second = int(match[1]), int(match[2])
        readings = {
            found
            for month, number in ((second, first), (first, second))
            if (found := _resolve(month, number, year, today, nearest)) is not None
        }
        if len(readings) == 1:
            yield _one_day(readings.pop(), match)
    for match in _DOTTED.finditer(text):
        day = _resolve(int(match[2]), int(match[1]), match[3], today, nearest)
        if day is not None:
            yield _one_day(day, match)
    for match in _YEAR_SLASHED.finditer(text):
        day = valid_date(int(match[1]), int(match[2]), int(match[3]))
        if day is not None:
            yield _one_day(day, match)


def _one_day(day: date, match: re.Match[str]) -> DaySpan:
    return DaySpan(day, day + timedelta(days=1), match.start(), match.end())


# A day and a month, either way round, with an optional year: "16 June, 2023", "8th December
# 2023", "10th of April", "April 10, 2023", "October 13th 2023", "Sept. 3".
_ORD = r"(?:st|nd|rd|th)?"
_DAY_FIRST = rf"\b(?P<day>\d{{1,2}})(?P<ord>{_ORD})\s+(?:of\s+)?(?P<month>{_MONTH})\b\.?"
_MONTH_FIRST = rf"\b(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}})(?P<ord>{_ORD})\b"
_THEN_YEAR = rf"(?:,?\s+(?P<year>{_YEAR_DIGITS})\b)?"


def _days_and_months(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    """Every day-and-month date in the text, in either order (see ``_DAY_FIRST``)."""
    for pattern in (_DAY_FIRST + _THEN_YEAR, _MONTH_FIRST + _THEN_YEAR):
        for match in re.finditer(pattern, text):
            if not _dated(text, match.start(), bool(match["year"] or match["ord"])):
                continue
            day = _resolve(MONTHS[match["month"]], int(match["day"]), match["year"], today, nearest)
            if day is not None:
                yield DaySpan(day, day + timedelta(days=1), match.start(), match.end())


def _dated(text: str, begin: int, marked: bool) -> bool:
    """Whether a day-and-month match is really a date (see ``DAY_LEAD``): ``marked`` by a year,
    an ordinal or a dash, or led by one of its words."""
    return marked or bool(DAY_LEAD.search(text[:begin]))


# A run of days: "April 6-7", "April 6 to 9", "April 30 - May 2", "6–7 April", "the 6th and 7th
# of April", "30 April to 2 May", each with an optional year after it. Not before a time of
# day or a measure ("April 6 from 6 to 7 pm" is no run of days).
_DASH = r"\s*[-–—]\s*"
_JOINT = rf"(?P<joint>{_DASH}|\s+(?:to|through|thru|till|until|and|&)\s+(?:the\s+)?)"
_NOT_A_TIME = r"(?!\s*(?:am\b|pm\b|a\.m|p\.m|[:.]\d|%|h\b|hours?\b|minutes?\b))"
_RUN_MONTH_FIRST = (
    rf"\b(?P<m1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}})(?P<o1>{_ORD}){_JOINT}"
    rf"(?:(?P<m2>{_MONTH})\.?\s+)?(?P<d2>\d{{1,2}})(?P<o2>{_ORD})\b{_NOT_A_TIME}"
)
_RUN_DAY_FIRST = (
    rf"\b(?P<d1>\d{{1,2}})(?P<o1>{_ORD})(?:\s+(?:of\s+)?(?P<m1>{_MONTH})\b\.?)?{_JOINT}"
    rf"(?P<d2>\d{{1,2}})(?P<o2>{_ORD})\s+(?:of\s+)?(?P<m2>{_MONTH})\b\.?"
)


def _day_runs(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    """Every run of days in the text (see ``_RUN_MONTH_FIRST``), both ends included."""
    for pattern in (_RUN_MONTH_FIRST + _THEN_YEAR, _RUN_DAY_FIRST + _THEN_YEAR):
        for match in re.finditer(pattern, text):
            # A dash, or a word between two day numbers beside a month that is only a month,
            # marks a run of days (see ``_WORDLIKE_MONTHS``).
            months = {match["m1"], match["m2"]}
            joined = bool(re.fullmatch(_DASH, match["joint"])) or not months & _WORDLIKE_MONTHS
            marked = bool(match["year"] or match["o1"] or match["o2"] or joined)
            if not _dated(text, match.start(), marked):
                continue
            run = _run(match, today, nearest)
            if run is not None:
                yield DaySpan(run[0], run[1] + timedelta(days=1), match.start(), match.end())


def _run(match: re.Match[str], today: date, nearest: bool) -> tuple[date, date] | None:
    """A run's first and last day: the first month is the second's when not written, the
    first day's year the second's (or the year before, when the run crosses a new year)."""
    last_month = MONTHS[match["m2"] or match["m1"]]
    first_month = MONTHS[match["m1"] or match["m2"]]
    d1, d2 = int(match["d1"]), int(match["d2"])
    crosses = (first_month, d1) > (last_month, d2)
    if (first_month, d1) == (last_month, d2):
        return None
    if match["year"] is not None:
        last = valid_date(int(match["year"]), last_month, d2)
        first = valid_date(int(match["year"]) - crosses, first_month, d1)
    else:
        first = _resolve(first_month, d1, None, today, nearest)
        last = None if first is None else valid_date(first.year + crosses, last_month, d2)
    if first is None or last is None or (last - first).days > 62:
        return None
    return first, last


def _resolve(month: int, day: int, year: str | None, today: date, nearest: bool) -> date | None:
    """A day of a month: in ``year`` when written; else the most recent such day, ``today``
    included, or (``nearest``) the one nearest ``today`` either way."""
    if year is not None:
        return valid_date(int(year), month, day)
    if nearest:
        days = [valid_date(today.year + shift, month, day) for shift in (-1, 0, 1)]
        return min((d for d in days if d is not None), key=lambda d: abs(d - today), default=None)
    found = valid_date(today.year, month, day)
    if found is not None and found > today:
        found = valid_date(today.year - 1, month, day)
    return found


def _month_year(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    """ "August 2023", "in May, 2022"."""
    for match in re.finditer(rf"\b({_MONTH})\.?,?\s+{_YEAR}\b", text):
        first = date(int(match[2]), MONTHS[match[1]], 1)
        yield DaySpan(first, next_month(first), match.start(), match.end())


def _year(text: str, today: date, nearest: bool) -> Iterator[DaySpan]:
    """ "in 2022", "during 2023", "since 2021" (to now), "as of 2022" (up to its end): a bare
    number is not a year."""
    pattern = rf"\b(in|during|since|as of|of)\s+{_YEAR}\b(?!\s*(?:-|%|percent))"
    for match in re.finditer(pattern, text):
        first = date(int(match[2]), 1, 1)
        if match[1] == "since":
            after = max(today + timedelta(days=1), first)
        elif match[1] == "as of":
            first, after = EARLIEST, date(first.year + 1, 1, 1)
        else:
            after = date(first.year + 1, 1, 1)
        yield DaySpan(first, after, match.start(), match.end())


def valid_date(year: int, month: int, day: int) -> date | None:
    """The date, or None when there is no such day."""
    try:
        return date(year, month, day)
    except ValueError:
        return None


def next_month(first: date) -> date:
    """The first day of the month after ``first``'s."""
    return add_months(first, 1)


def add_months(first: date, months: int) -> date:
    """The first of the month ``months`` after ``first`` (a first of a month)."""
    index = first.year * 12 + (first.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)
