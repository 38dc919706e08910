"""The job queue in the SQLite store (shared statements in job_rows). Claims run inside
BEGIN IMMEDIATE, so one writer claims at a time."""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.storage.job_rows import JobRows
from memoryd.storage.sqlite_connection import SQLITE_ROWS, SqliteConnection


class SqliteJobQueue(JobRows):
    """The jobs table. Claims run inside BEGIN IMMEDIATE, so one writer claims at a time."""

    def __init__(self, connection: SqliteConnection) -> None:
        super().__init__(connection, SQLITE_ROWS)

    def _due_job_id(self, kinds: Sequence[str], now: str, expired: str, ahead: str) -> str | None:
        row = self._db.execute(
            f"SELECT id FROM jobs WHERE kind IN ({SQLITE_ROWS.marks(len(kinds))}) AND "
            "((status = 'queued' AND (next_attempt_at <= ? OR next_attempt_at > ?)) OR "
            "(status = 'running' AND claimed_at <= ?)) ORDER BY next_attempt_at, id LIMIT 1",
            (*kinds, now, ahead, expired),
        ).fetchone()
        return str(row[0]) if row else None
