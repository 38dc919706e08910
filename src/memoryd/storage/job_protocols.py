"""The job queue a store keeps: persisted jobs, claimed one at a time under a lease."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from memoryd.jobs.model import Job


class JobQueue(Protocol):
    """Persisted jobs, claimed one at a time."""

    def enqueue(self, job: Job) -> None:
        """Add a queued job."""
        ...

    def claim(self, kinds: Sequence[str], now: datetime, lease_seconds: int) -> Job | None:
        """Take the oldest due job of these kinds (or one whose lease ran out): mark it
        running and count the attempt. Call inside a transaction."""
        ...

    def claim_one(self, job_id: str, now: datetime) -> Job | None:
        """Claim one specific queued job now, whatever its due time; None if it is not
        queued (another worker holds it, or it ended)."""
        ...

    def finish(self, job_id: str, result: dict[str, Any], now: datetime) -> None:
        """Mark done with its result."""
        ...

    def retry(self, job_id: str, error: str, next_attempt_at: datetime) -> None:
        """Back to queued, to run again at ``next_attempt_at``."""
        ...

    def release(self, job_id: str, claimed_at: datetime, now: datetime) -> bool:
        """Undo the claim made at ``claimed_at`` if the job still runs under it: queued again,
        due ``now``, the attempt not counted. False when the job has moved on."""
        ...

    def fail(self, job_id: str, error: str, now: datetime, *, keep_payload: bool = False) -> None:
        """Give up on the job; the error stays visible. Its payload is dropped unless
        ``keep_payload``."""
        ...

    def requeue(self, job_id: str, now: datetime) -> bool:
        """Queue a failed or waiting job again, due ``now``, attempts from zero; False when it
        is running or done."""
        ...

    def get(self, job_id: str) -> Job | None:
        """One job."""
        ...

    def recent(self, limit: int) -> list[Job]:
        """The newest jobs."""
        ...

    def counts(self) -> dict[str, int]:
        """Jobs by status."""
        ...
