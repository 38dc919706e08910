"""The vector set a re-embed fills for another model, beside the live one: what both backends
share (the target in meta, the missing rows, saving against the row's text, the counts).

A backend gives the statements (SQLite keeps the set in side tables keyed by rowid, PostgreSQL
in an ``embedding_next`` column) and its :meth:`NextVectorRows._switch`, which makes the set
the store's vectors inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memoryd.kb.model import embedded_text
from memoryd.storage.protocols import VECTOR_SOURCES, EmbeddingSignature, PendingText, VectorSource
from memoryd.storage.row_dialect import RowDialect, SqlConnection

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

# Where the target lives while the set is filled (a rerun resumes towards it).
TARGET_MODEL = "reembed_model"
TARGET_DIMENSION = "reembed_dimension"
_GET = "SELECT value FROM meta WHERE key = ?"
_SET = (
    "INSERT INTO meta(key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_FORGET_TARGET = f"DELETE FROM meta WHERE key IN ('{TARGET_MODEL}', '{TARGET_DIMENSION}')"
_RECORD_SIGNATURE = "UPDATE meta SET value = ? WHERE key = ?"

ConnectionT = TypeVar("ConnectionT", bound=SqlConnection)


class NextVectorRows(Generic[ConnectionT]):
    """The set's rows. A backend sets ``_missing``, ``_every``, ``_save``, ``_counts`` (per
    source, with ``?`` marks), ``_drop_all`` and implements ``_switch``."""

    _missing: dict[VectorSource, str]
    _every: dict[VectorSource, str]
    _save: dict[VectorSource, str]
    _counts: dict[VectorSource, str]
    _drop_all: tuple[str, ...]

    def __init__(self, connection: ConnectionT, dialect: RowDialect) -> None:
        self._db = connection
        self._dialect = dialect

    def target(self) -> EmbeddingSignature | None:
        """The model the set is being filled for, if a re-embed is under way."""
        model = self._meta(TARGET_MODEL)
        dimension = self._meta(TARGET_DIMENSION)
        if model is None or dimension is None:
            return None
        return EmbeddingSignature(model, int(dimension))

    def begin(self, target: EmbeddingSignature) -> int:
        """Record the target; vectors filled for another one are dropped (their count)."""
        dropped = 0
        if self.target() != target:
            dropped = self._drop()
        sql = self._dialect.sql(_SET)
        self._db.execute(sql, (TARGET_MODEL, target.model))
        self._db.execute(sql, (TARGET_DIMENSION, str(target.dimension)))
        return dropped

    def missing(
        self, source: VectorSource, after: int, limit: int, *, every: bool = False
    ) -> list[PendingText]:
        """Rows past ``after`` still without a vector in the set (``every``: all rows that
        need one), in key order."""
        sql = (self._every if every else self._missing)[source]
        rows = self._db.execute(self._dialect.sql(sql), (int(after), int(limit))).fetchall()
        if source == "memories":
            return [PendingText(int(r[0]), str(r[1]), (str(r[1]),)) for r in rows]
        return [
            PendingText(int(r[0]), embedded_text(str(r[1]), str(r[2])), (str(r[1]), str(r[2])))
            for r in rows
        ]

    def save(
        self, source: VectorSource, texts: Sequence[PendingText], vectors: Sequence[Vector]
    ) -> int:
        """Each vector for its row, if the row still holds the text that was embedded (a
        purged memory or a replaced chunk gets none); returns how many were stored."""
        sql = self._dialect.sql(self._save[source])
        stored = 0
        for pending, vector in zip(texts, vectors, strict=True):
            cursor = self._db.execute(sql, (self._vector(vector), pending.key, *pending.match))
            stored += max(cursor.rowcount, 0)
        return stored

    def counts(self) -> dict[VectorSource, tuple[int, int]]:
        """(rows with a vector in the set, rows that need one), per source."""
        found: dict[VectorSource, tuple[int, int]] = {}
        for source in VECTOR_SOURCES:
            done, total = self._db.execute(self._counts[source]).fetchone()
            found[source] = (int(done or 0), int(total or 0))
        return found

    def switch(self) -> int:
        """Switch to the set when no row is missing a vector (0), else the number missing."""
        target = self.target()
        if target is None:
            raise RuntimeError("no re-embed is under way")
        missing = sum(total - done for done, total in self.counts().values())
        if missing:
            return missing
        self._switch(target.dimension)
        sql = self._dialect.sql(_RECORD_SIGNATURE)
        self._db.execute(sql, (target.model, "embedding_model"))
        self._db.execute(sql, (str(target.dimension), "embedding_dimension"))
        self._db.execute(_FORGET_TARGET)
        return 0

    def _drop(self) -> int:
        dropped = sum(done for done, _ in self.counts().values())
        for statement in self._drop_all:
            self._db.execute(statement)
        return dropped

    def _meta(self, key: str) -> str | None:
        row = self._db.execute(self._dialect.sql(_GET), (key,)).fetchone()
        return str(row[0]) if row else None

    def _vector(self, vector: Vector) -> Any:
        raise NotImplementedError

    def _switch(self, dimension: int) -> None:
        raise NotImplementedError
