"""The PostgreSQL store's connection pool (the transaction of the current thread, the write
lock) and how PostgreSQL holds values the shared row code writes: aware datetimes and JSONB."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from ..errors import StoreUnavailableError
from .row_dialect import RowDialect

if TYPE_CHECKING:
    from ..embedding import Vector

# One key for "a memoryd write transaction is open" (pg_advisory_xact_lock), another for
# "migrations are running".
WRITE_LOCK_KEY = 0x6D656D6F7279
MIGRATION_LOCK_KEY = 0x6D656D6F7280
# HNSW candidates examined per query: enough that status filters still leave k rows.
EF_SEARCH = 200


class PostgresDatabase:
    """A pool plus the transaction of the current thread (nested ``transaction`` joins it)."""

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self._local = threading.local()
        self.errors = psycopg
        try:
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True},
                configure=self._configure,
                open=True,
                timeout=15,
            )
            self.pool.wait(timeout=15)
        except Exception as error:  # psycopg_pool raises PoolTimeout; the cause says why
            raise StoreUnavailableError(
                f"cannot connect to PostgreSQL at {redacted_url(url)}: {_cause(error)}; check the "
                "URL, that the server runs, and the user's password"
            ) from None

    @staticmethod
    def _configure(connection: Any) -> None:
        connection.execute("SET TIME ZONE 'UTC'")
        row = connection.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone()
        if row is not None:
            from pgvector.psycopg import register_vector

            register_vector(connection)

    @property
    def current(self) -> Any | None:
        """The connection of this thread's open transaction, if any."""
        return getattr(self._local, "connection", None)

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        """Run in this thread's transaction, or alone (autocommit) outside one."""
        connection = self.current
        if connection is not None:
            return connection.execute(sql, params)
        with self.pool.connection() as fresh:
            cursor = fresh.execute(sql, params)
            # Rows must be read before the connection goes back to the pool.
            return _Buffered(cursor.fetchall() if cursor.description else [], cursor.rowcount)

    def select_in(self, select: str, column: str, values: Sequence[Any]) -> list[Any]:
        """The rows of ``select`` whose ``column`` is one of ``values`` (one array parameter)."""
        if not values:
            return []
        rows: list[Any] = self.execute(
            f"{select} WHERE {column} = ANY(%s)", (list(values),)
        ).fetchall()
        return rows

    @contextmanager
    def transaction(self, *, write_lock: bool = True) -> Iterator[None]:
        """This thread's transaction (joined when one is open), holding the memoryd write
        lock unless ``write_lock`` is off."""
        if self.current is not None:
            yield
            return
        with self._thread_connection() as connection, connection.transaction():
            if write_lock:
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read-only REPEATABLE READ transaction for this thread (joins an open one)."""
        if self.current is not None:
            yield
            return
        with self._thread_connection() as connection:
            connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield
            finally:
                connection.execute("COMMIT")

    @contextmanager
    def _thread_connection(self) -> Iterator[Any]:
        """A pooled connection that this thread's statements use until the block ends."""
        with self.pool.connection() as connection:
            self._local.connection = connection
            try:
                yield connection
            finally:
                self._local.connection = None

    def reconfigure(self) -> None:
        """Re-run the connection setup (the vector type now exists)."""
        self.pool.close()
        from psycopg_pool import ConnectionPool

        self.pool = ConnectionPool(
            self.url, min_size=1, max_size=8, kwargs={"autocommit": True},
            configure=self._configure, open=True, timeout=15,
        )  # fmt: skip

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()


class _Buffered:
    """Fetched rows of a statement run outside a transaction."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows


def redacted_url(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def _cause(error: BaseException) -> str:
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def stored_vector(value: Any) -> Vector:
    """A stored vector as float32 numpy (pgvector returns its own Vector type)."""
    import numpy as np

    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32).copy()


def vector_param(vector: Vector) -> Any:
    """A vector as the float32 array pgvector adapts."""
    import numpy as np

    return np.asarray(vector, dtype=np.float32)


def _same(value: Any) -> Any:
    """PostgreSQL hands back and takes aware datetimes as they are."""
    return value


def _object(stored: dict[str, Any] | None) -> dict[str, Any]:
    return dict(stored or {})


POSTGRES_ROWS = RowDialect(
    mark="%s",
    stored_time=_same,
    read_time=_same,
    stored_json=Jsonb,
    read_names=tuple,
    read_object=_object,
)
