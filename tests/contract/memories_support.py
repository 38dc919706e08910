"""What the memory contract tests share: the clock, a credential and a private key, and a
fact-slot writer.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoryd.memory.model import Memory
from memoryd.service import MemoryService

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

API_KEY = "sk-proj-Q7vXr2Lm9TzK4pWn8YbC3dHs6FjG1aEu"
PRIVATE_KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    f"{PRIVATE_KEY_BODY}\n"
    "QyNTUxOQAAACD3kq9ZrWm4xVt8LpHc2sN6yBd0uFe1gJ5aTo7iKvRlXw==\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def at(minutes: int) -> datetime:
    """A fixed instant, ``minutes`` after T0: no test depends on the wall clock."""
    return T0 + timedelta(minutes=minutes)


def lives_in(service: MemoryService, city: str, minutes: int) -> Memory:
    result = service.remember(
        f"Owner lives in {city}",
        subject="owner",
        predicate="lives in",
        object=city,
        now=at(minutes),
    )
    assert result.memory is not None
    return result.memory


def by_id(service: MemoryService) -> dict[str, Memory]:
    return {memory.id: memory for memory in service.list_memories()}
