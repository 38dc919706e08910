"""The days a memory's text names (the time leg's reading of memories, SPEC §4 as extended in
docs/recall.md, "Days a memory names"): a day without a year is the one nearest the day the
text was written."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from memoryd.recall.dates_policy import day_phrases, named_days, names_day_within, numeric_phrases
from memoryd.recall.day_words_policy import (
    relative_day_within,
    week_days,
    week_within,
    written_days,
)

WRITTEN = date(2026, 3, 2)


def test_a_plan_names_the_day_to_come_nearest_the_writing() -> None:
    text = "My dentist appointment is on March 15, then the marathon on April 6-7"

    spans = {(s.first, s.after) for s in named_days(text, WRITTEN)}

    assert (date(2026, 3, 15), date(2026, 3, 16)) in spans
    assert (date(2026, 4, 6), date(2026, 4, 8)) in spans


def test_a_day_just_gone_is_this_years_and_a_day_far_ahead_last_years() -> None:
    """Written on 2 March: "February 27" was days ago; "December 20" was in December."""
    text = "on February 27 I moved, and on December 20 I signed the lease"

    firsts = sorted(s.first for s in named_days(text, WRITTEN))

    assert firsts == [date(2025, 12, 20), date(2026, 2, 27)]


def test_only_days_count_not_months_or_years() -> None:
    assert named_days("We moved in August 2023 and again in 2024, or 2025-06", WRITTEN) == []


def test_a_memory_is_inside_a_window_when_a_day_it_names_is() -> None:
    text = "Booked the plumber for 14–16 March"

    assert names_day_within(text, WRITTEN, date(2026, 3, 16), date(2026, 3, 17)) == date(
        2026, 3, 16
    )
    assert names_day_within(text, WRITTEN, date(2026, 3, 17), date(2026, 3, 18)) is None
    fifth_of_may = (date(2026, 5, 5), date(2026, 5, 6))
    assert names_day_within("I may 5 times have said it", WRITTEN, *fifth_of_may) is None


def test_each_day_of_a_window_is_looked_for_as_it_is_written() -> None:
    phrases = day_phrases(date(2026, 3, 31), date(2026, 4, 2))

    assert {"march 31", "31 march", "mar 31st", "31st of march", "april 1", "1st apr"} <= set(
        phrases
    )
    assert not any("30" in p or "2" in p.split() for p in phrases)
    # Each phrase names its day when read back.
    assert all(named_days(f"on {p}", WRITTEN) for p in phrases)


# Written on Monday 2 November 2026, each phrase and the day it names, worked out by hand.
MONDAY = date(2026, 11, 2)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Dinner at Rui's tomorrow at 8", date(2026, 11, 3)),
        ("The plumber comes the day after tomorrow", date(2026, 11, 4)),
        ("Parents' evening at the school tonight", date(2026, 11, 2)),
        ("Yesterday the boiler broke again", date(2026, 11, 1)),
        ("Call the landlord on Friday", date(2026, 11, 6)),
        ("Haircut next Monday", date(2026, 11, 9)),
        ("Gym on Monday", date(2026, 11, 9)),  # said on a Monday: the one to come
        ("Last Friday the car failed its test", date(2026, 10, 30)),
        ("The sofa arrives in two days", date(2026, 11, 4)),
        ("The dentist on the 15th at 9", date(2026, 11, 15)),
        ("Ana's recital is on the 2nd, bring flowers", date(2026, 11, 2)),  # today
        ("Rent is due by the 1st.", date(2026, 12, 1)),
    ],
)
def test_a_word_names_a_day_from_the_day_it_was_written(text: str, named: date) -> None:
    after = named + timedelta(days=1)
    assert relative_day_within(text, MONDAY, named, after) == named
    # ... and no other day of the fortnight around it.
    for shift in (*range(-7, 0), *range(1, 8)):
        other = named + timedelta(days=shift)
        assert relative_day_within(text, MONDAY, other, other + timedelta(days=1)) is None, other


@pytest.mark.parametrize(
    ("text", "first", "after"),
    [
        ("Dentist next week, Ana drives", date(2026, 11, 9), date(2026, 11, 16)),
        ("Busy this week with the audit", date(2026, 11, 2), date(2026, 11, 9)),
        ("Last week the roof leaked", date(2026, 10, 26), date(2026, 11, 2)),
        ("Hiking with Sam this weekend", date(2026, 11, 7), date(2026, 11, 9)),
        ("Next weekend we visit my parents", date(2026, 11, 14), date(2026, 11, 16)),
        ("We painted the shed last weekend", date(2026, 10, 31), date(2026, 11, 2)),
    ],
)
def test_a_week_or_weekend_is_named_from_the_week_it_was_written(
    text: str, first: date, after: date
) -> None:
    """Weeks start on Monday; a weekend is its week's Saturday and Sunday."""
    lowered = " ".join(text.lower().split())
    [span] = week_days(lowered, MONDAY)
    assert (span.first, span.after) == (first, after)
    # Written on the week's Sunday it names the same days.
    [span] = week_days(lowered, MONDAY + timedelta(days=6))
    assert (span.first, span.after) == (first, after)
    # Each of its days, and none around it; not as a day named (it names them less closely).
    day = first
    while day < after:
        assert week_within(text, MONDAY, day, day + timedelta(days=1)) == day
        assert relative_day_within(text, MONDAY, day, day + timedelta(days=1)) is None
        day += timedelta(days=1)
    assert week_within(text, MONDAY, after, after + timedelta(days=7)) is None
    assert week_within(text, MONDAY, first - timedelta(days=7), first) is None


def test_the_day_of_a_month_is_the_coming_one() -> None:
    """ "On the 15th" written on the 20th is next month's."""
    [day] = written_days("the dentist on the 15th", date(2026, 11, 20))
    assert day.first == date(2026, 12, 15)
    [day] = written_days("payday is the 31st", date(2026, 11, 5))  # November has no 31st
    assert day.first == date(2026, 12, 31)


@pytest.mark.parametrize(
    "text",
    [
        "We swim every Friday",
        "on Fridays we swim",
        "on Monday mornings I run",
        "The office is on the 15th floor",
        "It was the 3rd time this week",
        "the 15th of March",  # a date with its month (named_days reads it)
        "March the 15th",
        "I read it in the 19th century",
    ],
)
def test_words_that_count_or_recur_name_no_day_of_their_own(text: str) -> None:
    lowered = " ".join(text.lower().split())
    assert list(written_days(lowered, MONDAY)) == []


@pytest.mark.parametrize(
    "text", ["We hike every weekend", "In the last week of March we move", "A week of rain"]
)
def test_a_week_that_recurs_or_is_a_months_names_no_week(text: str) -> None:
    assert list(week_days(" ".join(text.lower().split()), MONDAY)) == []


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Tax office 24/11, bring the forms", date(2026, 11, 24)),
        ("Vet 11/25 at 10:30", date(2026, 11, 25)),
        ("Renew the passport by 26.11.", date(2026, 11, 26)),
        ("Renew it by 03.12.2026", date(2026, 12, 3)),
        ("Flight 2026-11-28 at 7:40", date(2026, 11, 28)),
        ("Flight 2026/11/28 at 7:40", date(2026, 11, 28)),
        ("Party 28/11/26", date(2026, 11, 28)),
        ("Interview 12/12", date(2026, 12, 12)),  # the same both ways round
    ],
)
def test_a_day_in_numbers_is_read_when_its_order_is_plain(text: str, named: date) -> None:
    assert [s.first for s in named_days(text, MONDAY)] == [named]


@pytest.mark.parametrize(
    "text",
    [
        "Car service 5/11 at the garage",  # 5 November, or May 11
        "The shop is open 24/7",
        "Add 3/4 of a cup of sugar",
        "I ran 12.5 km",
        "Updated to version 3.4.1",
        "The score was 6-15/4 at half time",
        "It rained 1/2/3 times",
    ],
)
def test_numbers_whose_order_the_text_does_not_say_name_no_day(text: str) -> None:
    assert named_days(text, MONDAY) == []


def test_each_day_is_looked_for_in_the_numbers_it_is_read_from() -> None:
    phrases = numeric_phrases(date(2026, 11, 5), date(2026, 11, 16))

    assert {"15/11", "11/15", "15.11.", "05.11.", "2026-11-05", "2026/11/15"} <= set(phrases)
    assert "5/11" not in phrases and "11/5" not in phrases  # never read, so never looked for
    assert all(named_days(f"on {p}", MONDAY) for p in phrases)


def test_words_naming_a_day_past_the_calendars_end_name_none() -> None:
    assert list(written_days("tomorrow, on friday, in two days, the 15th", date.max)) == []
    assert list(week_days("next week, this weekend", date.max)) == []
    assert [s.first for s in written_days("yesterday, last friday", date.min)] == []
