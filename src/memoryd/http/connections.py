"""What one client's connections may hold: a connection must send its request's headers within
``HEADER_SECONDS`` of opening (or of its previous answer), or it is closed; past
``connection_cap`` open connections, new requests get 503 instead of the process running out of
file descriptors for its database. The body's own deadline is in ``limits.py``."""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

# Why 10 s: an honest client sends its headers in one packet, right after it connects; an
# idle or trickling one is closed before hundreds of them add up.
HEADER_SECONDS = 10.0
# Descriptors kept back for the database, its write-ahead log, documents and the model.
SPARE_DESCRIPTORS = 128
MOST_DESCRIPTORS = 65536


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose next request's headers have not
    arrived ``header_seconds`` after it opened or after its last answer. (uvicorn's own
    keep-alive timeout only runs after an answer, and stops at the first byte.)"""

    header_seconds = HEADER_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request's headers."""
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        """Start the clock for the next request's headers."""
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_deadline = self.loop.call_later(self.header_seconds, self._headers_late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()


def connection_cap() -> int:
    """How many connections serve keeps open: the open-files limit (raised to the hard limit,
    at most 65,536) less the descriptors the store and the work need."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ceiling = MOST_DESCRIPTORS if hard == resource.RLIM_INFINITY else min(hard, MOST_DESCRIPTORS)
    if soft != resource.RLIM_INFINITY and soft < ceiling:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
            soft = ceiling
        except (ValueError, OSError) as error:
            log.warning("could not raise the open-files limit to %d: %s", ceiling, error)
    usable = MOST_DESCRIPTORS if soft == resource.RLIM_INFINITY else soft
    return max(64, usable - SPARE_DESCRIPTORS)
