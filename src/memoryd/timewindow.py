"""Time expressions in a message → a window of time, relative to now (pure).

"yesterday", "last week", "in August", "on 2026-08-27", "3 days ago", "last Monday", …
Weeks start on Monday. Windows are half-open: start ≤ t < end.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): n for n, name in enumerate(calendar.month_abbr) if name})
_WEEKDAYS = {name.lower(): n for n, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3,
}  # fmt: skip


@dataclass(frozen=True)
class TimeWindow:
    """A half-open span of time named in a message."""

    start: datetime
    end: datetime
    phrase: str

    def contains(self, instant: datetime) -> bool:
        """Whether ``instant`` falls inside the window."""
        return self.start <= instant < self.end

    @property
    def middle(self) -> datetime:
        """The centre, used to rank events by closeness."""
        return self.start + (self.end - self.start) / 2


def find_time_window(message: str, now: datetime) -> TimeWindow | None:
    """The first time expression in ``message`` as a window relative to ``now``, or None."""
    text = " ".join(message.lower().split())
    today = now.astimezone(UTC).date()
    for finder in (_iso_date, _relative_day, _ago, _relative_span, _weekday, _month_name):
        found = finder(text, today)
        if found is not None:
            return found
    return None


def _window(first: date, last_exclusive: date, phrase: str) -> TimeWindow:
    return TimeWindow(_at(first), _at(last_exclusive), phrase)


def _at(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _iso_date(text: str, today: date) -> TimeWindow | None:
    match = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text)
    if match:
        try:
            day = date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            return None
        return _window(day, day + timedelta(days=1), match[0])
    match = re.search(r"\b(\d{4})-(\d{2})\b", text)
    if match and 1 <= int(match[2]) <= 12:
        first = date(int(match[1]), int(match[2]), 1)
        return _window(first, _next_month(first), match[0])
    return None


def _relative_day(text: str, today: date) -> TimeWindow | None:
    for phrase, offset in (
        ("day before yesterday", -2),
        ("yesterday", -1),
        ("today", 0),
        ("tonight", 0),
        ("this morning", 0),
        ("this evening", 0),
    ):
        if re.search(rf"\b{phrase}\b", text):
            day = today + timedelta(days=offset)
            return _window(day, day + timedelta(days=1), phrase)
    return None


def _ago(text: str, today: date) -> TimeWindow | None:
    match = re.search(
        r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)\s+"
        r"(day|week|month|year)s?\s+ago\b",
        text,
    )
    if not match:
        return None
    count = int(match[1]) if match[1].isdigit() else _NUMBERS[match[1]]
    unit = match[2]
    if unit == "day":
        day = today - timedelta(days=count)
        return _window(day, day + timedelta(days=1), match[0])
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=count)
        return _window(monday, monday + timedelta(weeks=1), match[0])
    if unit == "month":
        first = _add_months(today.replace(day=1), -count)
        return _window(first, _next_month(first), match[0])
    first = date(today.year - count, 1, 1)
    return _window(first, date(first.year + 1, 1, 1), match[0])


def _relative_span(text: str, today: date) -> TimeWindow | None:
    match = re.search(r"\b(last|this|past|previous)\s+(week|weekend|month|year)\b", text)
    if not match:
        match = re.search(r"\b(past|last)\s+(\d+)\s+(day|week)s\b", text)
        if match:
            days = int(match[2]) * (7 if match[3] == "week" else 1)
            return _window(today - timedelta(days=days), today + timedelta(days=1), match[0])
        return None
    which, unit = match[1], match[2]
    previous = which in ("last", "previous", "past")
    monday = today - timedelta(days=today.weekday())
    if unit == "week":
        start = monday - timedelta(weeks=1) if previous else monday
        return _window(start, start + timedelta(weeks=1), match[0])
    if unit == "weekend":
        saturday = monday + timedelta(days=5) - (timedelta(weeks=1) if previous else timedelta())
        if saturday > today and previous is False:
            saturday -= timedelta(weeks=1)
        return _window(saturday, saturday + timedelta(days=2), match[0])
    if unit == "month":
        first = today.replace(day=1)
        if previous:
            first = _add_months(first, -1)
        return _window(first, _next_month(first), match[0])
    year = today.year - 1 if previous else today.year
    return _window(date(year, 1, 1), date(year + 1, 1, 1), match[0])


def _weekday(text: str, today: date) -> TimeWindow | None:
    match = re.search(
        r"\b(?:(last|this|on)\s+)?(monday|tuesday|wednesday|thursday|friday|"
        r"saturday|sunday)\b",
        text,
    )
    if not match:
        return None
    target = _WEEKDAYS[match[2]]
    back = (today.weekday() - target) % 7
    if back == 0 and match[1] == "last":
        back = 7
    day = today - timedelta(days=back)
    return _window(day, day + timedelta(days=1), match[0])


def _month_name(text: str, today: date) -> TimeWindow | None:
    names = "|".join(sorted(_MONTHS, key=len, reverse=True))
    match = re.search(rf"\b(in|during|last|this|since)\s+({names})\b(?:\s+(\d{{4}}))?", text)
    if not match:
        match = re.search(rf"\b({names})\s+(\d{{4}})\b", text)
        if not match:
            return None
        month, year = _MONTHS[match[1]], int(match[2])
        first = date(year, month, 1)
        return _window(first, _next_month(first), match[0])
    month = _MONTHS[match[2]]
    if match[3]:
        year = int(match[3])
    else:
        # The most recent such month that has begun: "in August" said in March means last year.
        year = today.year if month <= today.month else today.year - 1
        if match[1] == "last" and month == today.month:
            year -= 1
    first = date(year, month, 1)
    return _window(first, _next_month(first), match[0])


def _next_month(first: date) -> date:
    return _add_months(first, 1)


def _add_months(first: date, months: int) -> date:
    index = first.year * 12 + (first.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)
