"""Time expressions → windows (SPEC §4, the time leg): explicit dates first, then phrases
relative to now, in the owner's time zone. Weeks start on Monday."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from memoryd.recall.time_window_policy import TimeWindow, find_time_window

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
    assert window.middle == window.focus == datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    assert not window.open_start


def test_now_in_another_offset_is_read_in_utc_by_default() -> None:
    later_offset = timezone(timedelta(hours=-5))
    same_instant = NOW.astimezone(later_offset)

    assert find_time_window("yesterday", same_instant) == find_time_window("yesterday", NOW)


def test_days_are_the_owners_days_in_their_time_zone() -> None:
    """At 01:30 in Lisbon on 30 November (summer time is over: UTC+0) it is still 29 November
    in New York; "yesterday" is the owner's yesterday, midnight to midnight in their zone."""
    late = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
    new_york = ZoneInfo("America/New_York")

    window = find_time_window("what did I do yesterday?", late, new_york)

    assert window is not None
    assert window.start == datetime(2026, 11, 28, tzinfo=new_york)
    assert window.end == datetime(2026, 11, 29, tzinfo=new_york)
    assert window.start.astimezone(UTC) == datetime(2026, 11, 28, 5, 0, tzinfo=UTC)
    assert days(find_time_window("what did I do yesterday?", late)) == (
        date(2026, 11, 29),
        date(2026, 11, 30),
    )


@pytest.mark.parametrize(
    ("message", "first", "after"),
    [
        ("What did I do the weekend before April 10, 2023?", date(2023, 4, 8), date(2023, 4, 10)),
        ("the weekend before Sunday 9 April 2023", date(2023, 4, 1), date(2023, 4, 3)),
        ("the weekend after 7 April 2023", date(2023, 4, 8), date(2023, 4, 10)),
        ("What did Maria share on 16 June, 2023?", date(2023, 6, 16), date(2023, 6, 17)),
        (
            "What painting did Melanie show on October 13, 2023?",
            date(2023, 10, 13),
            date(2023, 10, 14),
        ),
        ("What movie did Tim finish on 8th December, 2023?", date(2023, 12, 8), date(2023, 12, 9)),
        ("the 10th of April 2023", date(2023, 4, 10), date(2023, 4, 11)),
        ("What did Calvin open in May 2023?", date(2023, 5, 1), date(2023, 6, 1)),
        ("What happened to John's job situation in 2022?", date(2022, 1, 1), date(2023, 1, 1)),
        (
            "What did they do on the Monday before July 24, 2023?",
            date(2023, 7, 17),
            date(2023, 7, 18),
        ),
        ("the day after 28 February 2024", date(2024, 2, 29), date(2024, 3, 1)),
        ("two weeks before August 11, 2023", date(2023, 7, 24), date(2023, 7, 31)),
        ("the week before 23 January, 2023", date(2023, 1, 16), date(2023, 1, 23)),
        ("the month after March 2023", date(2023, 4, 1), date(2023, 5, 1)),
        ("what did I do on 3 May", date(2026, 5, 3), date(2026, 5, 4)),
        ("what did I do on December 3", date(2025, 12, 3), date(2025, 12, 4)),
    ],
)
def test_an_explicit_date_names_its_own_window_whatever_now_is(
    message: str, first: date, after: date
) -> None:
    assert days(find_time_window(message, NOW)) == (first, after)
    if "2023" in message or "2024" in message:
        assert days(find_time_window(message, IN_MARCH)) == (first, after)


def test_an_explicit_date_takes_precedence_over_a_relative_phrase() -> None:
    window = find_time_window(
        "What was Tim's issue last week, as mentioned on November 6, 2023?", NOW
    )

    assert days(window) == (date(2023, 11, 6), date(2023, 11, 7))
    assert window is not None and window.phrase == "november 6, 2023"


def test_an_anchored_phrase_names_the_whole_phrase() -> None:
    window = find_time_window("What did I do the weekend before April 10, 2023?", NOW)

    assert window is not None and window.phrase == "the weekend before april 10, 2023"


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
        "on 31 February nothing happened",
        "I scored 98 points in 1500 attempts",
        "I may 5 times have said it",
    ],
)
def test_a_message_without_a_time_has_no_window(message: str) -> None:
    assert find_time_window(message, NOW) is None


@pytest.mark.parametrize(
    ("message", "first", "after"),
    [
        (
            "Where was John between August 11 and August 15 2023?",
            date(2023, 8, 11),
            date(2023, 8, 16),
        ),
        ("from 3 May 2023 to 9 May 2023", date(2023, 5, 3), date(2023, 5, 10)),
        ("between 2026-11-02 and 2026-11-04", date(2026, 11, 2), date(2026, 11, 5)),
    ],
)
def test_a_range_between_two_dates_covers_both_ends(message: str, first: date, after: date) -> None:
    window = find_time_window(message, NOW)

    assert days(window) == (first, after)
    assert window is not None and window.phrase.startswith(("between", "from"))


@pytest.mark.parametrize(
    ("message", "first", "after"),
    [
        # NOW is a Sunday: "next Saturday" is six days on, "next Sunday" a week on.
        ("What time should I visit the shop next Saturday?", date(2026, 12, 5), date(2026, 12, 6)),
        ("dinner next Sunday", date(2026, 12, 6), date(2026, 12, 7)),
        ("What did I do on Saturday?", date(2026, 11, 28), date(2026, 11, 29)),
    ],
)
def test_next_names_a_day_to_come(message: str, first: date, after: date) -> None:
    """A day to come holds no event yet: read as the day just gone, it bounded recall to an
    event that has nothing to do with the plan asked about."""
    assert days(find_time_window(message, NOW)) == (first, after)


@pytest.mark.parametrize(
    ("message", "after", "phrase"),
    [
        ("How much had I saved until April 9?", date(2026, 4, 10), "until april 9"),
        ("How many tournaments had Nate won by July 10, 2022?", date(2022, 7, 11), "by july 10"),
        ("What was Jolene working on as of 1 February, 2023?", date(2023, 2, 2), "as of 1 feb"),
        ("How long had he played, as of December 2023?", date(2024, 1, 1), "as of december"),
        ("What did I own as of 2022?", date(2023, 1, 1), "as of 2022"),
        ("What did I do before 3 May?", date(2026, 5, 3), "before 3 may"),
    ],
)
def test_a_date_that_ends_a_span_covers_everything_up_to_it(
    message: str, after: date, phrase: str
) -> None:
    """ "Until April 9" asks about all that came before, not about the one day."""
    window = find_time_window(message, NOW)

    assert window is not None and window.phrase.startswith(phrase)
    assert window.end.date() == after
    assert window.contains(datetime(1990, 1, 1, tzinfo=UTC))
    assert not window.contains(datetime.combine(after, datetime.min.time(), tzinfo=UTC))
    # The time leg ranks the last days before the edge first, not the middle of the ages.
    assert window.open_start and window.focus == window.end


def test_an_open_start_is_an_instant_in_every_time_zone() -> None:
    for zone in (timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))):
        window = find_time_window("until 3 May 2023", NOW, zone)

        assert window is not None
        assert window.start.astimezone(UTC) < window.end.astimezone(UTC)


@pytest.mark.parametrize(
    ("message", "first"),
    [
        ("What have I done since 3 May?", date(2026, 5, 3)),
        ("What have I done after 3 May?", date(2026, 5, 4)),
    ],
)
def test_a_date_that_opens_a_span_covers_it_to_today(message: str, first: date) -> None:
    assert days(find_time_window(message, NOW)) == (first, date(2026, 11, 30))


@pytest.mark.parametrize(
    "message",
    [
        "What do I do on Tuesday and Thursday mornings?",
        "I swim every Tuesday",
        "Who do I call each Friday?",
        "my Saturday mornings are for the market",
        "every other Monday, or Wednesday evenings",
    ],
)
def test_a_weekday_that_recurs_names_no_window(message: str) -> None:
    """A habit or a schedule is not last Tuesday."""
    assert find_time_window(message, NOW) is None


def test_a_recurring_weekday_leaves_the_next_phrase_to_be_read() -> None:
    window = find_time_window("Since I swim every Tuesday, what did I eat yesterday?", NOW)

    assert window is not None and window.phrase == "yesterday"


@pytest.mark.parametrize(
    ("message", "first", "after"),
    [
        ("the titles I mentioned for April 6-7", date(2026, 4, 6), date(2026, 4, 8)),
        ("Who came over 6–7 April?", date(2026, 4, 6), date(2026, 4, 8)),
        ("What did we do April 6 to 7?", date(2026, 4, 6), date(2026, 4, 8)),
        ("between April 6 and April 9", date(2026, 4, 6), date(2026, 4, 10)),
        ("from April 6 to April 9", date(2026, 4, 6), date(2026, 4, 10)),
        ("on the 6th and 7th of April", date(2026, 4, 6), date(2026, 4, 8)),
        ("the 6th to the 9th of April", date(2026, 4, 6), date(2026, 4, 10)),
        ("the marathon on April 6th-7th, 2024", date(2024, 4, 6), date(2024, 4, 8)),
        ("April 30 - May 2", date(2026, 4, 30), date(2026, 5, 3)),
        ("over December 30 to January 2", date(2025, 12, 30), date(2026, 1, 3)),
        ("the movies for April 6-7 and April 8", date(2026, 4, 6), date(2026, 4, 9)),
        ("on May 3rd, May 5th and May 9th", date(2026, 5, 3), date(2026, 5, 10)),
    ],
)
def test_a_run_of_days_covers_every_day_of_it(message: str, first: date, after: date) -> None:
    """ "April 6-7" is both days (it was not read at all, or read as April 6 alone)."""
    assert days(find_time_window(message, NOW)) == (first, after)


@pytest.mark.parametrize(
    ("message", "phrase"),
    [
        ("I scored 6-7 in April", "in april"),  # a score, then the month
        ("on April 6 from 6 to 7 pm", "april 6"),  # a time of day, not a run of days
        ("we march 5 to 6 miles on 3 May", "3 may"),  # "march" the verb
        ("on April 6 and 2023 was the year", "april 6"),  # a year is no day of a list
    ],
)
def test_numbers_beside_a_month_are_not_always_a_run_of_days(message: str, phrase: str) -> None:
    window = find_time_window(message, NOW)

    assert window is not None and window.phrase == phrase


def test_a_day_and_month_in_figures_names_no_window() -> None:
    """ "6-7/4" is April in Europe and June or July in the US: which is the writer's custom."""
    assert find_time_window("what did we do 6-7/4?", NOW) is None


@pytest.mark.parametrize(
    ("message", "first"),
    [
        ("What's on for March 15?", date(2027, 3, 15)),
        ("What did I plan for March 15?", date(2027, 3, 15)),
        ("Will the plumber come on March 12?", date(2027, 3, 12)),
        ("What did I do on March 15?", date(2026, 3, 15)),  # the past: last year's
        ("What did I plan for March 2?", date(2027, 3, 2)),  # nearest, a week ago
    ],
)
def test_a_day_without_a_year_said_of_what_is_to_come_is_the_nearest(
    message: str, first: date
) -> None:
    """Asked on 10 March, "March 15" of a plan is this year's, days ahead, not last year's."""
    assert days(find_time_window(message, IN_MARCH))[0] == first


# Asked on Tuesday 10 November 2026.
ON_THE_10TH = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("message", "first"),
    [
        ("Anything tomorrow?", date(2026, 11, 11)),
        ("What's on the day after tomorrow?", date(2026, 11, 12)),
        ("What's on for the 15th?", date(2026, 11, 15)),  # to come
        ("What did I do on the 3rd?", date(2026, 11, 3)),  # gone
        ("What's on for the 3rd?", date(2026, 12, 3)),  # to come: next month's
        ("What do I have on Friday?", date(2026, 11, 13)),  # to come
        ("What did I have on Friday?", date(2026, 11, 6)),  # gone
        ("What's on 15/11?", date(2026, 11, 15)),
        ("What's on 15.11.?", date(2026, 11, 15)),
        ("What have I booked for 11/25?", date(2026, 11, 25)),
        # Asked in the present of the day: what is to come.
        ("What's happening on the 15th?", date(2026, 11, 15)),
        ("What is happening on the 3rd?", date(2026, 12, 3)),
        ("Anything on the 15th?", date(2026, 11, 15)),
        ("Is there anything on Friday?", date(2026, 11, 13)),
        ("Am I free on Friday?", date(2026, 11, 13)),
        ("Are we busy on the 3rd?", date(2026, 12, 3)),
        ("What am I doing on the 15th?", date(2026, 11, 15)),
        ("What was happening on the 3rd?", date(2026, 11, 3)),  # its past: gone
        ("Did I have anything on Friday?", date(2026, 11, 6)),  # gone
    ],
)
def test_days_as_people_ask_about_them(message: str, first: date) -> None:
    assert days(find_time_window(message, ON_THE_10TH)) == (first, first + timedelta(days=1))


@pytest.mark.parametrize(
    "message", ["What's on 5/11?", "Who lives on the 15th floor?", "What's the 3rd time I asked?"]
)
def test_a_day_the_message_does_not_make_plain_names_no_window(message: str) -> None:
    assert find_time_window(message, ON_THE_10TH) is None


@pytest.mark.parametrize(
    ("message", "now"),
    [
        ("Anything tomorrow?", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("What did I do today?", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("What do I have on Friday?", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("What did I do yesterday?", datetime(1, 1, 1, 12, tzinfo=UTC)),
    ],
)
def test_a_day_past_the_calendars_end_names_no_window(message: str, now: datetime) -> None:
    """At the calendar's ends a relative day may have no day to name (or none after it):
    no window, not an error."""
    assert find_time_window(message, now) is None


@pytest.mark.parametrize(
    ("message", "first", "after"),
    [
        # Asked on Wednesday 25 November 2026: weeks start on Monday.
        ("What's on next week?", date(2026, 11, 30), date(2026, 12, 7)),
        ("Anything planned for next weekend?", date(2026, 12, 5), date(2026, 12, 7)),
        ("What do I have this weekend?", date(2026, 11, 28), date(2026, 11, 30)),
        ("What's happening this weekend?", date(2026, 11, 28), date(2026, 11, 30)),
        ("Am I free this weekend?", date(2026, 11, 28), date(2026, 11, 30)),
        ("What did I do this weekend?", date(2026, 11, 21), date(2026, 11, 23)),
        ("Where was I last weekend?", date(2026, 11, 21), date(2026, 11, 23)),
    ],
)
def test_weeks_and_weekends_as_people_ask_about_them(
    message: str, first: date, after: date
) -> None:
    """ "Next week" is Monday to Sunday after this one; "this weekend" asked about what is to
    come is this week's, asked about what was, the most recent one begun."""
    wednesday = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert days(find_time_window(message, wednesday)) == (first, after)


@pytest.mark.parametrize(
    ("message", "now"),
    [
        ("What did I do this month?", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("What did I do this year?", datetime(9999, 6, 1, 12, tzinfo=UTC)),
        ("What's on next week?", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("What did I do last month?", datetime(1, 1, 1, 12, tzinfo=UTC)),
    ],
)
def test_a_week_or_month_past_the_calendars_end_names_no_window(
    message: str, now: datetime
) -> None:
    assert find_time_window(message, now) is None


def test_next_month_or_year_names_no_window() -> None:
    """No event has happened in them yet, and memories are read for days and weeks: a
    question quoting a plan ("the team trip next month") keeps no window."""
    assert find_time_window("What city did Tim suggest for the trip next month?", NOW) is None
    assert find_time_window("What is Jolene planning for next year?", NOW) is None


@pytest.mark.parametrize(
    "message",
    [
        "What happened 3000 years ago in Egypt?",
        "What were people eating 5000 years ago?",
        "What did I do 999999 months ago?",
    ],
)
def test_a_count_back_past_the_calendars_start_names_no_window(message: str) -> None:
    """A history question ("3000 years ago") reaches before year 1: no window, not an error."""
    assert find_time_window(message, NOW) is None


@pytest.mark.parametrize(
    "message",
    [
        "What did I do 99999999 days before April 10, 2023?",
        "What did I do 99999 months after April 10, 2023?",
        "Where was I the 9999999 weeks before April 10, 2023?",
    ],
)
def test_a_count_off_the_calendar_from_a_date_keeps_the_date(message: str) -> None:
    """The phrase attached to a date cannot be counted off the calendar: the date alone."""
    assert days(find_time_window(message, NOW)) == (date(2023, 4, 10), date(2023, 4, 11))
