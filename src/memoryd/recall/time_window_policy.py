"""Time expressions in a message → a window of time (pure).

Explicit dates win: "on 16 June, 2023", "April 10, 2023", "in August 2023", "in 2022", "on
2026-08-27", phrases anchored on them ("the weekend before April 10, 2023", "two weeks
after 3 May 2023"), and dates that end or open a span ("until April 9", "by 7 November, 2022",
"since 3 May"). Without one, relative phrases count from now: "yesterday", "last week",
"in August", "3 days ago", "last Monday", "next Saturday" (a day to come), "next week", "this
weekend" (in a message about what is to come, the weekend of this week), … A weekday that
recurs ("every Tuesday", "on Tuesday and Thursday mornings") names no window. Days are the
owner's: windows are computed in the time zone passed in (UTC by default). Weeks start on
Monday. Windows are half-open: start ≤ t < end.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, UTC, date, datetime, time, timedelta, tzinfo
from functools import partial

from memoryd.recall.dates_policy import (
    EARLIEST,
    MONTHS,
    DaySpan,
    add_months,
    explicit_date,
    next_month,
    valid_date,
)
from memoryd.recall.day_words_policy import WEEKDAYS, month_days

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3,
}  # fmt: skip
_COUNT = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)"
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(WEEKDAYS)
# A date after one of these ends or opens a span of time, not a day: "until April 9", "by 7
# November, 2022", "as of May 2023" (up to it, its last day included), "before 3 May" (up to
# it), "since 3 May", "after 3 May" (from it, or the day after, to today).
_SPAN_EDGE = re.compile(r"\b(until|till|by|as of|up to|before|since|after)\s+(?:the\s+)?$")
# A message with one of these speaks of what is to come, or of a plan: a day it names without a
# year is the nearest such day, not the most recent ("What's on for March 15?" asked on 10 March
# is this year's; "What did I plan for March 15?" asked on 20 March too). So does one asked in
# the present of a day ("What's happening on the 18th?", "Anything on Tuesday?", "Am I free this
# weekend?"), never in its past ("What was happening on the 18th?").
_AHEAD = re.compile(
    r"\b(?:will|shall|going to|gonna|plan|plans|planned|planning|scheduled|booked|upcoming|"
    r"coming|due|what's on|what is on|do i have|do we have|have i got|have we got)\b|'ll\b"
    r"|(?<!\bwas )(?<!\bwere )\bhappening\b|(?:^|\bis there |\bthere's )anything on\b"
    r"|\b(?:am i|are we|are you) (?:free|busy|doing|going|off|working)\b"
)
# Days listed one after another make one window, if they are at most this far apart (a run of
# days is read up to 62 days long, dates_policy).
_LISTED_DAYS = timedelta(days=62)
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
        return self.start.date() <= EARLIEST

    @property
    def focus(self) -> datetime:
        """The instant events are ranked by closeness to: the centre, or the end of a span
        with no start ("until April 9", "as of May 2023": the last days before it say most
        of how things stood)."""
        return self.end if self.open_start else self.middle


def find_time_window(message: str, now: datetime, zone: tzinfo = UTC) -> TimeWindow | None:
    """The time the message names, as a window in ``zone``, or None.

    An explicit date anywhere in the message takes precedence over relative phrases; a phrase
    attached to it ("the weekend before …") is read relative to that date, not to now."""
    text = " ".join(message.lower().split())
    today = now.astimezone(zone).date()
    nearest = _AHEAD.search(text) is not None
    explicit = explicit_date(text, today, nearest=nearest)
    if explicit is not None:
        try:
            span = (
                _between(text, explicit, today)
                or _listed(text, explicit, today, nearest)
                or _anchored(text, explicit)
                or _span_edge(text, explicit, today)
                or explicit
            )
        except _OFF_THE_CALENDAR:  # "99999 days before April 10, 2023": the date alone
            span = explicit
        return _window(span, text, zone)
    finders: tuple[Callable[[str, date], DaySpan | None], ...] = (
        partial(_month_day, ahead=nearest),
        _relative_day,
        _ago,
        partial(_relative_span, ahead=nearest),
        partial(_weekday, ahead=nearest),
        _month_name,
    )
    for finder in finders:
        try:
            found = finder(text, today)
            if found is not None:
                return _window(found, text, zone)
        except _OFF_THE_CALENDAR:  # "3000 years ago": a day before year 1 names no window
            continue
    return None


# A day before the calendar's first or after its last: timedelta arithmetic overflows, a
# date built from a year out of 1–9999 is a ValueError.
_OFF_THE_CALENDAR = (OverflowError, ValueError)


def _window(span: DaySpan, text: str, zone: tzinfo) -> TimeWindow:
    return TimeWindow(_at(span.first, zone), _at(span.after, zone), text[span.begin : span.end])


def _at(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone)


# ------------------------------------------------------------------------------ explicit dates


def _between(text: str, first: DaySpan, today: date) -> DaySpan | None:
    """ "between August 11 and August 15 2023", "from 3 May to 9 May 2023": both ends
    included. The first date may borrow the second's year."""
    lead = re.search(r"\b(between|from)\s+$", text[: first.begin])
    if lead is None:
        return None
    joint = re.match(r"\s*(?:and|to|until|till|-|–)\s+", text[first.end :])
    if joint is None:  # a run of days read whole ("between April 6 and 9"): its lead joins it
        return DaySpan(first.first, first.after, lead.start(), first.end)
    offset = first.end + joint.end()
    # Read in the whole text, so that the joint word leads the second date as it would a day.
    second = explicit_date(text, today, since=offset)
    if second is None or second.begin != offset:
        return None
    start = first.first
    if start >= second.after and not re.search(r"\d{4}", text[first.begin : first.end]):
        # "August 11 and August 15 2023": the first date read without a year was last year's.
        start = valid_date(second.first.year, start.month, start.day) or start
    if start >= second.after:
        return None
    return DaySpan(start, second.after, lead.start(), second.end)


def _listed(text: str, first: DaySpan, today: date, nearest: bool) -> DaySpan | None:
    """Dates listed one after another ("for April 6-7 and April 8", "on May 3, May 5 and May
    9"): the days from the first to the last, when the last ends at most ``_LISTED_DAYS``
    after the first begins."""
    last = first
    while joint := re.match(r"(?:\s*,)?\s+(?:and|or|&)\s+|\s*,\s*", text[last.end :]):
        found = explicit_date(text, today, last.end + joint.end(), nearest=nearest)
        if found is None or found.begin != last.end + joint.end():
            break
        last = found
    if last is first or not first.first < last.after <= first.first + _LISTED_DAYS:
        return None
    return DaySpan(first.first, last.after, first.begin, last.end)


def _anchored(text: str, anchor: DaySpan) -> DaySpan | None:
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
    if unit in WEEKDAYS:
        day = reference + timedelta(days=step)
        while day.weekday() != WEEKDAYS[unit]:
            day += timedelta(days=step)
        return DaySpan(day, day + timedelta(days=1), match.start(), anchor.end)
    if unit.startswith("day"):
        day = reference + timedelta(days=step * count)
        return DaySpan(day, day + timedelta(days=1), match.start(), anchor.end)
    if unit == "weekend":
        # The Saturday and Sunday wholly before (or after) the reference day: walk to the
        # nearest Sunday before it (or Saturday after it).
        edge = reference + timedelta(days=step)
        while edge.weekday() != (6 if backwards else 5):
            edge += timedelta(days=step)
        saturday = edge - timedelta(days=1) if backwards else edge
        return DaySpan(saturday, saturday + timedelta(days=2), match.start(), anchor.end)
    if unit.startswith("week"):
        monday = reference - timedelta(days=reference.weekday()) + timedelta(weeks=step * count)
        return DaySpan(monday, monday + timedelta(weeks=1), match.start(), anchor.end)
    first = add_months(reference.replace(day=1), step * count)
    return DaySpan(first, next_month(first), match.start(), anchor.end)


def _span_edge(text: str, edge: DaySpan, today: date) -> DaySpan | None:
    """A date that ends or opens a span (see ``_SPAN_EDGE``): "until April 9" asks about
    everything up to that day, not about what happened on it."""
    match = _SPAN_EDGE.search(text[: edge.begin])
    if match is None:
        return None
    word = match[1]
    if word in ("since", "after"):
        first = edge.first if word == "since" else edge.after
        return DaySpan(first, max(today + timedelta(days=1), first), match.start(), edge.end)
    last = edge.first if word == "before" else edge.after
    return DaySpan(EARLIEST, last, match.start(), edge.end)


# ---------------------------------------------------------------------------- relative phrases


def _relative_day(text: str, today: date) -> DaySpan | None:
    for phrase, offset in (
        ("day before yesterday", -2),
        ("day after tomorrow", 2),
        ("yesterday", -1),
        ("tomorrow", 1),
        ("today", 0),
        ("tonight", 0),
        ("this morning", 0),
        ("this evening", 0),
    ):
        match = re.search(rf"\b{phrase}\b", text)
        if match:
            day = today + timedelta(days=offset)
            return DaySpan(day, day + timedelta(days=1), match.start(), match.end())
    return None


def _ago(text: str, today: date) -> DaySpan | None:
    match = re.search(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", text)
    if not match:
        return None
    count = _count(match[1])
    unit = match[2]
    if unit == "day":
        day = today - timedelta(days=count)
        return DaySpan(day, day + timedelta(days=1), match.start(), match.end())
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=count)
        return DaySpan(monday, monday + timedelta(weeks=1), match.start(), match.end())
    if unit == "month":
        first = add_months(today.replace(day=1), -count)
        return DaySpan(first, next_month(first), match.start(), match.end())
    first = date(today.year - count, 1, 1)
    return DaySpan(first, date(first.year + 1, 1, 1), match.start(), match.end())


def _relative_span(text: str, today: date, *, ahead: bool = False) -> DaySpan | None:
    """ "last week", "this month", "the past 3 days", "next week" (Monday to Sunday after this
    one), "next weekend" (that week's Saturday and Sunday). "This weekend" is the most recent
    one begun, or in a message about what is to come (``ahead``) this week's. Not "next month"
    or "next year": no event has happened in them yet, and a memory's text is read for days
    and weeks, not months (a question quoting a plan, "the trip next month", keeps no window)."""
    match = re.search(
        r"\b(last|this|past|previous)\s+(week|weekend|month|year)\b|\b(next)\s+(week|weekend)\b",
        text,
    )
    if not match:
        match = re.search(r"\b(past|last)\s+(\d+)\s+(day|week)s\b", text)
        if match:
            days = int(match[2]) * (7 if match[3] == "week" else 1)
            return DaySpan(
                today - timedelta(days=days), today + timedelta(days=1), match.start(), match.end()
            )
        return None
    which, unit = match[1] or match[3], match[2] or match[4]
    step = {"last": -1, "previous": -1, "past": -1, "this": 0, "next": 1}[which]
    monday = today - timedelta(days=today.weekday())
    if unit == "week":
        start = monday + timedelta(weeks=step)
        return DaySpan(start, start + timedelta(weeks=1), match.start(), match.end())
    if unit == "weekend":
        saturday = monday + timedelta(days=5) + timedelta(weeks=step)
        if saturday > today and step == 0 and not ahead:
            saturday -= timedelta(weeks=1)
        return DaySpan(saturday, saturday + timedelta(days=2), match.start(), match.end())
    if unit == "month":
        index = today.year * 12 + today.month - 1 + step
        if not MINYEAR * 12 <= index < MAXYEAR * 12 + 11:
            return None  # a month past the calendar's ends (or with no month after it)
        first = add_months(today.replace(day=1), step)
        return DaySpan(first, next_month(first), match.start(), match.end())
    year = today.year + step
    if not MINYEAR <= year < MAXYEAR:
        return None
    return DaySpan(date(year, 1, 1), date(year + 1, 1, 1), match.start(), match.end())


def _month_day(text: str, today: date, *, ahead: bool) -> DaySpan | None:
    """ "the 15th": the coming one in a message about what is to come (``ahead``), else the
    most recent, today included either way (day_words_policy.month_days)."""
    return next(month_days(text, today, ahead=ahead), None)


def _weekday(text: str, today: date, *, ahead: bool = False) -> DaySpan | None:
    """ "last Monday", "on Friday" (the most recent, today included, or in a message about
    what is to come, ``ahead``, the coming one, today included: "what do I have on Friday?"),
    "next Saturday" (the first to come); a weekday that recurs (see ``_EVERY``) is skipped."""
    run = rf"(?:{_WEEKDAY})(?:\s*(?:,|\band\b|\bor\b)\s*(?:{_WEEKDAY}))*"
    pattern = (
        rf"\b(?:(last|this|on|next|every|each)\s+(?:other\s+)?)?({run})\b(\s+{_PARTS_OF_DAY}\b)?"
    )
    for match in re.finditer(pattern, text):
        if match[1] in _EVERY or match[3]:
            continue
        first = re.match(_WEEKDAY, match[2])
        assert first is not None
        target = WEEKDAYS[first[0]]
        if match[1] == "next":
            day = today + timedelta(days=(target - today.weekday()) % 7 or 7)
        elif ahead and match[1] != "last":
            day = today + timedelta(days=(target - today.weekday()) % 7)
        else:
            back = (today.weekday() - target) % 7
            if back == 0 and match[1] == "last":
                back = 7
            day = today - timedelta(days=back)
        end = match.start(2) + first.end()
        return DaySpan(day, day + timedelta(days=1), match.start(), end)
    return None


def _month_name(text: str, today: date) -> DaySpan | None:
    match = re.search(rf"\b(in|during|last|this|since)\s+({_MONTH})\b", text)
    if not match:
        return None
    month = MONTHS[match[2]]
    # The most recent such month that has begun: "in August" said in March means last year.
    year = today.year if month <= today.month else today.year - 1
    if match[1] == "last" and month == today.month:
        year -= 1
    first = date(year, month, 1)
    return DaySpan(first, next_month(first), match.start(), match.end())


# --------------------------------------------------------------------------------- arithmetic


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]
