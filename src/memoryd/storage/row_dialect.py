"""What the SQLite and PostgreSQL backends do differently with the same rows: the parameter
mark, and how times and JSON go into a column and come back out.

The shared row modules (memory_rows, job_rows, audit_rows, meta_rows, kb_rows) write their SQL
once, with ``?`` marks, and read and write values through a :class:`RowDialect`; what
both hand back for rows read at once is one :class:`FetchedRows`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Protocol

from memoryd.ids import prefix_bounds


class SqlConnection(Protocol):
    """What shared row code needs from a backend's connection."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any:
        """Run one statement; the result has ``fetchone``, ``fetchall`` and ``rowcount``."""
        ...

    def select_in(self, select: str, column: str, values: Sequence[Any]) -> list[Any]:
        """The rows of ``select`` (no WHERE of its own) whose ``column`` is one of ``values``,
        passed as the backend passes a list."""
        ...


class FetchedRows:
    """A statement's rows, read before its cursor went away (a read on SQLite's reader, a
    statement PostgreSQL ran outside a transaction): ``fetchone``, ``fetchall``, iteration and
    ``rowcount`` as a cursor has them (-1 for a read, as SQLite says)."""

    def __init__(self, rows: list[Any], rowcount: int = -1) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


class VectorTables(Protocol):
    """Whether the store's vector tables or columns exist yet (they follow ``init``)."""

    def has_vectors(self) -> bool:
        """True once the embedding signature is recorded."""
        ...

    def require_vectors(self) -> None:
        """Raise StoreUnavailableError while there is no embedding signature, and
        StoreMismatchError once the store records another model than this process uses."""
        ...

    def check_space(self) -> None:
        """Raise StoreMismatchError once the store records another model than this process
        embeds with (a re-embed switched it)."""
        ...


@dataclass(frozen=True)
class RowDialect:
    """A backend's parameter mark and value conversions (the only differences the shared
    row code sees)."""

    # "?" (SQLite) or "%s" (psycopg).
    mark: str
    # A time as stored (ISO text, or the aware datetime itself); None stays None.
    stored_time: Callable[[datetime | None], Any]
    # A stored, non-null time as an aware datetime.
    read_time: Callable[[Any], datetime]
    # A list or dict as stored (JSON text, or a JSONB adapter).
    stored_json: Callable[[Any], Any]
    # A stored, non-empty JSON list of names as a tuple.
    read_names: Callable[[Any], tuple[str, ...]]
    # A stored JSON object as a dict.
    read_object: Callable[[Any], dict[str, Any]]

    def sql(self, statement: str) -> str:
        """``statement`` (written with ``?`` marks) in this backend's parameter style."""
        return statement if self.mark == "?" else _percent_marks(statement)

    def marks(self, count: int) -> str:
        """``count`` parameter marks separated by commas."""
        return ", ".join([self.mark] * count)


@cache
def _percent_marks(statement: str) -> str:
    # Shared statements hold no literal "?" or "%"; psycopg needs "%s".
    return statement.replace("?", "%s")


def ids_starting(
    db: SqlConnection, dialect: RowDialect, table: str, prefix: str, limit: int
) -> list[str]:
    """Up to ``limit`` ids of ``table`` that start with ``prefix``, in id order: a range over
    the primary key (its bounds sort alike under any collation; see ``prefix_bounds``)."""
    low, high = prefix_bounds(prefix)
    sql = f"SELECT id FROM {table} WHERE id >= ?" + (" AND id < ?" if high else "")
    params: list[Any] = [low, high] if high else [low]
    rows = db.execute(dialect.sql(sql + " ORDER BY id LIMIT ?"), [*params, int(limit)])
    return [row[0] for row in rows.fetchall() if row[0].startswith(prefix)]
