"""Named store-wide leases: one consolidation run, one re-embed at a time, across every
process sharing the store. A lease held by a process of this machine that no longer exists
(a crashed run) is taken over at once; on another machine, the lease has to run out."""

from __future__ import annotations

import logging
import os
import secrets
import socket

from memoryd.clock import Clock, utc_now
from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")


class StoreLease:
    """One named lease. Its times are wall-clock times (``clock``)."""

    def __init__(
        self,
        store: Store,
        name: str,
        seconds: int,
        *,
        clock: Clock = utc_now,
        holder: str | None = None,
    ) -> None:
        self.store = store
        self.name = name
        self.seconds = seconds
        self.clock = clock
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    def take(self) -> bool:
        """Take (or renew) the lease; False while another live holder has it."""
        with self.store.transaction():
            now = self.clock()
            if self.store.try_lock(self.name, self.holder, now, self.seconds):
                return True
            previous = self.store.lock_holder(self.name)
            if previous is not None and holder_is_dead(previous):
                log.warning("%s: taking over the lease of dead process %s", self.name, previous)
                return self.store.take_over_lock(
                    self.name, previous, self.holder, now, self.seconds
                )
            return False

    def renewed(self) -> str | None:
        """Extend the lease this holder has: None when done, else who holds it now."""
        with self.store.transaction():
            if self.store.try_lock(self.name, self.holder, self.clock(), self.seconds):
                return None
            return self.store.lock_holder(self.name) or "nobody"

    def holder_now(self) -> str | None:
        """Who holds the lease at the moment, if anyone."""
        return self.store.lock_holder(self.name)

    def release(self) -> None:
        """Give the lease back (only if this holder still holds it)."""
        with self.store.transaction():
            self.store.unlock(self.name, self.holder)


def holder_is_dead(holder: str) -> bool:
    """Whether a lease holder ("host:pid:token") is a process of this machine that is gone."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by someone else
        return False
    return False
