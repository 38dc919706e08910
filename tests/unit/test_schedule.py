"""The daily schedule: due at the configured local time, one catch-up after missed days."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, timezone

from memoryd.consolidation.schedule_policy import is_due, last_scheduled
from memoryd.jobs.model import RetryPolicy
from memoryd.storage.job_rows import CLOCK_WENT_BACK

LISBON_SUMMER = timezone(timedelta(hours=1))
AT = time(3, 30)


def test_due_only_after_the_daily_time_has_passed_since_the_last_run() -> None:
    ran = datetime(2026, 8, 27, 2, 31, tzinfo=UTC)  # 03:31 local, just after the run time
    assert not is_due(ran, datetime(2026, 8, 28, 2, 29, tzinfo=UTC), AT, LISBON_SUMMER)
    assert is_due(ran, datetime(2026, 8, 28, 2, 30, tzinfo=UTC), AT, LISBON_SUMMER)


def test_missed_days_mean_one_catch_up_run_at_start() -> None:
    ran = datetime(2026, 8, 20, 2, 30, tzinfo=UTC)
    start = datetime(2026, 8, 27, 12, 0, tzinfo=UTC)
    assert is_due(ran, start, AT, LISBON_SUMMER)
    # After the catch-up run, the next one is tomorrow at 03:30 local.
    assert not is_due(start, start + timedelta(hours=1), AT, LISBON_SUMMER)
    tomorrow = datetime(2026, 8, 28, 3, 30, tzinfo=LISBON_SUMMER)
    assert not is_due(start, tomorrow - timedelta(minutes=1), AT, LISBON_SUMMER)
    assert is_due(start, tomorrow, AT, LISBON_SUMMER)


def test_a_clock_gone_back_skips_no_more_than_a_day_and_repeats_no_day() -> None:
    ran = datetime(2026, 8, 27, 2, 31, tzinfo=UTC)
    # Back by a day: today's run counts as done (never twice in a day) …
    assert not is_due(ran, ran - timedelta(hours=23), AT, LISBON_SUMMER)
    # … back by a year (a clock that ran a year ahead, corrected): one run now, not next year.
    assert is_due(ran, ran - timedelta(days=365), AT, LISBON_SUMMER)
    # No retry policy step reaches the horizon past which a job's time means the clock went
    # back (storage.job_rows), so no real retry is ever run early.
    assert max(RetryPolicy().steps_seconds) < CLOCK_WENT_BACK.total_seconds()


def test_a_store_that_never_ran_is_due_and_the_last_slot_is_local() -> None:
    now = datetime(2026, 8, 27, 1, 0, tzinfo=UTC)  # 02:00 local: today's 03:30 not yet
    assert is_due(None, now, AT, LISBON_SUMMER)
    assert last_scheduled(now, AT, LISBON_SUMMER) == datetime(
        2026, 8, 26, 3, 30, tzinfo=LISBON_SUMMER
    )
