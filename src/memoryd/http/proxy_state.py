"""What the chat proxy keeps between requests: the conversations it recognised and the turns
it queued (bounded maps), the request on its way, and the last request for the status line."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memoryd.proxy.policy import Turn

# Why 10,000: one entry per live conversation (a digest and an id, ~150 bytes); older ones
# are forgotten first, and a forgotten conversation is recognised by its digest again.
MAX_REMEMBERED = 10_000


@dataclass(frozen=True)
class LastRequest:
    """What the web page's status line says about the proxy."""

    at: datetime
    model: str
    upstream: str
    outcome: str

    def line(self) -> str:
        """One line for the owner."""
        when = self.at.strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"Chat proxy: last request {when}, model {self.model!r} via {self.upstream}: " + (
            self.outcome
        )


class Remembered:
    """A bounded, thread-safe map, least recently used out first."""

    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self._items: OrderedDict[str, str] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def add(self, key: str, value: str) -> bool:
        """Keep ``key``; False when it was already kept."""
        with self._lock:
            known = key in self._items
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
            return not known


@dataclass
class Exchange:
    """One request on its way: what the proxy needs once the answer is complete."""

    conversation: str
    turn: Turn | None
    messages: list[dict[str, Any]]
    at: datetime
    tainted_by: str | None
    model: str
