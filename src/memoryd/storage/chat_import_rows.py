"""The record of imported conversation messages, shared by the SQLite and PostgreSQL stores:
which owner messages `memoryd import-chats` already queued, so a second import queues nothing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memoryd.storage.row_dialect import RowDialect, SqlConnection

# The job ids are kept so an export carries the link from each message to the job it became.

_IMPORTED = "SELECT conversation_id, message_id FROM imported_chats WHERE source = ?"
_ALL = (
    "SELECT source, conversation_id, message_id, job_id, imported_at FROM imported_chats "
    "ORDER BY source, conversation_id, message_id"
)
_RECORD = (
    "INSERT INTO imported_chats (source, conversation_id, message_id, job_id, imported_at) "
    "VALUES (?, ?, ?, ?, ?)"
)


class ImportedChatRows:
    """The ``imported_chats`` table."""

    def __init__(self, connection: SqlConnection, dialect: RowDialect) -> None:
        self._db = connection
        self._dialect = dialect

    def imported(self, source: str) -> frozenset[tuple[str, str]]:
        """Every ``(conversation id, message id)`` already imported from ``source``."""
        rows = self._db.execute(self._dialect.sql(_IMPORTED), (source,)).fetchall()
        return frozenset((str(row[0]), str(row[1])) for row in rows)

    def rows(self) -> list[tuple[str, str, str, str, datetime]]:
        """Every imported message as ``(source, conversation id, message id, job id, imported
        at)``, in key order (for export)."""
        read_time = self._dialect.read_time
        return [
            (str(r[0]), str(r[1]), str(r[2]), str(r[3]), read_time(r[4]))
            for r in self._db.execute(_ALL).fetchall()
        ]

    def record(
        self, source: str, conversation_id: str, queued: Sequence[tuple[str, str]], at: datetime
    ) -> None:
        """Record a conversation's ``(message id, job id)`` pairs as imported (inside the
        transaction that queued the jobs)."""
        stored = self._dialect.stored_time(at)
        statement = self._dialect.sql(_RECORD)
        for message_id, job_id in queued:
            self._db.execute(statement, (source, conversation_id, message_id, job_id, stored))
