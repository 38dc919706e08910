"""The SQLite store's one connection (a re-entrant lock, nestable transactions) and how
SQLite holds values the shared row code writes: ISO-8601 text times and JSON text."""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import re
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlean as sqlite3

from memoryd.clock import to_db
from memoryd.errors import StoreFullError, StoreUnavailableError
from memoryd.storage.full_disk import full_disk_reported, require_room
from memoryd.storage.row_dialect import FetchedRows, RowDialect

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

log = logging.getLogger("memoryd")


class SqliteConnection:
    """One writer connection, serialised by a re-entrant lock, with nestable transactions;
    and, for a file store, one read connection per thread, so readers run side by side.

    WAL lets readers and the writer proceed at once: a statement that only reads, from a
    thread that is not inside a write transaction, runs on that thread's own reader and sees
    the last committed state — never half of a transaction. A thread inside ``transaction``
    reads its own uncommitted writes on the writer. An in-memory store has one connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.raw = _connect(path)
        self._threads = threading.local()
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()
        self._parallel = str(path) != ":memory:"
        self._closed = False

    @property
    def writing(self) -> bool:
        """Whether this thread is inside a write transaction."""
        return bool(getattr(self._threads, "write_depth", 0))

    @property
    def reading(self) -> bool:
        """Whether this thread is inside a snapshot on its reader."""
        return bool(getattr(self._threads, "read_depth", 0))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement: a read on this thread's reader (rows fetched at once, so no
        read transaction stays open behind a half-read cursor), anything else on the writer
        under its lock."""
        reader = self._reader_for(sql)
        if reader is not None:
            if self.reading:
                return reader.execute(sql, params)
            return FetchedRows(reader.execute(sql, params).fetchall())
        with self.lock:
            try:
                with full_disk_reported(self.path):
                    return self.raw.execute(sql, params)
            except StoreFullError:
                if not self.writing:  # else the transaction's end trims the log
                    self._trim_torn_frame()
                raise

    def select_in(self, select: str, column: str, values: Sequence[Any]) -> list[Any]:
        """The rows of ``select`` whose ``column`` is one of ``values``, IN lists of at most
        500 marks so statements stay under SQLite's variable limit."""
        found: list[Any] = []
        values = list(values)
        for start in range(0, len(values), 500):
            group = values[start : start + 500]
            marks = ", ".join("?" * len(group))
            found.extend(self.execute(f"{select} WHERE {column} IN ({marks})", group).fetchall())
        return found

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE … COMMIT (ROLLBACK on any exception); nested calls join it."""
        with self.lock:
            depth = getattr(self._threads, "write_depth", 0)
            self._threads.write_depth = depth + 1
            try:
                if depth:
                    yield
                    return
                if self._parallel:  # a file store, not :memory:
                    require_room(self.path)
                self.raw.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    with full_disk_reported(self.path):
                        self.raw.execute("COMMIT")
                except BaseException as error:
                    self._roll_back()
                    if isinstance(error, StoreFullError):
                        self._trim_torn_frame()
                    raise
            finally:
                self._threads.write_depth = depth

    def _roll_back(self) -> None:
        # SQLite ends the transaction itself on some errors (SQLITE_FULL among them): a
        # ROLLBACK then would fail and hide the error worth reporting.
        if self.raw.in_transaction:
            self.raw.execute("ROLLBACK")

    def _trim_torn_frame(self) -> None:
        """After a write the full disk cut short: cut the write-ahead log back to whole frames.

        SQLite writes a frame as a header and a page; when the disk fills between them (or
        part-way through the page) the log ends in a partial frame past its committed end,
        which SQLite ignores — but a log whose size is not a whole number of frames is what a
        copy cut short looks like (``storage.sqlite.wal_damage``), so the next open would
        refuse the store as damaged. Under the log's write lock (BEGIN IMMEDIATE, which no
        other process can hold meanwhile) the torn bytes go; no committed frame is touched."""
        wal = Path(f"{self.path}-wal")
        try:
            self.raw.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:  # busy, or the disk refuses even that: leave it
            log.warning("could not trim the write-ahead log %s after a full disk: %s", wal, error)
            return
        try:
            whole = _whole_frames(wal)
            if whole is not None:
                os.truncate(wal, whole)
        except OSError as error:
            log.warning("could not trim the write-ahead log %s after a full disk: %s", wal, error)
        finally:
            self.raw.execute("ROLLBACK")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction for this thread: every read inside it sees the same committed
        state while other threads and processes go on writing. Inside a write transaction it
        joins that transaction; nested snapshots join the outer one."""
        if self.writing or self.reading:
            yield
            return
        if not self._parallel:
            with self.lock:
                self.raw.execute("BEGIN")
                self._threads.write_depth = 1
                try:
                    yield
                finally:
                    self._threads.write_depth = 0
                    self.raw.execute("COMMIT")
            return
        reader = self._own_reader()
        reader.execute("BEGIN")
        self._threads.read_depth = 1
        try:
            yield
        finally:
            self._threads.read_depth = 0
            reader.execute("COMMIT")

    def close(self) -> None:
        """Close the writer and every thread's reader."""
        with self.lock, self._readers_lock:
            self._closed = True
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            self.raw.close()

    def _reader_for(self, sql: str) -> Any | None:
        if not self._parallel or self.writing or not _reads_only(sql):
            return None
        return self._own_reader()

    def _own_reader(self) -> Any:
        reader = getattr(self._threads, "reader", None)
        if reader is None:
            with self._readers_lock:
                if self._closed:
                    raise StoreUnavailableError(f"store {self.path} is closed")
                reader = _connect(self.path)
                reader.execute("PRAGMA query_only = ON")
                self._readers.append(reader)
            self._threads.reader = reader
        return reader


# A statement is served by a reader when it starts with SELECT (or WITH … SELECT) and names
# no writing verb; everything else — PRAGMAs included — goes to the writer.
_READ_START = re.compile(r"\s*(SELECT|WITH)\b", re.IGNORECASE)
_WRITE_VERB = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def _reads_only(sql: str) -> bool:
    return _READ_START.match(sql) is not None and _WRITE_VERB.search(sql) is None


_WAL_HEADER = 32
_FRAME_HEADER = 24


def _whole_frames(wal: Path) -> int | None:
    """The size ``wal`` has without a partial frame at its end, or None when it has none."""
    try:
        with wal.open("rb") as handle:
            header = handle.read(_WAL_HEADER)
            size = handle.seek(0, os.SEEK_END)
    except FileNotFoundError:
        return None
    if size < _WAL_HEADER:
        return 0 if size else None  # a header the disk cut short: an empty log
    frame = _FRAME_HEADER + struct.unpack(">I", header[8:12])[0]
    whole = _WAL_HEADER + (size - _WAL_HEADER) // frame * frame
    return whole if whole < size else None


def _connect(path: Path) -> Any:
    if str(path) != ":memory:":
        if path.is_dir():
            raise StoreUnavailableError(
                f"cannot open store {path}: it is a directory; pass a file path with --db "
                "or MEMORYD_DB"
            )
        if not path.parent.is_dir():
            raise StoreUnavailableError(
                f"cannot open store {path}: directory {path.parent} does not exist; create it "
                "or choose another path with --db or MEMORYD_DB"
            )
    try:
        raw = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        raw.enable_load_extension(True)
        raw.load_extension(sqlite_vec_extension())
        raw.enable_load_extension(False)
        raw.execute("PRAGMA busy_timeout = 10000")
    except sqlite3.DatabaseError as error:
        raise StoreUnavailableError(
            f"cannot open store {path}: {error}; is this a memoryd store? Point --db or "
            "MEMORYD_DB at a memoryd file, or run `memoryd init` on a new path"
        ) from None
    return raw


def sqlite_vec_extension() -> str:
    """The sqlite-vec loadable extension that the sqlite_vec package ships (what its
    ``loadable_path()`` returns), found without importing the package: its ``__init__``
    imports numpy, which opening a store does not need."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise StoreUnavailableError(
            "the sqlite-vec extension is not installed; reinstall memoryd (pip install memoryd)"
        )
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")


def vector_blob(vector: Vector) -> bytes:
    """A vector as sqlite-vec's float32 blob."""
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def stored_vector(blob: bytes) -> Vector:
    """A float32 blob (:func:`vector_blob`) as a float32 numpy vector of its own."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32).copy()


# Recall reads the same memories' names again and again (a few hundred rows a message): the
# parsed tuples of recent name lists are kept (~2 µs of JSON each otherwise).
@functools.lru_cache(maxsize=4096)
def _names(stored: str) -> tuple[str, ...]:
    return tuple(json.loads(stored))


def _object(stored: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(stored)
    return found


SQLITE_ROWS = RowDialect(
    mark="?",
    stored_time=to_db,
    # Stored times are fixed-width UTC ISO-8601 text (clock.to_db): the C parser reads them.
    read_time=datetime.fromisoformat,
    stored_json=json.dumps,
    read_names=_names,
    read_object=_object,
)
