"""The knowledge base in the PostgreSQL store: documents, and chunks whose tsvector and
vector live in the row (shared statements in kb_rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memoryd.kb.model import Chunk, ChunkKey
from memoryd.storage.kb_rows import (
    CHUNK_COLUMNS,
    ROWS_PER_CHUNK,
    DocumentRows,
    chunks_by_key,
    first_chunks,
)
from memoryd.storage.postgres_connection import (
    POSTGRES_ROWS,
    PostgresDatabase,
    hnsw_rows,
    stored_vector,
    vector_param,
)
from memoryd.storage.postgres_text import idf_ranked_sql
from memoryd.storage.row_dialect import VectorTables

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector


class PostgresKnowledgeStore(DocumentRows):
    """Documents and chunks; a chunk's tsvector and vector live in its row."""

    PENDING_VECTOR = "embedding IS NULL"
    VECTOR_COLUMN = "embedding"
    VECTORS_BY_POSITION = (
        "SELECT position, embedding FROM chunks WHERE document_id = ? AND embedding IS NOT NULL"
    )

    def __init__(
        self, db: PostgresDatabase, vector_tables: VectorTables, *, idf_weighting: bool = True
    ) -> None:
        super().__init__(db, POSTGRES_ROWS, vector_tables)
        self._database = db
        self._idf_weighting = idf_weighting

    def _drop_chunks(self, document_id: str) -> None:
        """The chunks; their table rows go with them (a cascading key)."""
        self._db.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))

    def _vector_value(self, vector: Vector | None) -> Any:
        """The vector in the chunk's row (NULL: pending)."""
        return None if vector is None else vector_param(vector)

    def _stored_vector(self, value: Any) -> Vector:
        return stored_vector(value)

    def pending_chunks(self, document_id: str, limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks whose vector is NULL (every chunk before the store has its
        vector column), in position order."""
        if not self._vector_tables.has_vectors():
            return self.chunks(document_id)[: max(limit, 0)]
        return super().pending_chunks(document_id, limit)

    def _save_chunk_vector(self, chunk: Chunk, vector: Vector) -> bool:
        cursor = self._db.execute(
            "UPDATE chunks SET embedding = %s WHERE document_id = %s AND position = %s "
            "AND breadcrumb = %s AND text = %s AND embedding IS NULL",
            (vector_param(vector), chunk.document_id, chunk.position, chunk.breadcrumb, chunk.text),
        )
        return int(cursor.rowcount) > 0

    def vector_counts(self, document_ids: Sequence[str]) -> dict[str, int]:
        """Chunks with a vector, per document that has chunks."""
        if not document_ids:
            return {}
        counted = "count(embedding)" if self._vector_tables.has_vectors() else "0"
        rows = self._db.execute(
            f"SELECT document_id, {counted} FROM chunks WHERE document_id = ANY(%s) "
            "GROUP BY document_id",
            (sorted(set(document_ids)),),
        ).fetchall()
        return {str(row[0]): int(row[1]) for row in rows}

    def delete_document(self, document_id: str) -> None:
        """The document and its chunks."""
        self._drop_chunks(document_id)
        self._db.execute("DELETE FROM documents WHERE id = %s", (document_id,))

    def chunks_by_key(self, keys: Sequence[ChunkKey]) -> dict[ChunkKey, Chunk]:
        """Chunks by (document, position)."""
        if not keys:
            return {}
        rows = self._db.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN unnest(%s::text[], %s::int[]) "
            "AS k(document_id, position) USING (document_id, position)",
            ([k.document_id for k in keys], [k.position for k in keys]),
        ).fetchall()
        return chunks_by_key(rows)

    def nearest_chunks(
        self, vector: Vector, k: int, documents: Sequence[str] | None = None
    ) -> list[tuple[ChunkKey, float]]:
        """HNSW cosine KNN over chunks of ready documents; within ``documents`` only, when
        given (exact: a named document's chunks are few)."""
        if k <= 0 or not self._vector_tables.has_vectors():
            return []
        if documents is not None and not documents:
            return []
        self._vector_tables.check_space()
        query = vector_param(vector)
        if documents is not None:
            rows = self._db.execute(
                "SELECT c.document_id, c.position, c.embedding <=> %s AS distance FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE d.status = 'ready' "
                "AND c.embedding IS NOT NULL AND c.document_id = ANY(%s) "
                "ORDER BY 3, c.document_id, c.position LIMIT %s",
                (query, list(documents), int(k)),
            ).fetchall()
        else:
            rows = hnsw_rows(
                self._database,
                "SELECT c.document_id, c.position, c.embedding <=> %s AS distance "
                "FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.status = 'ready' AND c.embedding IS NOT NULL "
                "ORDER BY c.embedding <=> %s LIMIT %s",
                (query, query, int(k)),
                k,
            )
        hits = [(ChunkKey(row[0], int(row[1])), 1.0 - float(row[2])) for row in rows]
        return sorted(hits, key=lambda hit: -hit[1])

    def keyword_chunks(
        self, terms: Sequence[str], k: int, documents: Sequence[str] | None = None
    ) -> list[ChunkKey]:
        """IDF-weighted full-text ranking over breadcrumb and text, any term matching; within
        ``documents`` only, when given (the words' rarity still counted over every chunk)."""
        return first_chunks(self._ranked("chunks", terms, k, documents), k)

    def keyword_rows(
        self, terms: Sequence[str], k: int, documents: Sequence[str] | None = None
    ) -> list[ChunkKey]:
        """IDF-weighted full-text ranking over table rows alone: the chunks of the best rows,
        each once; within ``documents`` only, when given."""
        return first_chunks(self._ranked("chunk_rows", terms, k * ROWS_PER_CHUNK, documents), k)

    def _ranked(
        self, table: str, terms: Sequence[str], k: int, documents: Sequence[str] | None
    ) -> list[tuple[str, int]]:
        """(document_id, position) of the ``table`` rows ranked best for any term, at most k;
        within ``documents`` only, when given."""
        if not terms or k <= 0 or (documents is not None and not documents):
            return []
        sql = idf_ranked_sql(
            table=table,
            key="(document_id, position)",
            where="document_id IN (SELECT id FROM documents WHERE status = 'ready')",
            total=f"(SELECT count(*) FROM {table})",
            terms=len(terms),
            carry=", document_id AS doc" if documents is not None else "",
            narrow=" AND doc = ANY(%s)" if documents is not None else "",
            idf_weighting=self._idf_weighting,
        )
        params: tuple[object, ...] = tuple(terms)
        if documents is not None:
            params += (list(documents),)
        rows = self._db.execute(sql, (*params, int(k))).fetchall()
        return [_record_pair(row[0]) for row in rows]


def _record_pair(value: Any) -> tuple[str, int]:
    """A (document_id, position) row value, as psycopg returns a record."""
    if isinstance(value, tuple):
        return str(value[0]), int(value[1])
    text = str(value).strip("()")
    document_id, position = text.rsplit(",", 1)
    return document_id.strip('"'), int(position)
