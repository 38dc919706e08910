"""The PostgreSQL store's connection pool (the transaction of the current thread, the write
lock) and how PostgreSQL holds values the shared row code writes: aware datetimes and JSONB."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from memoryd.errors import StoreNotAnsweringError, StoreUnavailableError
from memoryd.storage.row_dialect import FetchedRows, RowDialect

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

# One key for "a memoryd write transaction is open" (pg_advisory_xact_lock), another for
# "migrations are running".
WRITE_LOCK_KEY = 0x6D656D6F7279
MIGRATION_LOCK_KEY = 0x6D656D6F7280
# HNSW candidates examined per query: enough that status filters still leave k rows.
EF_SEARCH = 200
POOL_SIZE = 8
# How long opening the store waits for its first connection (a server still starting).
OPEN_WAIT_SECONDS = 15
# A request waits for a pooled connection in slices of this long: once the server is known not
# to answer, one slice and the request fails with 503 (it does not hold its client, or one of
# the server's few request threads, through a restart); while the server answers but every
# connection is busy, slice after slice up to BUSY_WAIT_SECONDS.
REQUEST_WAIT_SECONDS = 0.5
BUSY_WAIT_SECONDS = 15.0
CONNECT_TIMEOUT_SECONDS = 3
# The pool stops one reconnection attempt after this; the next request starts another, so
# a server that is back is found within about a second of the next request.
RECONNECT_GIVE_UP_SECONDS = 3
# What a caller is told to wait (HTTP Retry-After) when the server is not answering.
RETRY_AFTER_SECONDS = 2
# admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down).
SHUTDOWN_STATES = frozenset({"57P01", "57P02", "57P03"})


class PostgresDatabase:
    """A pool plus the transaction of the current thread (nested ``transaction`` joins it).

    Every psycopg error that means "the server is not answering" (refused, restarting, shut
    down, the connection cut mid-statement, no connection in time) leaves this class as
    :class:`StoreNotAnsweringError`, in one place (:meth:`_answering`). Broken connections are
    checked for when lent and dropped when returned, so the pool heals once the server is back.

    Nothing is retried here. A transaction is the service's code between BEGIN and COMMIT (new
    ids, clock readings, embeddings), which cannot be replayed from below; and a connection
    lost while COMMIT is in flight leaves unknown whether the write landed, so a blind retry
    could store it twice. A write is acknowledged only after its COMMIT returned; a cut-off one
    answers 503 and the caller retries (the same text remembered again reinforces the memory
    it made, if it did land, rather than adding a second one).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()
        import psycopg

        self.errors = psycopg
        # False from the first sign the server went away until a new connection is set up:
        # requests then give up after one REQUEST_WAIT_SECONDS instead of BUSY_WAIT_SECONDS.
        self._answering_now = True
        pool = None
        try:
            pool = self._new_pool()
            pool.wait(timeout=OPEN_WAIT_SECONDS)
        except Exception as error:  # psycopg_pool raises PoolTimeout; the cause says why
            if pool is not None:
                pool.close()
            raise StoreUnavailableError(
                f"cannot connect to PostgreSQL at {redacted_url(url)}: {_cause(error)}; check the "
                "URL, that the server runs, and the user's password"
            ) from None
        self.pool = pool

    def _new_pool(self) -> Any:
        from psycopg_pool import ConnectionPool

        return ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_SECONDS},
            configure=self._configure,
            check=self._check,
            open=True,
            timeout=REQUEST_WAIT_SECONDS,
            reconnect_timeout=RECONNECT_GIVE_UP_SECONDS,
        )

    def _configure(self, connection: Any) -> None:
        connection.execute("SET TIME ZONE 'UTC'")
        row = connection.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone()
        if row is not None:
            from pgvector.psycopg import register_vector

            register_vector(connection)
        self._answering_now = True

    def _check(self, connection: Any) -> None:
        """Before a pooled connection is lent: a round trip, so one the server closed (a
        restart, ``pg_terminate_backend``) is discarded instead of failing the request."""
        from psycopg_pool import ConnectionPool

        try:
            ConnectionPool.check_connection(connection)
        except Exception:
            self._answering_now = False
            raise

    @property
    def current(self) -> Any | None:
        """The connection of this thread's open transaction, if any."""
        return getattr(self._local, "connection", None)

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        """Run in this thread's transaction, or alone (autocommit) outside one."""
        connection = self.current
        with self._answering():
            if connection is not None:
                return connection.execute(sql, params)
            with self.connection() as fresh:
                cursor = fresh.execute(sql, params)
                # Rows must be read before the connection goes back to the pool.
                return FetchedRows(cursor.fetchall() if cursor.description else [], cursor.rowcount)

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
        with (
            self._answering(),
            self._thread_connection() as connection,
            connection.transaction(),
        ):
            if write_lock:
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read-only REPEATABLE READ transaction for this thread (joins an open one)."""
        if self.current is not None:
            yield
            return
        with self._answering(), self._thread_connection() as connection:
            connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield
            finally:
                if not connection.broken:
                    connection.execute("COMMIT")

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection for the block (autocommit), or :class:`StoreNotAnsweringError`
        when none comes: within REQUEST_WAIT_SECONDS once the server is not answering, else
        within BUSY_WAIT_SECONDS (every connection busy under load is no reason to fail)."""
        from psycopg_pool import PoolTimeout

        waited = 0.0
        with self._answering():
            while True:
                try:
                    lent = self.pool.getconn(timeout=REQUEST_WAIT_SECONDS)
                    break
                except PoolTimeout:
                    waited += REQUEST_WAIT_SECONDS
                    if not self._answering_now or waited >= BUSY_WAIT_SECONDS:
                        raise
            try:
                with lent:
                    yield lent
            finally:
                self.pool.putconn(lent)

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """Turn psycopg's "the server is gone" errors into :class:`StoreNotAnsweringError`."""
        try:
            yield
        except self.errors.OperationalError as error:
            if not server_gone(error):
                raise
            self._answering_now = False
            raise StoreNotAnsweringError(
                f"PostgreSQL at {redacted_url(self.url)} is not answering ({_cause(error)}); "
                "memoryd retries by itself: try again in a few seconds",
                retry_after=RETRY_AFTER_SECONDS,
            ) from error

    @contextmanager
    def _thread_connection(self) -> Iterator[Any]:
        """A pooled connection that this thread's statements use until the block ends."""
        with self.connection() as connection:
            self._local.connection = connection
            try:
                yield connection
            finally:
                self._local.connection = None

    def reconfigure(self) -> None:
        """Re-run the connection setup (the vector type now exists)."""
        self.pool.close()
        self.pool = self._new_pool()

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()


def server_gone(error: BaseException) -> bool:
    """Whether a psycopg error means the server is not answering — refused or cut off
    (no SQLSTATE: the client saw it), a connection exception (class 08), the server shutting
    down or starting up (57P01-57P03), or no pooled connection in time — rather than a
    statement the server refused."""
    from psycopg_pool import PoolTimeout

    if isinstance(error, PoolTimeout):
        return True
    state = getattr(error, "sqlstate", None)
    if state is None:
        return True
    return str(state).startswith("08") or state in SHUTDOWN_STATES


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


def hnsw_rows(db: PostgresDatabase, sql: str, params: Sequence[Any], k: int) -> list[Any]:
    """The rows of an HNSW nearest-``k`` query: the index examines at least EF_SEARCH
    candidates and scans on (iterative, relaxed order) while filters leave fewer than k, so
    the caller sorts the rows by distance again (near-ties may come slightly out of order)."""
    with db.transaction(write_lock=False):
        db.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(k) * 2)}")
        db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        return list(db.execute(sql, params).fetchall())


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
