"""A lane of its own for ingests: requests that read documents or fetch pages (minutes, at
the mercy of another server) may hold only a few of the request threads at once, so recall,
search and ``/v1/health`` always find one free. Ten slow URL ingests once filled every thread
and ``/v1/health`` waited 52 s.

The waiting happens in the event loop, before the request reaches a thread: an ingest over
the limit holds a connection, never a worker.
"""

from __future__ import annotations

import re

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

# The routes that convert documents or fetch URLs.
INGEST_PATHS = re.compile(
    r"^/(?:v1/kb/(?:ingest|upload|documents/[^/]+/reingest)|v1/import-chats"
    r"|documents/(?:upload|[^/]+/reingest))$"
)


def ingest_lane_width(threads: int) -> int:
    """How many ingests run at once: a quarter of the request threads, at least one."""
    return max(1, threads // 4)


class IngestLane:
    """ASGI middleware: at most ``width`` ingest requests inside the app at once."""

    def __init__(self, app: ASGIApp, *, width: int) -> None:
        self.app = app
        self.width = width
        self._lane: anyio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not INGEST_PATHS.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        if self._lane is None:  # made in the server's event loop, on first use
            self._lane = anyio.Semaphore(self.width)
        async with self._lane:
            await self.app(scope, receive, send)
