"""Persisted background jobs (extraction now, KB retries later): records and retry policy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any


class JobStatus(StrEnum):
    """A job's state; ``running`` jobs whose lease ran out are claimed again."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class Job:
    """One queued unit of work."""

    id: str
    kind: str
    payload: dict[str, Any]
    status: JobStatus
    attempts: int
    next_attempt_at: datetime
    created_at: datetime
    claimed_at: datetime | None = None
    finished_at: datetime | None = None
    last_error: str | None = None
    result: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON shape for the CLI and API."""
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status.value,
            "attempts": self.attempts,
            "next_attempt_at": self.next_attempt_at.isoformat(),
            "created_at": self.created_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "last_error": self.last_error,
            "result": self.result,
        }


@dataclass(frozen=True)
class RetryPolicy:
    """When a job that failed for a passing reason (the LLM down, a timeout) runs again."""

    # Why these steps: a restarting local model server is back within minutes; a provider
    # outage within hours. Past the last step the job keeps trying at that interval.
    steps_seconds: tuple[int, ...] = (30, 120, 600, 1800, 3600)
    max_attempts: int = 48
    # A job claimed but not finished within this long is assumed lost (a crash) and re-run.
    lease_seconds: int = 600

    def next_attempt(self, attempts: int, now: datetime) -> datetime | None:
        """When to try again after ``attempts`` failures, or None to give up."""
        if attempts >= self.max_attempts:
            return None
        step = self.steps_seconds[min(attempts, len(self.steps_seconds)) - 1]
        return now + timedelta(seconds=step)
