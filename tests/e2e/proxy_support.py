"""What the chat proxy's tests read back: the chat requests an upstream received and the turns
the proxy queued (read from the store beside the running server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.storage.sqlite import SqliteStore
from tests.chat_upstream import ChatUpstream


def chats(upstream: ChatUpstream) -> list[dict[str, Any]]:
    """The chat requests an upstream received, without memoryd's own extraction calls (which
    ask for JSON)."""
    return [body for body in upstream.bodies() if "response_format" not in body]


def turn_jobs(db: str | Path) -> list[dict[str, Any]]:
    """The store's queued turns with their payloads, results and states, oldest first."""
    store = SqliteStore(Path(db), create=False)
    try:
        return sorted(
            (
                {
                    "id": job.id,
                    "payload": job.payload,
                    "status": job.status.value,
                    "result": job.result,
                    "last_error": job.last_error,
                }
                for job in store.jobs.recent(10_000)
                if job.kind == "turn"
            ),
            key=lambda job: str(job["id"]),
        )
    finally:
        store.close()
