"""When the daily job is due (pure): at a configured local time, catching up once if missed."""

from __future__ import annotations

from datetime import datetime, time, timedelta, tzinfo


def last_scheduled(now: datetime, daily_at: time, zone: tzinfo) -> datetime:
    """The most recent instant, at or before ``now``, whose local time is ``daily_at``."""
    local_now = now.astimezone(zone)
    today = datetime.combine(local_now.date(), daily_at, tzinfo=zone)
    return today if today <= local_now else today - timedelta(days=1)


def is_due(last_run: datetime | None, now: datetime, daily_at: time, zone: tzinfo) -> bool:
    """Whether the job should run now: it never ran, or its last run predates the most recent
    scheduled time. However many days were missed, that is one catch-up run, not one per day.

    A last run more than a day after ``now`` was recorded by a clock that has since gone back
    by more than a day (a year-ahead clock corrected): waiting for the clock to reach it would
    skip consolidation for that long, so it runs once now. A clock back by less than a day
    sees today's run as done: never two runs in one day."""
    if last_run is None or last_run > now + timedelta(days=1):
        return True
    return last_run < last_scheduled(now, daily_at, zone)
