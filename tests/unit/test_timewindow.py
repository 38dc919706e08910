"""Time expressions → windows relative to now (SPEC §4, the time leg). Weeks start on Monday."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from memoryd.timewindow import TimeWindow, find_time_window

# A Sunday in late November.
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
IN_MARCH = datetime(2027, 3, 10, 9, 30, tzinfo=UTC)


def days(window: TimeWindow | None) -> tuple[date, date]:
    """(first day, first day after) of a window that must exist."""
    assert window is not None
    assert window.start.tzinfo is not None and window.end.tzinfo is not None
    assert window.start.time() == window.end.time() == datetime.min.time()
    return window.start.date(), window.end.date()


@pytest.mark.parametrize(
    ("message", "first", "after"),
    [
        ("What did I do yesterday?", date(2026, 11, 28), date(2026, 11, 29)),
        ("what did i do last week", date(2026, 11, 16), date(2026, 11, 23)),
        ("Where was I in August?", date(2026, 8, 1), date(2026, 9, 1)),
        ("What happened on 2026-08-27?", date(2026, 8, 27), date(2026, 8, 28)),
        ("I called her 3 days ago", date(2026, 11, 26), date(2026, 11, 27)),
        ("What did we eat last Monday?", date(2026, 11, 23), date(2026, 11, 24)),
        ("Anything planned this month?", date(2026, 11, 1), date(2026, 12, 1)),
        ("Best trips of last year", date(2025, 1, 1), date(2026, 1, 1)),
        ("What did I do TODAY", date(2026, 11, 29), date(2026, 11, 30)),
        ("two weeks ago I was ill", date(2026, 11, 9), date(2026, 11, 16)),
        ("What did I read in May?", date(2026, 5, 1), date(2026, 6, 1)),
    ],
)
def test_a_time_phrase_names_the_window_relative_to_now(
    message: str, first: date, after: date
) -> None:
    assert days(find_time_window(message, NOW)) == (first, after)


def test_a_month_not_yet_reached_this_year_means_last_years() -> None:
    """ "in August" said in November is this August; said in March it is last August."""
    assert days(find_time_window("in August", NOW)) == (date(2026, 8, 1), date(2026, 9, 1))
    assert days(find_time_window("in August", IN_MARCH)) == (date(2026, 8, 1), date(2026, 9, 1))
    assert days(find_time_window("in March", IN_MARCH)) == (date(2027, 3, 1), date(2027, 4, 1))


def test_last_week_never_includes_this_week() -> None:
    window = find_time_window("last week", NOW)

    assert window is not None
    this_monday = datetime(2026, 11, 23, tzinfo=UTC)
    assert window.end == this_monday
    assert window.end - window.start == timedelta(weeks=1)
    assert window.start.weekday() == 0


def test_last_monday_said_on_a_monday_is_a_week_ago() -> None:
    monday = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    assert days(find_time_window("last Monday", monday)) == (
        date(2026, 11, 23),
        date(2026, 11, 24),
    )


def test_windows_are_half_open() -> None:
    window = find_time_window("yesterday", NOW)

    assert window is not None
    assert window.contains(datetime(2026, 11, 28, 0, 0, tzinfo=UTC))
    assert window.contains(datetime(2026, 11, 28, 23, 59, 59, tzinfo=UTC))
    assert not window.contains(datetime(2026, 11, 29, 0, 0, tzinfo=UTC))
    assert not window.contains(datetime(2026, 11, 27, 23, 59, 59, tzinfo=UTC))
    assert window.middle == datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def test_now_in_another_offset_is_read_in_utc() -> None:
    later_offset = timezone(timedelta(hours=-5))
    same_instant = NOW.astimezone(later_offset)

    assert find_time_window("yesterday", same_instant) == find_time_window("yesterday", NOW)


def test_the_window_says_which_phrase_it_came_from() -> None:
    window = find_time_window("So, what did I do LAST   WEEK at work?", NOW)

    assert window is not None and window.phrase == "last week"


@pytest.mark.parametrize(
    "message",
    [
        "What is my sister's name?",
        "may I ask you something?",
        "I may go to the gym",
        "Tell me about the march of progress",
        "",
        "2026 was a good number",
        "on 2026-13-45 nothing happened",
    ],
)
def test_a_message_without_a_time_has_no_window(message: str) -> None:
    assert find_time_window(message, NOW) is None
