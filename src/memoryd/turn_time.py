"""When the text a memory is extracted from was written, as the model and the store see it.

The owner gives times without an offset in their own zone (``observe --at 2026-11-30T18:05``);
the model reads a trusted line in that zone above the fenced input ("The turn happened on
Monday 2026-11-30 at 18:05, Europe/Lisbon.") and resolves "yesterday" against it; an event it
leaves undated gets the turn's date, never the time a late job runs. Pure: the zone is passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, time, tzinfo

from .clock import parse_instant
from .model import Kind, Proposal

_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def zone_name(zone: tzinfo) -> str:
    """The owner's zone as a model reads it: the IANA name (Europe/Lisbon), else UTC±hh:mm."""
    return str(getattr(zone, "key", None) or zone)


def _local(at: datetime, zone: tzinfo) -> str:
    local = at.astimezone(zone)
    # Day names from a table, not strftime: the process locale must not change the prompt.
    return f"{_DAYS[local.weekday()]} {local:%Y-%m-%d} at {local:%H:%M}"


def when_line(lead: str, at: datetime, zone: tzinfo) -> str:
    """The trusted line above a fenced input saying when it was written, in the owner's zone:
    ``when_line("The turn happened", ...)`` is "The turn happened on Monday 2026-11-30 at
    18:05, Europe/Lisbon." — what the model resolves "yesterday" against."""
    return f"{lead} on {_local(at, zone)}, {zone_name(zone)}."


def turn_stamp(at: datetime, zone: tzinfo) -> str:
    """A turn's local time at the start of its line in a compaction batch: "[Mon 2026-11-30
    18:05]"."""
    local = at.astimezone(zone)
    return f"[{_DAYS[local.weekday()][:3]} {local:%Y-%m-%d %H:%M}]"


def span_line(first: datetime, last: datetime, zone: tzinfo) -> str:
    """The trusted line above a batch of dated turns."""
    if first == last:
        return when_line("The turns below happened", first, zone)
    return (
        f"The turns below happened from {_local(first, zone)} to {_local(last, zone)}, "
        f"{zone_name(zone)}; each line starts with its own local time."
    )


def parse_local_instant(text: str, zone: tzinfo, *, what: str) -> datetime:
    """An ISO-8601 date or time the owner gave (``--at``, a turn's ``"at"``): without an
    offset it is the owner's local time in ``zone``. UTC, aware."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return parse_instant(text, what=what)  # raises its clear error
    if value.tzinfo is None:
        text = value.replace(tzinfo=zone).isoformat()
    return parse_instant(text, what=what)


def date_events(proposals: Sequence[Proposal], day: date) -> tuple[Proposal, ...]:
    """Events the model left undated happened on ``day`` (the turn's date in the owner's
    zone), stored like a date the model gives: midnight UTC of that date. Never the time a
    late job happens to run."""
    midnight = datetime.combine(day, time.min, tzinfo=UTC)
    return tuple(
        replace(p, occurred_at=midnight) if p.kind is Kind.EVENT and p.occurred_at is None else p
        for p in proposals
    )
