"""Time-ordered memory ids: 48 bits of milliseconds then 80 bits of randomness (ULID layout)."""

from __future__ import annotations

import os
import threading
from datetime import datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class IdGenerator:
    """Makes ids that sort by creation time, strictly increasing within one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def new_id(self, at: datetime) -> str:
        """An id for a record created at ``at`` (the caller's clock: ``--now`` orders ids too)."""
        millis = int(at.timestamp() * 1000)
        with self._lock:
            value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
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
