"""Days as people write them day to day, read against the day the text was written (pure;
docs/recall.md, "Days a memory names"): "tomorrow", "tonight", "the day after tomorrow",
"yesterday", "next Monday", "on Friday" (the coming one), "last Friday", "in two days", and a
day of the month without its month, "the dentist on the 15th" (the coming 15th: written on 2
November it is 15 November, written on the 20th it is 15 December). A week ("this week",
"next week", "last week": weeks start on Monday) or its weekend ("this weekend", "next weekend",
"last weekend": that week's Saturday and Sunday) is read apart (:func:`week_within`): it names a
day less closely. The numeric forms ("15/11", "15.11.") are read with the other explicit dates
(dates_policy).

What is not read: a weekday said with "every" or in the plural ("on Fridays"), a weekday with
a part of the day in the plural ("on Monday mornings": a habit), an ordinal that counts
something ("the 15th floor", "the 3rd time"), "the last week of March" (a date's week) and
"every weekend": "the 15th" is a day only at the end of a clause or before a word of time or
linking (``_AFTER_ORDINAL``).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from datetime import date, timedelta

from memoryd.recall.dates_policy import (
    MONTHS,
    DaySpan,
    add_months,
    first_day_within,
    ordinal_suffix,
    valid_date,
)

WEEKDAYS = {name.lower(): n for n, name in enumerate(calendar.day_name)}
_WEEKDAY = "|".join(WEEKDAYS)
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBERS = {
    "a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "couple of": 2, "few": 3,
}  # fmt: skip
# "in two days": at most this many days ahead (a fortnight).
LONGEST_AHEAD = 14
# Days a word names from the day it was written: (pattern, days from it). Longer first, so that
# "the day after tomorrow" is not read as "tomorrow".
_RELATIVE = (
    (re.compile(r"\bday after tomorrow\b"), 2),
    (re.compile(r"\bday before yesterday\b"), -2),
    (re.compile(r"(?<!after )\btomorrow\b"), 1),
    (re.compile(r"(?<!before )\byesterday\b"), -1),
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b"), 0),
)
_IN_DAYS = re.compile(r"\bin (?:(\d{1,2})|(" + "|".join(_NUMBERS) + r")) days?\b")
# "on Friday" and "this Friday" are the coming one, "next Friday" too (as a question reads it,
# time_window_policy), "last Friday" the one just gone; "Friday mornings" is a habit, and
# "on Friday 27 November" a date (dates_policy reads it).
_ON_WEEKDAY = re.compile(
    rf"\b(on|this|next|coming|last|by|until|till)\s+(?:coming\s+)?({_WEEKDAY})\b"
    r"(?!\s+(?:mornings|afternoons|evenings|nights)\b)"
    rf"(?!,?\s+(?:the\s+)?\d|,?\s+(?:{_MONTH})\b)"
)
# A week or its weekend counted from the week a text was written in (weeks start on Monday);
# not "the last week of May" (the month's last) nor "every weekend".
_WEEK = re.compile(r"(?<!\bthe )\b(this|next|last)\s+(week|weekend)\b(?!\s+of\b)")
_WEEKS_FROM = {"this": 0, "next": 1, "last": -1}
# A day of the month without its month: "the 15th", "on the 3rd", not "March the 15th" and
# not "the 15th of March" (a date, dates_policy), nor "the 15th floor".
_ORDINAL = re.compile(r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b")
_AFTER_ORDINAL = re.compile(
    r"\s*(?:$|[.,;:!?)\-–—]|(?:at|in|on|for|from|to|till|until|and|or|but|so|then|when|with|"
    r"by|is|was|will|would|i|we|morning|afternoon|evening|night|noon|please|if|as|because|"
    r"before|after|too|also|instead|this|next|\d)\b)"
)
_MONTH_BEFORE = re.compile(rf"\b(?:{_MONTH})\.?,?\s+$")
# Whether a text holds any of the words read at all (most do not: a quick test first).
_ANY_WORD = re.compile(
    rf"\b(?:tomorrow|yesterday|today|tonight|this|days?|{_WEEKDAY}|\d{{1,2}}(?:st|nd|rd|th))\b"
)


def relative_day_within(text: str, written: date, first: date, after: date) -> date | None:
    """The first day in [first, after) that the text names by a word read against
    ``written`` (:func:`written_days`), or None."""
    lowered = " ".join(text.lower().split())
    if not _ANY_WORD.search(lowered):
        return None
    return first_day_within(written_days(lowered, written), first, after)


def written_days(text: str, written: date) -> Iterator[DaySpan]:
    """The days the (lower-cased, spaces joined) text names relative to ``written``, the day
    it was written (see the module's docstring); none past the calendar's ends."""
    offsets: list[tuple[int, re.Match[str]]] = []
    for pattern, offset in _RELATIVE:
        offsets += [(offset, match) for match in pattern.finditer(text)]
    for match in _IN_DAYS.finditer(text):
        count = int(match[1]) if match[1] else _NUMBERS[match[2]]
        if 0 < count <= LONGEST_AHEAD:
            offsets.append((count, match))
    for match in _ON_WEEKDAY.finditer(text):
        if text[: match.start()].endswith(("every ", "each ")):
            continue
        target = WEEKDAYS[match[2]]
        if match[1] == "last":
            offsets.append((-((written.weekday() - target) % 7 or 7), match))
        else:
            offsets.append(((target - written.weekday()) % 7 or 7, match))
    for offset, match in offsets:
        span = _day(written, offset, match)
        if span is not None:
            yield span
    yield from month_days(text, written, ahead=True)


def week_within(text: str, written: date, first: date, after: date) -> date | None:
    """The first day in [first, after) of a week or weekend the text names from the week it
    was written in (:func:`week_days`), or None. Such a memory names the window's days less
    closely than one naming a day: the time leg ranks it after the window's own events."""
    lowered = " ".join(text.lower().split())
    if "week" not in lowered:
        return None
    return first_day_within(week_days(lowered, written), first, after)


def week_days(text: str, written: date) -> Iterator[DaySpan]:
    """The weeks and weekends the (lower-cased) text names from the week it was written in:
    "next week" written on a Thursday is the seven days from the coming Monday, "last
    weekend" the Saturday and Sunday of the week before."""
    for match in _WEEK.finditer(text):
        try:
            monday = written - timedelta(days=written.weekday())
            monday += timedelta(weeks=_WEEKS_FROM[match[1]])
            first = monday + timedelta(days=5) if match[2] == "weekend" else monday
            yield DaySpan(first, monday + timedelta(weeks=1), match.start(), match.end())
        except OverflowError:
            continue  # the calendar's first or last week


def month_days(text: str, today: date, *, ahead: bool) -> Iterator[DaySpan]:
    """Each day of the month named without its month in the (lower-cased) text: the coming
    one (``ahead``, today included) or the most recent one (today included)."""
    for match in _ORDINAL.finditer(text):
        day = month_day(text, match, today, ahead=ahead)
        span = None if day is None else _day(day, 0, match)
        if span is not None:
            yield span


def month_day(text: str, match: re.Match[str], today: date, *, ahead: bool) -> date | None:
    """The day an ordinal ``match`` ("the 15th") names, or None when it names no day (see
    ``_ORDINAL``); a month without that day (the 31st) is passed over."""
    if not _AFTER_ORDINAL.match(text, match.end()) or _MONTH_BEFORE.search(text[: match.start()]):
        return None
    number = int(match[1])
    if not 1 <= number <= 31:
        return None
    step = 1 if ahead else -1
    month = today.replace(day=1)
    for _ in range(3):
        day = valid_date(month.year, month.month, number)
        if day is not None and (day >= today if ahead else day <= today):
            return day
        if not date.min.year < month.year < date.max.year:
            return None  # the calendar's first or last year: no month beyond it
        month = add_months(month, step)
    return None


def weekday_phrases(first: date, after: date) -> list[str]:
    """The weekday names of the days in [first, after)."""
    days = (first + timedelta(days=n) for n in range(min((after - first).days, 7)))
    return [calendar.day_name[day.weekday()].lower() for day in days]


def ordinal_phrases(first: date, after: date) -> list[str]:
    """ "15th", "1st", … for the days of the month in [first, after)."""
    numbers: dict[int, None] = {}
    day = first
    while day < after:
        numbers[day.day] = None
        day += timedelta(days=1)
    return [f"{n}{ordinal_suffix(n)}" for n in numbers]


def _day(written: date, offset: int, match: re.Match[str]) -> DaySpan | None:
    """The day ``offset`` days from ``written``, named at ``match``; None past the calendar's
    ends (a day must have a day after it)."""
    try:
        day = written + timedelta(days=offset)
        return DaySpan(day, day + timedelta(days=1), match.start(), match.end())
    except OverflowError:
        return None
