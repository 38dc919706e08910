"""A re-embed's vector set in the PostgreSQL store: an ``embedding_next`` column beside
``embedding`` in memories and chunks, switched in by replacing the column and its index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.storage.next_vector_rows import NextVectorRows
from memoryd.storage.postgres_connection import POSTGRES_ROWS, PostgresDatabase, vector_param
from memoryd.storage.postgres_schema import vector_columns_sql
from memoryd.storage.protocols import VectorSource

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

_MISSING: dict[VectorSource, str] = {
    "memories": (
        "SELECT seq, content FROM memories WHERE seq > ? AND purged_at IS NULL "
        "AND embedding_next IS NULL ORDER BY seq LIMIT ?"
    ),
    "chunks": (
        "SELECT seq, breadcrumb, text FROM chunks WHERE seq > ? AND embedding_next IS NULL "
        "ORDER BY seq LIMIT ?"
    ),
}
_EVERY: dict[VectorSource, str] = {
    "memories": (
        "SELECT seq, content FROM memories WHERE seq > ? AND purged_at IS NULL ORDER BY seq LIMIT ?"
    ),
    "chunks": "SELECT seq, breadcrumb, text FROM chunks WHERE seq > ? ORDER BY seq LIMIT ?",
}
_SAVE: dict[VectorSource, str] = {
    "memories": (
        "UPDATE memories SET embedding_next = ? WHERE seq = ? AND purged_at IS NULL AND content = ?"
    ),
    "chunks": "UPDATE chunks SET embedding_next = ? WHERE seq = ? AND breadcrumb = ? AND text = ?",
}
_COUNTS: dict[VectorSource, str] = {
    "memories": "SELECT count(embedding_next), count(*) FROM memories WHERE purged_at IS NULL",
    "chunks": "SELECT count(embedding_next), count(*) FROM chunks",
}


class PostgresNextVectors(NextVectorRows[PostgresDatabase]):
    """The set in ``embedding_next``; the switch gives it the live column's name, the
    target's dimension and the HNSW index."""

    _missing = _MISSING
    _every = _EVERY
    _save = _SAVE
    _counts = _COUNTS
    _drop_all = (
        "UPDATE memories SET embedding_next = NULL WHERE embedding_next IS NOT NULL",
        "UPDATE chunks SET embedding_next = NULL WHERE embedding_next IS NOT NULL",
    )

    def __init__(self, database: PostgresDatabase) -> None:
        super().__init__(database, POSTGRES_ROWS)

    def _vector(self, vector: Vector) -> Any:
        return vector_param(vector)

    def _switch(self, dimension: int) -> None:
        """Inside the caller's transaction (DDL is transactional here): the old column and
        its index go, the filled one takes their place with its dimension and a new index."""
        size = int(dimension)
        for table in ("memories", "chunks"):
            self._db.execute(f"DROP INDEX IF EXISTS {table}_embedding_hnsw")
            self._db.execute(f"ALTER TABLE {table} DROP COLUMN embedding")
            self._db.execute(f"ALTER TABLE {table} RENAME COLUMN embedding_next TO embedding")
            self._db.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({size})")
            self._db.execute(f"ALTER TABLE {table} ADD COLUMN embedding_next vector")
        for statement in vector_columns_sql(size):
            self._db.execute(statement)
        # Table rows' label vectors are of the old model: pending again (kb.rows).
        self._db.execute("UPDATE chunk_rows SET embedding = NULL")
