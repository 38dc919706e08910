"""A re-embed's vector set in the SQLite store: ``memory_embeddings_next`` and
``chunk_vectors_next`` (float32 blobs by rowid), switched in by replacing the live tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.storage.next_vector_rows import NextVectorRows
from memoryd.storage.protocols import VectorSource
from memoryd.storage.sqlite_connection import SQLITE_ROWS, SqliteConnection, vector_blob
from memoryd.storage.sqlite_schema import chunk_vector_sql, vector_index_sql

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

_MISSING: dict[VectorSource, str] = {
    "memories": (
        "SELECT m.rowid, m.content FROM memories m WHERE m.rowid > ? AND m.purged_at IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM memory_embeddings_next n WHERE n.rowid = m.rowid) "
        "ORDER BY m.rowid LIMIT ?"
    ),
    "chunks": (
        "SELECT c.rowid, c.breadcrumb, c.text FROM chunks c WHERE c.rowid > ? "
        "AND NOT EXISTS (SELECT 1 FROM chunk_vectors_next n WHERE n.rowid = c.rowid) "
        "ORDER BY c.rowid LIMIT ?"
    ),
}
_EVERY: dict[VectorSource, str] = {
    "memories": (
        "SELECT rowid, content FROM memories WHERE rowid > ? AND purged_at IS NULL "
        "ORDER BY rowid LIMIT ?"
    ),
    "chunks": "SELECT rowid, breadcrumb, text FROM chunks WHERE rowid > ? ORDER BY rowid LIMIT ?",
}
_SAVE: dict[VectorSource, str] = {
    "memories": (
        "INSERT OR REPLACE INTO memory_embeddings_next(rowid, embedding) SELECT rowid, ? "
        "FROM memories WHERE rowid = ? AND purged_at IS NULL AND content = ?"
    ),
    "chunks": (
        "INSERT OR REPLACE INTO chunk_vectors_next(rowid, embedding) SELECT rowid, ? "
        "FROM chunks WHERE rowid = ? AND breadcrumb = ? AND text = ?"
    ),
}
_COUNTS: dict[VectorSource, str] = {
    "memories": (
        "SELECT (SELECT count(*) FROM memory_embeddings_next n JOIN memories m "
        "ON m.rowid = n.rowid WHERE m.purged_at IS NULL), "
        "(SELECT count(*) FROM memories WHERE purged_at IS NULL)"
    ),
    "chunks": (
        "SELECT (SELECT count(*) FROM chunk_vectors_next n JOIN chunks c ON c.rowid = n.rowid), "
        "(SELECT count(*) FROM chunks)"
    ),
}
_NEXT_TABLE = "CREATE TABLE {name} (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"


class SqliteNextVectors(NextVectorRows[SqliteConnection]):
    """The set in side tables; the switch rebuilds the vec0 tables for the new dimension."""

    _missing = _MISSING
    _every = _EVERY
    _save = _SAVE
    _counts = _COUNTS
    _drop_all = ("DELETE FROM memory_embeddings_next", "DELETE FROM chunk_vectors_next")

    def __init__(self, connection: SqliteConnection, on_switch: Any) -> None:
        super().__init__(connection, SQLITE_ROWS)
        self._on_switch = on_switch

    def _vector(self, vector: Vector) -> Any:
        return vector_blob(vector)

    def _switch(self, dimension: int) -> None:
        """Inside the caller's BEGIN IMMEDIATE: the next tables become the live ones (the
        old vectors go with secure_delete), the vec0 indexes are rebuilt for ``dimension``."""
        execute = self._db.execute
        execute("DROP TABLE memory_embeddings")
        execute("ALTER TABLE memory_embeddings_next RENAME TO memory_embeddings")
        execute(_NEXT_TABLE.format(name="memory_embeddings_next"))
        execute("DROP TABLE memory_bits")
        execute(vector_index_sql(dimension))
        execute(
            "INSERT INTO memory_bits(rowid, status, kind, bits) "
            "SELECT m.rowid, m.status, m.kind, vec_quantize_binary(e.embedding) "
            "FROM memory_embeddings e JOIN memories m ON m.rowid = e.rowid ORDER BY m.rowid"
        )
        execute("DROP TABLE chunk_vectors")
        execute(chunk_vector_sql(dimension))
        execute(
            "INSERT INTO chunk_vectors(rowid, embedding) SELECT n.rowid, n.embedding "
            "FROM chunk_vectors_next n JOIN chunks c ON c.rowid = n.rowid ORDER BY n.rowid"
        )
        execute("DELETE FROM chunk_vectors_next")
        execute("UPDATE chunks SET embedded = 1 WHERE embedded = 0")
        # Table rows' label vectors are of the old model: pending again (kb.rows).
        execute("UPDATE chunk_rows SET embedding = NULL")
        self._on_switch()
