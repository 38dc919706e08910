"""The job queue's rows, shared by the SQLite and PostgreSQL backends: the columns, a job as
parameters and back, and every statement but the choice of the next due job (which is where
the backends' locking differs)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from memoryd.jobs.model import Job, JobStatus
from memoryd.storage.row_dialect import RowDialect, SqlConnection

JOB_COLUMNS = (
    "id, kind, payload, status, attempts, next_attempt_at, created_at, claimed_at, finished_at, "
    "last_error, result"
)
_INSERT = f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_BY_ID = f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?"
_RECENT = f"SELECT {JOB_COLUMNS} FROM jobs ORDER BY id DESC LIMIT ?"
_START = "UPDATE jobs SET status = 'running', attempts = attempts + 1, claimed_at = ? WHERE id = ?"
_START_IF_QUEUED = _START + " AND status = 'queued'"
# The conversation text is not needed once extracted, or once given up on: keep no copy of it.
_FINISH = (
    "UPDATE jobs SET status = 'done', finished_at = ?, result = ?, last_error = NULL, "
    "payload = '{}' WHERE id = ?"
)
_RETRY = (
    "UPDATE jobs SET status = 'queued', next_attempt_at = ?, last_error = ?, "
    "claimed_at = NULL WHERE id = ?"
)
_RELEASE = (
    "UPDATE jobs SET status = 'queued', attempts = attempts - 1, claimed_at = NULL, "
    "next_attempt_at = ? WHERE id = ? AND status = 'running' AND claimed_at = ?"
)
_FAIL = (
    "UPDATE jobs SET status = 'failed', finished_at = ?, last_error = ?, payload = '{}' "
    "WHERE id = ?"
)
_GIVE_UP = "UPDATE jobs SET status = 'failed', finished_at = ?, last_error = ? WHERE id = ?"
_REQUEUE = (
    "UPDATE jobs SET status = 'queued', attempts = 0, next_attempt_at = ?, claimed_at = NULL, "
    "finished_at = NULL WHERE id = ? AND status IN ('failed', 'queued')"
)
_COUNTS = "SELECT status, count(*) FROM jobs GROUP BY status"


def job_params(job: Job, dialect: RowDialect) -> tuple[Any, ...]:
    """A job as row values, in JOB_COLUMNS order."""
    stored_time = dialect.stored_time
    return (
        job.id, job.kind, dialect.stored_json(job.payload), job.status.value, job.attempts,
        stored_time(job.next_attempt_at), stored_time(job.created_at),
        stored_time(job.claimed_at), stored_time(job.finished_at), job.last_error,
        dialect.stored_json(job.result) if job.result is not None else None,
    )  # fmt: skip


def job_from_row(row: Sequence[Any], dialect: RowDialect) -> Job:
    """A JOB_COLUMNS row as a job."""
    read_time = dialect.read_time
    return Job(
        id=row[0],
        kind=row[1],
        payload=dialect.read_object(row[2]),
        status=JobStatus(row[3]),
        attempts=int(row[4]),
        next_attempt_at=read_time(row[5]),
        created_at=read_time(row[6]),
        claimed_at=read_time(row[7]) if row[7] is not None else None,
        finished_at=read_time(row[8]) if row[8] is not None else None,
        last_error=row[9],
        result=dialect.read_object(row[10]) if row[10] is not None else None,
    )


# No retry waits longer than an hour (jobs.RetryPolicy's last step): a queued job due more
# than this ahead was scheduled by a clock that has since gone back (a wrong time corrected, a
# restored snapshot), and runs now rather than a day — or a year — late.
CLOCK_WENT_BACK = timedelta(hours=2)


class JobRows:
    """The jobs table as both backends run it; a backend adds ``_due_job_id``, the one query
    whose locking differs."""

    def __init__(self, connection: SqlConnection, dialect: RowDialect) -> None:
        self._db = connection
        self._dialect = dialect

    def enqueue(self, job: Job) -> None:
        """Add a queued job."""
        self._db.execute(self._dialect.sql(_INSERT), job_params(job, self._dialect))

    def claim(self, kinds: Sequence[str], now: datetime, lease_seconds: int) -> Job | None:
        """The oldest due job of these kinds, or a running one whose lease ran out."""
        if not kinds:
            return None
        stored_time = self._dialect.stored_time
        job_id = self._due_job_id(
            kinds,
            stored_time(now),
            stored_time(now - timedelta(seconds=lease_seconds)),
            stored_time(now + CLOCK_WENT_BACK),
        )
        if job_id is None:
            return None
        self._db.execute(self._dialect.sql(_START), (stored_time(now), job_id))
        return self.get(job_id)

    def claim_one(self, job_id: str, now: datetime) -> Job | None:
        """Claim a specific queued job now (``observe --wait``); None when another worker
        holds it or it has ended."""
        cursor = self._db.execute(
            self._dialect.sql(_START_IF_QUEUED), (self._dialect.stored_time(now), job_id)
        )
        return self.get(job_id) if cursor.rowcount else None

    def finish(self, job_id: str, result: dict[str, Any], now: datetime) -> None:
        """Mark done; the payload is dropped."""
        dialect = self._dialect
        self._db.execute(
            dialect.sql(_FINISH),
            (dialect.stored_time(now), dialect.stored_json(result), job_id),
        )

    def retry(self, job_id: str, error: str, next_attempt_at: datetime) -> None:
        """Back to the queue."""
        dialect = self._dialect
        self._db.execute(dialect.sql(_RETRY), (dialect.stored_time(next_attempt_at), error, job_id))

    def release(self, job_id: str, claimed_at: datetime, now: datetime) -> bool:
        """Undo the claim made at ``claimed_at`` if the job still runs under it: queued again,
        due ``now``, the attempt not counted. False when the job has moved on."""
        stored_time = self._dialect.stored_time
        cursor = self._db.execute(
            self._dialect.sql(_RELEASE), (stored_time(now), job_id, stored_time(claimed_at))
        )
        return bool(cursor.rowcount)

    def fail(self, job_id: str, error: str, now: datetime, *, keep_payload: bool = False) -> None:
        """Give up; the payload is dropped unless ``keep_payload`` (a job that failed because
        its endpoint was away, which the owner may retry)."""
        dialect = self._dialect
        sql = _GIVE_UP if keep_payload else _FAIL
        self._db.execute(dialect.sql(sql), (dialect.stored_time(now), error, job_id))

    def requeue(self, job_id: str, now: datetime) -> bool:
        """A failed (or waiting) job queued again, due ``now``, its attempts counted afresh;
        False when it is neither."""
        dialect = self._dialect
        cursor = self._db.execute(dialect.sql(_REQUEUE), (dialect.stored_time(now), job_id))
        return bool(cursor.rowcount)

    def get(self, job_id: str) -> Job | None:
        """One job."""
        row = self._db.execute(self._dialect.sql(_BY_ID), (job_id,)).fetchone()
        return job_from_row(row, self._dialect) if row else None

    def recent(self, limit: int) -> list[Job]:
        """Newest first."""
        rows = self._db.execute(self._dialect.sql(_RECENT), (int(limit),)).fetchall()
        return [job_from_row(row, self._dialect) for row in rows]

    def counts(self) -> dict[str, int]:
        """Jobs by status."""
        rows = self._db.execute(_COUNTS).fetchall()
        return {row[0]: int(row[1]) for row in rows}

    def _due_job_id(self, kinds: Sequence[str], now: Any, expired: Any, ahead: Any) -> str | None:
        """The id of the job to claim next, or None (backend SQL; ``now``, ``expired`` and
        ``ahead`` — past it a queued job's time came from a clock since gone back — are
        stored times)."""
        raise NotImplementedError
