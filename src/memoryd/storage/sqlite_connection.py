"""The SQLite store's one connection (a re-entrant lock, nestable transactions) and how
SQLite holds values the shared row code writes: ISO-8601 text times and JSON text."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlean as sqlite3

from ..clock import to_db
from ..errors import StoreUnavailableError
from .row_dialect import RowDialect

if TYPE_CHECKING:
    from ..embedding import Vector


class SqliteConnection:
    """One sqlite connection, serialised by a re-entrant lock, with nestable transactions."""

    def __init__(self, path: Path) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.raw = _connect(path)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement under the connection's lock."""
        with self.lock:
            return self.raw.execute(sql, params)

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
            if self.depth:
                self.depth += 1
                try:
                    yield
                finally:
                    self.depth -= 1
                return
            self.raw.execute("BEGIN IMMEDIATE")
            self.depth = 1
            try:
                yield
            except BaseException:
                self.raw.execute("ROLLBACK")
                raise
            else:
                self.raw.execute("COMMIT")
            finally:
                self.depth = 0


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
