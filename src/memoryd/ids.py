"""Time-ordered memory ids: 48 bits of milliseconds then 80 bits of randomness (ULID layout)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

R = TypeVar("R")


class IdGenerator:
    """Makes ids that sort by creation time, strictly increasing within one process."""

    def __init__(self, random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        # ``random_bytes``: where the 80 random bits come from. A benchmark passes a seeded
        # source, so that a store built twice holds the same ids (an excerpt's label names its
        # memory's id, and the id's token count then moves what fits in a block).
        self._lock = threading.Lock()
        self._last = 0
        self._random_bytes = random_bytes

    def new_id(self, at: datetime) -> str:
        """An id for a record created at ``at`` (the caller's clock: ``--now`` orders ids too)."""
        millis = int(at.timestamp() * 1000)
        with self._lock:
            value = (millis << 80) | int.from_bytes(self._random_bytes(10), "big")
            # Why: two ids in the same millisecond must still sort in creation order.
            if value <= self._last:
                value = self._last + 1
            self._last = value
        return _encode(value)


def _encode(value: int) -> str:
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


# A shortened id names a record only from this many characters on (as git takes commits): three
# characters of a time-ordered id are shared by every record made in the same ~5 weeks.
MIN_ID_PREFIX = 4


def id_prefix(text: str) -> str | None:
    """``text`` as the start of an id (upper case, as ids are written), or None when no id can
    start with it: shorter than MIN_ID_PREFIX or holding a character ids never hold."""
    prefix = text.strip().upper()
    if len(prefix) < MIN_ID_PREFIX or any(c not in _CROCKFORD for c in prefix):
        return None
    return prefix


def prefix_bounds(prefix: str) -> tuple[str, str | None]:
    """(low, high): every id that starts with ``prefix`` (an :func:`id_prefix`) sorts at or
    after low and before high (None: no bound above). Both bounds are written in the id
    alphabet, so they sort the same under any collation a database may use."""
    digits = list(prefix)
    while digits:
        position = _ORDER.index(digits[-1])
        if position + 1 < len(_ORDER):
            digits[-1] = _ORDER[position + 1]
            return prefix, "".join(digits)
        digits.pop()
    return prefix, None


# The order ids sort in, character by character: digits, then letters (ASCII and every
# collation agree on it for upper-case letters and digits).
_ORDER = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


# How many records an ambiguous shortened id lists.
SHOWN_CANDIDATES = 10


def unknown_id_message(what: str, text: str) -> str:
    """'no memory with id …', saying so when the id was too short to stand for one."""
    message = f"no {what} with id {text.strip()!r}"
    if len(text.strip()) < MIN_ID_PREFIX:
        message += f" (a shortened id needs at least {MIN_ID_PREFIX} characters)"
    return message


def ambiguous_id_message(
    what: str, text: str, candidates: list[tuple[str, str]], more: bool
) -> str:
    """Which records a shortened id starts (id and a few words of each), on one line."""
    listed = ", ".join(f"{record_id} ({_clip(label)})" for record_id, label in candidates)
    tail = ", …" if more else ""
    return (
        f"the id {text.strip()!r} is ambiguous: it starts {what} {listed}{tail}; "
        "give more characters"
    )


def _clip(label: str, width: int = 40) -> str:
    words = " ".join(label.split())
    return repr(words if len(words) <= width else words[: width - 1] + "…")


def resolve_prefix(
    text: str,
    what: tuple[str, str],
    *,
    get: Callable[[str], R | None],
    starting: Callable[[str, int], list[str]],
    label: Callable[[R], str],
    not_found: Callable[[str], Exception],
) -> str:
    """The whole id ``text`` names: itself when ``get`` finds a record by it, else the one id
    that starts with it (at least MIN_ID_PREFIX characters, as git takes commits). ``what`` is
    the record's name, singular and plural; ``starting(prefix, limit)`` lists ids in order and
    ``label`` says a few words of a record. Raises ``not_found(message)`` when none,
    AmbiguousIdError (listing them) when several."""
    from memoryd.errors import AmbiguousIdError

    wanted = text.strip()
    if get(wanted) is not None:
        return wanted
    prefix = id_prefix(wanted)
    found = starting(prefix, SHOWN_CANDIDATES + 1) if prefix else []
    if not found:
        raise not_found(unknown_id_message(what[0], text))
    if len(found) == 1:
        return found[0]
    shown = {i: label(record) for i in found[:SHOWN_CANDIDATES] if (record := get(i)) is not None}
    raise AmbiguousIdError(
        ambiguous_id_message(what[1], text, sorted(shown.items()), len(found) > len(shown))
    )
