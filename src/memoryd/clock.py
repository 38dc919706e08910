"""Time parsing and formatting. The clock is always passed in; nothing here reads it implicitly."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from memoryd.errors import InvalidInputError


def utc_now() -> datetime:
    """The current time, UTC, aware."""
    return datetime.now(UTC)


# Dates a person may mean: earlier ones are typos, and fixed-width years keep text order.
MIN_YEAR = 1000
MAX_YEAR = 9999


def parse_instant(text: str, *, what: str = "time") -> datetime:
    """An ISO-8601 date or date-time; naive values are taken as UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(
            f"{what} {text!r} is not an ISO-8601 date or time; use e.g. 2026-08-27 or "
            "2026-08-27T14:30:00+00:00"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise InvalidInputError(
            f"{what} {text!r} is outside the range of dates memoryd stores ({MIN_YEAR}-{MAX_YEAR})"
        )
    return utc


def to_db(value: datetime | None) -> str | None:
    """The stored text form: fixed-width UTC ISO-8601, so text order is time order."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def from_db(value: str | None) -> datetime | None:
    """Inverse of :func:`to_db`."""
    if value is None:
        return None
    return datetime.fromisoformat(value)


Clock = Callable[[], datetime]
