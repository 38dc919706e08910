"""The time leg (SPEC §4; extended in docs/recall.md, "Days a memory names"): the events that
happened inside the message's time window, closest to its focus first, and before them the
memories whose text names one of its days ("Booked a check-up on November 15", made on the
2nd, for "What did I have on November 15?")."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memoryd.memory.model import Kind, Memory
from memoryd.recall.dates_policy import day_phrases, names_day_within
from memoryd.recall.time_window_policy import TimeWindow
from memoryd.storage.protocols import Store


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
    named, read = named_day_leg(store, window, depth, longest, set(inside), kinds)
    return WindowLeg(tuple([*named, *inside][:depth]), tuple(named), len(inside), read)


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
) -> tuple[list[str], dict[str, Memory]]:
    """Active memories whose text names a day inside the window ("my appointment is on March
    15", whenever it was written), closest to its focus first, and the memories read to find
    them; none for a window of more than ``longest`` days or with no start. The text index
    finds those holding a day's written forms ("march 15", "15th of march"); each one's text is
    then read for the dates it names, a date without a year being the one nearest the day it
    was written (dates_policy.named_days). The window's own events (``inside``) are not read
    again."""
    first, after = window.start.date(), window.end.date()
    if window.open_start or not 0 < (after - first).days <= longest:
        return [], {}
    held = [
        i for i in store.text.holding(day_phrases(first, after), depth, kinds) if i not in inside
    ]
    memories = store.memories.get_many(held)
    zone = window.start.tzinfo
    named: list[tuple[float, str]] = []
    for memory_id in held:
        memory = memories.get(memory_id)
        if memory is None:
            continue
        written = (memory.occurred_at or memory.created_at).astimezone(zone).date()
        day = names_day_within(memory.content, written, first, after)
        if day is not None:
            middle = datetime.combine(day, datetime.min.time(), tzinfo=zone) + timedelta(hours=12)
            named.append((abs((middle - window.focus).total_seconds()), memory.id))
    named.sort(key=lambda pair: pair[0])
    return [memory_id for _, memory_id in named], memories
