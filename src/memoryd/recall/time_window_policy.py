"""Time expressions in a message → a window of time (pure).

Explicit dates win: "on 16 June, 2023", "April 10, 2023", "in August 2023", "in 2022", "on
2026-08-27", phrases anchored on them ("the weekend before April 10, 2023", "two weeks
after 3 May 2023"), and dates that end or open a span ("until April 9", "by 7 November, 2022",
"since 3 May"). Without one, relative phrases count from now: "yesterday", "last week",
"in August", "3 days ago", "last Monday", "next Saturday" (a day to come), … A weekday that
recurs ("every Tuesday", "on Tuesday and Thursday mornings") names no window. Days are the
owner's: windows are computed in the time zone passed in (UTC by default). Weeks start on
Monday. Windows are half-open: start ≤ t < end.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): n for n, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_WEEKDAYS = {name.lower(): n for n, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3,
}  # fmt: skip
_COUNT = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)"
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(_WEEKDAYS)
# A day and month without a year count only after one of these, or with an ordinal ("3rd"):
# "I may 5 times …" is not the fifth of May.
_DAY_LEAD = re.compile(r"\b(on|by|since|until|till|from|to|before|after|the|of|between|and)\s+$")
_YEAR_DIGITS = r"(?:19|20)\d\d"
_YEAR = rf"({_YEAR_DIGITS})"
# A date after one of these ends or opens a span of time, not a day: "until April 9", "by 7
# November, 2022", "as of May 2023" (up to it, its last day included), "before 3 May" (up to
# it), "since 3 May", "after 3 May" (from it, or the day after, to today).
_SPAN_EDGE = re.compile(r"\b(until|till|by|as of|up to|before|since|after)\s+(?:the\s+)?$")
# Where a span with no start begins: a day after the calendar's first, so that the window's
# start stays a valid instant in any time zone.
_EARLIEST = date.min + timedelta(days=1)
# A weekday said with these recurs ("every Tuesday", "on Tuesday and Thursday mornings"): a
# habit or a schedule, not one day.
_EVERY = ("every", "each")
_PARTS_OF_DAY = r"(?:mornings|afternoons|evenings|nights)"


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
        """The centre of the window."""
        return self.start + (self.end - self.start) / 2

    @property
    def open_start(self) -> bool:
        """Whether the window is a span with no start ("until April 9": all before it)."""
        return self.start.date() <= _EARLIEST

    @property
    def focus(self) -> datetime:
        """The instant events are ranked by closeness to: the centre, or the end of a span
        with no start ("until April 9", "as of May 2023": the last days before it say most
        of how things stood)."""
        return self.end if self.open_start else self.middle


@dataclass(frozen=True)
class _Span:
    """Days [first, after) named by a phrase found at text[begin:end]."""

    first: date
    after: date
    begin: int
    end: int


def find_time_window(message: str, now: datetime, zone: tzinfo = UTC) -> TimeWindow | None:
    """The time the message names, as a window in ``zone``, or None.

    An explicit date anywhere in the message takes precedence over relative phrases; a phrase
    attached to it ("the weekend before …") is read relative to that date, not to now."""
    text = " ".join(message.lower().split())
    today = now.astimezone(zone).date()
    explicit = _explicit_date(text, today)
    if explicit is not None:
        span = (
            _between(text, explicit, today)
            or _anchored(text, explicit)
            or _span_edge(text, explicit, today)
            or explicit
        )
        return _window(span, text, zone)
    for finder in (_relative_day, _ago, _relative_span, _weekday, _month_name):
        found = finder(text, today)
        if found is not None:
            return _window(found, text, zone)
    return None


def _window(span: _Span, text: str, zone: tzinfo) -> TimeWindow:
    return TimeWindow(_at(span.first, zone), _at(span.after, zone), text[span.begin : span.end])


def _at(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone)


# ------------------------------------------------------------------------------ explicit dates


def _explicit_date(text: str, today: date) -> _Span | None:
    """The first explicit date in the text: a day, a month of a year, or a year."""
    found: list[_Span] = []
    for finder in (_iso_date, _day_and_month, _month_year, _year):
        try:
            span = finder(text, today)
        except OverflowError:  # a date at the calendar's end (9999-12-31) has no day after it
            continue
        if span is not None:
            found.append(span)
    if not found:
        return None
    # The earliest in the text; at one position, the most specific (shortest span of days).
    return min(found, key=lambda s: (s.begin, (s.after - s.first).days))


def _iso_date(text: str, today: date) -> _Span | None:
    for match in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        day = _date(int(match[1]), int(match[2]), int(match[3]))
        if day is not None:
            return _Span(day, day + timedelta(days=1), match.start(), match.end())
    for match in re.finditer(r"\b(\d{4})-(\d{2})\b(?!-)", text):
        if 1 <= int(match[2]) <= 12 and int(match[1]) >= 1000:
            first = date(int(match[1]), int(match[2]), 1)
            return _Span(first, _next_month(first), match.start(), match.end())
    return None


# A day and a month, either way round, with an optional year: "16 June, 2023", "8th December
# 2023", "10th of April", "April 10, 2023", "October 13th 2023", "Sept. 3".
_DAY_FIRST = rf"\b(?P<day>\d{{1,2}})(?P<ord>st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH})\b\.?"
_MONTH_FIRST = rf"\b(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}})(?P<ord>st|nd|rd|th)?\b"
_THEN_YEAR = rf"(?:,?\s+(?P<year>{_YEAR_DIGITS})\b)?"


def _day_and_month(text: str, today: date) -> _Span | None:
    """The first day-and-month date in the text, in either order (see ``_DAY_FIRST``)."""
    found: list[_Span] = []
    for pattern in (_DAY_FIRST + _THEN_YEAR, _MONTH_FIRST + _THEN_YEAR):
        for match in re.finditer(pattern, text):
            if not _dated(text, match, ordinal=match["ord"], year=match["year"]):
                continue
            span = _day_span(
                int(match["day"]), _MONTHS[match["month"]], match["year"], today, match
            )
            if span is not None:
                found.append(span)
                break
    return min(found, key=lambda s: s.begin) if found else None


def _dated(text: str, match: re.Match[str], *, ordinal: str | None, year: str | None) -> bool:
    """Whether a day-and-month match is really a date (see ``_DAY_LEAD``)."""
    return bool(year or ordinal or _DAY_LEAD.search(text[: match.start()]))


def _day_span(
    day: int, month: int, year_text: str | None, today: date, match: re.Match[str]
) -> _Span | None:
    if year_text is not None:
        found = _date(int(year_text), month, day)
    else:
        # Without a year: the most recent such day, today included.
        found = _date(today.year, month, day)
        if found is not None and found > today:
            found = _date(today.year - 1, month, day)
    if found is None:
        return None
    return _Span(found, found + timedelta(days=1), match.start(), match.end())


def _month_year(text: str, today: date) -> _Span | None:
    """ "August 2023", "in May, 2022"."""
    match = re.search(rf"\b({_MONTH})\.?,?\s+{_YEAR}\b", text)
    if match is None:
        return None
    first = date(int(match[2]), _MONTHS[match[1]], 1)
    return _Span(first, _next_month(first), match.start(), match.end())


def _year(text: str, today: date) -> _Span | None:
    """ "in 2022", "during 2023", "since 2021" (to now), "as of 2022" (up to its end): a bare
    number is not a year."""
    match = re.search(rf"\b(in|during|since|as of|of)\s+{_YEAR}\b(?!\s*(?:-|%|percent))", text)
    if match is None:
        return None
    first = date(int(match[2]), 1, 1)
    if match[1] == "since":
        return _Span(first, max(today + timedelta(days=1), first), match.start(), match.end())
    if match[1] == "as of":
        return _Span(_EARLIEST, date(first.year + 1, 1, 1), match.start(), match.end())
    return _Span(first, date(first.year + 1, 1, 1), match.start(), match.end())


def _between(text: str, first: _Span, today: date) -> _Span | None:
    """ "between August 11 and August 15 2023", "from 3 May to 9 May 2023": both ends
    included. The first date may borrow the second's year."""
    lead = re.search(r"\b(between|from)\s+$", text[: first.begin])
    joint = re.match(r"\s*(?:and|to|until|till|-|–)\s+", text[first.end :])
    if lead is None or joint is None:
        return None
    rest = text[first.end + joint.end() :]
    second = _explicit_date(rest, today)
    if second is None or second.begin != 0:
        return None
    offset = first.end + joint.end()
    start = first.first
    if start >= second.after and not re.search(r"\d{4}", text[first.begin : first.end]):
        # "August 11 and August 15 2023": the first date read without a year was last year's.
        start = _date(second.first.year, start.month, start.day) or start
    if start >= second.after:
        return None
    return _Span(start, second.after, lead.start(), offset + second.end)


def _anchored(text: str, anchor: _Span) -> _Span | None:
    """A phrase attached before an explicit date: "the weekend before April 10, 2023",
    "two weeks before …", "the Monday after …", "the day before …"."""
    before = text[: anchor.begin]
    match = re.search(
        rf"(?:\bthe\s+)?(?:\b{_COUNT}\s+)?\b(day|days|week|weeks|weekend|month|months|"
        rf"{_WEEKDAY})\s+(before|after|prior to|following)\s+(?:on\s+)?(?:(?:{_WEEKDAY}),?\s+)?$",
        before,
    )
    if match is None:
        return None
    count = 1 if match[1] is None else _count(match[1])
    unit, direction = match[2], match[3]
    backwards = direction in ("before", "prior to")
    reference = anchor.first if backwards else anchor.after - timedelta(days=1)
    step = -1 if backwards else 1
    if unit in _WEEKDAYS:
        day = reference + timedelta(days=step)
        while day.weekday() != _WEEKDAYS[unit]:
            day += timedelta(days=step)
        return _Span(day, day + timedelta(days=1), match.start(), anchor.end)
    if unit.startswith("day"):
        day = reference + timedelta(days=step * count)
        return _Span(day, day + timedelta(days=1), match.start(), anchor.end)
    if unit == "weekend":
        # The Saturday and Sunday wholly before (or after) the reference day: walk to the
        # nearest Sunday before it (or Saturday after it).
        edge = reference + timedelta(days=step)
        while edge.weekday() != (6 if backwards else 5):
            edge += timedelta(days=step)
        saturday = edge - timedelta(days=1) if backwards else edge
        return _Span(saturday, saturday + timedelta(days=2), match.start(), anchor.end)
    if unit.startswith("week"):
        monday = reference - timedelta(days=reference.weekday()) + timedelta(weeks=step * count)
        return _Span(monday, monday + timedelta(weeks=1), match.start(), anchor.end)
    first = _add_months(reference.replace(day=1), step * count)
    return _Span(first, _next_month(first), match.start(), anchor.end)


def _span_edge(text: str, edge: _Span, today: date) -> _Span | None:
    """A date that ends or opens a span (see ``_SPAN_EDGE``): "until April 9" asks about
    everything up to that day, not about what happened on it."""
    match = _SPAN_EDGE.search(text[: edge.begin])
    if match is None:
        return None
    word = match[1]
    if word in ("since", "after"):
        first = edge.first if word == "since" else edge.after
        return _Span(first, max(today + timedelta(days=1), first), match.start(), edge.end)
    last = edge.first if word == "before" else edge.after
    return _Span(_EARLIEST, last, match.start(), edge.end)


# ---------------------------------------------------------------------------- relative phrases


def _relative_day(text: str, today: date) -> _Span | None:
    for phrase, offset in (
        ("day before yesterday", -2),
        ("yesterday", -1),
        ("today", 0),
        ("tonight", 0),
        ("this morning", 0),
        ("this evening", 0),
    ):
        match = re.search(rf"\b{phrase}\b", text)
        if match:
            day = today + timedelta(days=offset)
            return _Span(day, day + timedelta(days=1), match.start(), match.end())
    return None


def _ago(text: str, today: date) -> _Span | None:
    match = re.search(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", text)
    if not match:
        return None
    count = _count(match[1])
    unit = match[2]
    if unit == "day":
        day = today - timedelta(days=count)
        return _Span(day, day + timedelta(days=1), match.start(), match.end())
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=count)
        return _Span(monday, monday + timedelta(weeks=1), match.start(), match.end())
    if unit == "month":
        first = _add_months(today.replace(day=1), -count)
        return _Span(first, _next_month(first), match.start(), match.end())
    first = date(today.year - count, 1, 1)
    return _Span(first, date(first.year + 1, 1, 1), match.start(), match.end())


def _relative_span(text: str, today: date) -> _Span | None:
    match = re.search(r"\b(last|this|past|previous)\s+(week|weekend|month|year)\b", text)
    if not match:
        match = re.search(r"\b(past|last)\s+(\d+)\s+(day|week)s\b", text)
        if match:
            days = int(match[2]) * (7 if match[3] == "week" else 1)
            return _Span(
                today - timedelta(days=days), today + timedelta(days=1), match.start(), match.end()
            )
        return None
    which, unit = match[1], match[2]
    previous = which in ("last", "previous", "past")
    monday = today - timedelta(days=today.weekday())
    if unit == "week":
        start = monday - timedelta(weeks=1) if previous else monday
        return _Span(start, start + timedelta(weeks=1), match.start(), match.end())
    if unit == "weekend":
        saturday = monday + timedelta(days=5) - (timedelta(weeks=1) if previous else timedelta())
        if saturday > today and previous is False:
            saturday -= timedelta(weeks=1)
        return _Span(saturday, saturday + timedelta(days=2), match.start(), match.end())
    if unit == "month":
        first = today.replace(day=1)
        if previous:
            first = _add_months(first, -1)
        return _Span(first, _next_month(first), match.start(), match.end())
    year = today.year - 1 if previous else today.year
    return _Span(date(year, 1, 1), date(year + 1, 1, 1), match.start(), match.end())


def _weekday(text: str, today: date) -> _Span | None:
    """ "last Monday", "on Friday" (the most recent, today included), "next Saturday" (the
    first to come); a weekday that recurs (see ``_EVERY``) is skipped."""
    run = rf"(?:{_WEEKDAY})(?:\s*(?:,|\band\b|\bor\b)\s*(?:{_WEEKDAY}))*"
    pattern = (
        rf"\b(?:(last|this|on|next|every|each)\s+(?:other\s+)?)?({run})\b(\s+{_PARTS_OF_DAY}\b)?"
    )
    for match in re.finditer(pattern, text):
        if match[1] in _EVERY or match[3]:
            continue
        first = re.match(_WEEKDAY, match[2])
        assert first is not None
        target = _WEEKDAYS[first[0]]
        if match[1] == "next":
            day = today + timedelta(days=(target - today.weekday()) % 7 or 7)
        else:
            back = (today.weekday() - target) % 7
            if back == 0 and match[1] == "last":
                back = 7
            day = today - timedelta(days=back)
        end = match.start(2) + first.end()
        return _Span(day, day + timedelta(days=1), match.start(), end)
    return None


def _month_name(text: str, today: date) -> _Span | None:
    match = re.search(rf"\b(in|during|last|this|since)\s+({_MONTH})\b", text)
    if not match:
        return None
    month = _MONTHS[match[2]]
    # The most recent such month that has begun: "in August" said in March means last year.
    year = today.year if month <= today.month else today.year - 1
    if match[1] == "last" and month == today.month:
        year -= 1
    first = date(year, month, 1)
    return _Span(first, _next_month(first), match.start(), match.end())


# --------------------------------------------------------------------------------- arithmetic


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _next_month(first: date) -> date:
    return _add_months(first, 1)


def _add_months(first: date, months: int) -> date:
    index = first.year * 12 + (first.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)
