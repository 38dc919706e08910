"""The audit log's rows, shared by the SQLite and PostgreSQL backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.memory.model import Actor, AuditEntry, Status
from memoryd.storage.row_dialect import RowDialect, SqlConnection

AUDIT_COLUMNS = "memory_id, at, actor, rule, action, from_status, to_status, reason"
# Entries come back in write order: a backend selects them with their id, last.
SELECT_AUDIT = f"SELECT {AUDIT_COLUMNS}, id FROM audit_log"
_INSERT = f"INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


def audit_params(entry: AuditEntry, dialect: RowDialect) -> tuple[Any, ...]:
    """An audit entry as row values, in AUDIT_COLUMNS order."""
    return (
        entry.memory_id,
        dialect.stored_time(entry.at),
        entry.actor.value,
        entry.rule,
        entry.action,
        entry.from_status.value if entry.from_status else None,
        entry.to_status.value,
        entry.reason,
    )


def audit_from_row(row: Sequence[Any], dialect: RowDialect) -> AuditEntry:
    """A SELECT_AUDIT row as an audit entry."""
    return AuditEntry(
        memory_id=row[0],
        at=dialect.read_time(row[1]),
        actor=Actor(row[2]),
        rule=row[3],
        action=row[4],
        from_status=Status(row[5]) if row[5] else None,
        to_status=Status(row[6]),
        reason=row[7],
    )


class AuditRows:
    """The audit_log table, the same on both backends."""

    def __init__(self, connection: SqlConnection, dialect: RowDialect) -> None:
        self._db = connection
        self._dialect = dialect

    def append(self, entry: AuditEntry) -> None:
        """Record one change."""
        self._db.execute(self._dialect.sql(_INSERT), audit_params(entry, self._dialect))

    def for_memories(self, memory_ids: Sequence[str]) -> list[AuditEntry]:
        """Entries of these memories in write order."""
        rows = self._db.select_in(SELECT_AUDIT, "memory_id", memory_ids)
        rows.sort(key=lambda row: row[-1])
        return [audit_from_row(row, self._dialect) for row in rows]
