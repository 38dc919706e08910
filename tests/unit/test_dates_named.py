"""The days a memory's text names (the time leg's reading of memories, SPEC §4 as extended in
docs/recall.md, "Days a memory names"): a day without a year is the one nearest the day the
text was written."""

from __future__ import annotations

from datetime import date

from memoryd.recall.dates_policy import day_phrases, named_days, names_day_within

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
