"""The job queue in the PostgreSQL store (shared statements in job_rows); a claim takes the
due row with FOR UPDATE SKIP LOCKED, so workers in other processes pass over it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memoryd.storage.job_rows import JobRows
from memoryd.storage.postgres_connection import POSTGRES_ROWS, PostgresDatabase


class PostgresJobQueue(JobRows):
    """The jobs table; claims take the row with FOR UPDATE SKIP LOCKED."""

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db, POSTGRES_ROWS)

    def _due_job_id(
        self, kinds: Sequence[str], now: datetime, expired: datetime, ahead: datetime
    ) -> str | None:
        row = self._db.execute(
            "SELECT id FROM jobs WHERE kind = ANY(%s) AND "
            "((status = 'queued' AND (next_attempt_at <= %s OR next_attempt_at > %s)) OR "
            "(status = 'running' AND claimed_at <= %s)) "
            "ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
            (list(kinds), now, ahead, expired),
        ).fetchone()
        return str(row[0]) if row else None
