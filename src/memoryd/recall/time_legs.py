"""The time leg (SPEC §4; extended in docs/recall.md, "Days a memory names"): the events that
happened inside the message's time window, closest to its focus first, and before them the
memories whose text names one of its days ("Booked a check-up on November 15", made on the
2nd, for "What did I have on November 15?"), in figures ("Tax office 24/11") or from the day
it was written ("Dinner at Rui's tomorrow", made on the 9th, for "What's on for the 10th?")."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from memoryd.memory.model import Kind, Memory
from memoryd.recall.dates_policy import day_phrases, names_day_within, numeric_phrases
from memoryd.recall.day_words_policy import (
    LONGEST_AHEAD,
    ordinal_phrases,
    relative_day_within,
    week_within,
    weekday_phrases,
)
from memoryd.recall.time_window_policy import TimeWindow
from memoryd.storage.protocols import PhrasesWritten, Store

# How a memory's text is read for a day in [first, after), given the day it was written.
Reading = Callable[[str, date, date, date], date | None]
# "The 15th" names a day up to this far after it was written (the 31st, over a short month).
_MONTH_DAY_AHEAD = 62


@dataclass(frozen=True)
class WindowLeg:
    """The time leg's ranking, the memories in it that only name a day of the window, and how
    many events happened inside it (the named ones are not among them: a window that holds no
    event of its own bounds nothing)."""

    ranked: tuple[str, ...] = ()
    named: tuple[str, ...] = ()
    events: int = 0
    # The memories read to find the named ones, by id (the candidates' read reuses them).
    read: Mapping[str, Memory] = field(default_factory=dict)


def window_leg(
    store: Store, window: TimeWindow, depth: int, longest: int, kinds: Sequence[Kind] = ()
) -> WindowLeg:
    """The memories naming a day of the window (for a window of at most ``longest`` days),
    then the events inside it, ``depth`` in all."""
    inside = time_leg(store, window, depth)
    named, weeks, read = named_day_leg(store, window, depth, longest, set(inside), kinds)
    ranked = [*named, *inside, *weeks][:depth]
    return WindowLeg(tuple(ranked), tuple(named + weeks), len(inside), read)


def time_leg(store: Store, window: TimeWindow, depth: int) -> list[str]:
    """Active events inside the window, closest to its focus first (its middle, or the end of
    a span with no start: ``TimeWindow.focus``). Their times are read
    and ranked; the rows kept are read with the other candidates'."""
    focus = window.focus
    events = store.memories.event_times_between(window.start, window.end, max(depth * 4, depth))
    events.sort(key=lambda event: abs((event[1] - focus).total_seconds()))
    return [memory_id for memory_id, _ in events[:depth]]


def named_day_leg(
    store: Store,
    window: TimeWindow,
    depth: int,
    longest: int,
    inside: Collection[str] = (),
    kinds: Sequence[Kind] = (),
) -> tuple[list[str], list[str], dict[str, Memory]]:
    """Active memories whose text names a day inside the window ("my appointment is on March
    15", whenever it was written), closest to its focus first; those that name only a week or
    a weekend the window's days are in ("dentist next week": day_words_policy.week_within),
    nearest first, for the leg to rank after the window's own events; and the memories read to
    find them. None for a window of more than ``longest`` days or with no start. The text index
    finds those holding a day's written forms ("march 15", "15th of march", "15/3", "15.3."),
    and those written in the days around the window that hold a word naming a day from the
    day they were written ("tomorrow", "on friday", "the 15th": :func:`written_near`); each
    one's text is then read for the days it names (dates_policy.names_day_within, or
    day_words_policy.relative_day_within for those found by such a word alone). The window's
    own events (``inside``) are not read again."""
    first, after = window.start.date(), window.end.date()
    if window.open_start or not 0 < (after - first).days <= longest:
        return [], [], {}
    # Each way of naming a day has its own limit: figures ("11/20") the SQLite index cannot
    # tell from a time ("11:20"), and a store's newest "11:20"s must not crowd "november 20" out.
    # A memory is read for what it was found by: its words naming a day from the day it was
    # written, or days written out (a text holding both is found by both).
    found: dict[str, set[Reading]] = {}
    for ids, reading in (
        (store.text.holding(day_phrases(first, after), depth, kinds), names_day_within),
        (store.text.holding(numeric_phrases(first, after), depth, kinds), names_day_within),
        (store.text.holding_written(written_near(window), depth, kinds), relative_day_within),
    ):
        for memory_id in ids:
            if memory_id not in inside:
                found.setdefault(memory_id, set()).add(reading)
    memories = store.memories.get_many(list(found))
    zone = window.start.tzinfo
    named: list[tuple[float, str]] = []
    weeks: list[tuple[float, str]] = []
    for memory_id, readings in found.items():
        memory = memories.get(memory_id)
        if memory is None:
            continue
        written = (memory.occurred_at or memory.created_at).astimezone(zone).date()
        days = [read(memory.content, written, first, after) for read in readings]
        day = min((d for d in days if d is not None), default=None)
        week = None if day is not None else week_within(memory.content, written, first, after)
        at = day if day is not None else week
        if at is not None:
            middle = datetime.combine(at, datetime.min.time(), tzinfo=zone) + timedelta(hours=12)
            distance = abs((middle - window.focus).total_seconds())
            (named if day is not None else weeks).append((distance, memory.id))
    named.sort(key=lambda pair: pair[0])
    weeks.sort(key=lambda pair: pair[0])
    return [i for _, i in named], [i for _, i in weeks], memories


def written_near(window: TimeWindow) -> list[PhrasesWritten]:
    """The words that name a day of the window from the day they were written, each with the
    days a memory holding it must have been written in (its time, not its text, bounds it):
    "tomorrow" the day or two before ("the day after tomorrow"), "today" and "tonight" on
    it, "yesterday" the day or two after, a weekday's name the week before or after ("on
    Friday", "last Friday"; for a window shorter than a week), "days" the fortnight before
    ("in two days"), "the 15th" the two months before."""
    start, end = window.start, window.end
    first, after = start.date(), end.date()
    today = ("today", "tonight", "this morning", "this afternoon", "this evening")
    # Asked about a whole week, every weekday's name is in it: the fortnight's memories naming
    # any weekday, read for little (a week's window reads the week's own events already).
    weekdays = weekday_phrases(first, after) if (after - first).days < 7 else []
    return [
        PhrasesWritten(("tomorrow",), _moved(start, -2), _moved(end, -1)),
        PhrasesWritten(today, start, end),
        PhrasesWritten(("yesterday",), _moved(start, 1), _moved(end, 2)),
        PhrasesWritten(tuple(weekdays), _moved(start, -7), _moved(end, 7)),
        PhrasesWritten(("days",), _moved(start, -LONGEST_AHEAD), _moved(end, -1)),
        PhrasesWritten(("this week", "this weekend"), _moved(start, -7), _moved(end, 7)),
        PhrasesWritten(("next week", "next weekend"), _moved(start, -14), end),
        PhrasesWritten(("last week", "last weekend"), start, _moved(end, 14)),
        PhrasesWritten(tuple(ordinal_phrases(first, after)), _moved(start, -_MONTH_DAY_AHEAD), end),
    ]


def _moved(instant: datetime, days: int) -> datetime:
    """``instant`` moved by ``days``, stopping at the calendar's first or last day."""
    try:
        return instant + timedelta(days=days)
    except OverflowError:
        # In UTC, where the stores keep their times: the edge in another zone is past them.
        return (datetime.min if days < 0 else datetime.max).replace(tzinfo=UTC)
