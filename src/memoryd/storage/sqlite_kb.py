"""The knowledge base in the SQLite store: documents, chunks, FTS5 and sqlite-vec."""

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
from memoryd.storage.protocols import chunks as id_groups
from memoryd.storage.row_dialect import VectorTables
from memoryd.storage.sqlite_connection import (
    SQLITE_ROWS,
    SqliteConnection,
    stored_vector,
    vector_blob,
)

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector


class SqliteKnowledgeStore(DocumentRows):
    """Documents and chunks; a chunk's row, FTS entry and vector share its rowid."""

    PENDING_VECTOR = "embedded = 0"
    VECTOR_COLUMN = "embedded"
    VECTORS_BY_POSITION = (
        "SELECT c.position, v.embedding FROM chunks c JOIN chunk_vectors v "
        "ON v.rowid = c.rowid WHERE c.document_id = ?"
    )

    def __init__(self, connection: SqliteConnection, vector_tables: VectorTables) -> None:
        super().__init__(connection, SQLITE_ROWS, vector_tables)

    def _vector_value(self, vector: Vector | None) -> int:
        """1 once the chunk's vector row exists, 0 while it waits for it."""
        return int(vector is not None)

    def _insert_chunk(self, chunk: Chunk, vector: Vector | None) -> Any:
        """The chunk's row, then its FTS entry and its vector row under the same rowid."""
        cursor = super()._insert_chunk(chunk, vector)
        rowid = cursor.lastrowid
        self._db.execute(
            "INSERT INTO chunk_fts(rowid, breadcrumb, text) VALUES (?, ?, ?)",
            (rowid, chunk.breadcrumb, chunk.text),
        )
        if vector is not None:
            self._db.execute(
                "INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)",
                (rowid, vector_blob(vector)),
            )
        return cursor

    def _insert_row(self, values: tuple[str, int, int, str, str], vector: bytes | None) -> Any:
        """The table row, then its FTS entry under the same rowid."""
        cursor = super()._insert_row(values, vector)
        self._db.execute(
            "INSERT INTO chunk_row_fts(rowid, text) VALUES (?, ?)", (cursor.lastrowid, values[3])
        )
        return cursor

    def _stored_vector(self, value: Any) -> Vector:
        return stored_vector(value)

    def _save_chunk_vector(self, chunk: Chunk, vector: Vector) -> bool:
        """A vector row under the chunk's rowid, and the chunk no longer pending."""
        row = self._db.execute(
            "SELECT rowid FROM chunks WHERE document_id = ? AND position = ? "
            "AND breadcrumb = ? AND text = ? AND embedded = 0",
            (chunk.document_id, chunk.position, chunk.breadcrumb, chunk.text),
        ).fetchone()
        if row is None:
            return False
        self._db.execute(
            "INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)",
            (int(row[0]), vector_blob(vector)),
        )
        self._db.execute("UPDATE chunks SET embedded = 1 WHERE rowid = ?", (int(row[0]),))
        return True

    def vector_counts(self, document_ids: Sequence[str]) -> dict[str, int]:
        """Chunks with a vector row, per document that has chunks."""
        counts: dict[str, int] = {}
        for group in id_groups(sorted(set(document_ids))):
            marks = ", ".join("?" * len(group))
            rows = self._db.execute(
                f"SELECT document_id, sum(embedded) FROM chunks "
                f"WHERE document_id IN ({marks}) GROUP BY document_id",
                tuple(group),
            ).fetchall()
            counts.update({str(row[0]): int(row[1]) for row in rows})
        return counts

    def delete_document(self, document_id: str) -> None:
        """The document and everything indexed from it."""
        self._drop_chunks(document_id)
        self._db.execute("DELETE FROM documents WHERE id = ?", (document_id,))

    def chunks_by_key(self, keys: Sequence[ChunkKey]) -> dict[ChunkKey, Chunk]:
        """Chunks by (document, position)."""
        found: dict[ChunkKey, Chunk] = {}
        for start in range(0, len(keys), 200):
            group = keys[start : start + 200]
            where = " OR ".join("(document_id = ? AND position = ?)" for _ in group)
            params = [value for key in group for value in (key.document_id, key.position)]
            rows = self._db.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE {where}", params
            ).fetchall()
            found.update(chunks_by_key(rows))
        return found

    def nearest_chunks(
        self, vector: Vector, k: int, documents: Sequence[str] | None = None
    ) -> list[tuple[ChunkKey, float]]:
        """Exact cosine KNN over chunk vectors, then only chunks of ready documents; within
        ``documents`` only, when given (their vectors compared one by one)."""
        if k <= 0 or not self._vector_tables.has_vectors():
            return []
        self._vector_tables.check_space()
        if documents is not None:
            return self._nearest_within(vector, k, documents)
        rows = self._db.execute(
            "SELECT c.document_id, c.position, v.distance FROM "
            "(SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ?) v "
            "JOIN chunks c ON c.rowid = v.rowid JOIN documents d ON d.id = c.document_id "
            "WHERE d.status = 'ready' ORDER BY v.distance",
            (vector_blob(vector), k),
        ).fetchall()
        return [(ChunkKey(row[0], int(row[1])), 1.0 - float(row[2])) for row in rows]

    def _nearest_within(
        self, vector: Vector, k: int, documents: Sequence[str]
    ) -> list[tuple[ChunkKey, float]]:
        import numpy as np

        keys: list[ChunkKey] = []
        stored: list[bytes] = []
        for group in id_groups(list(documents)):
            marks = ", ".join("?" * len(group))
            for document_id, position, blob in self._db.execute(
                "SELECT c.document_id, c.position, v.embedding FROM chunks c "
                "JOIN chunk_vectors v ON v.rowid = c.rowid "
                "JOIN documents d ON d.id = c.document_id "
                f"WHERE d.status = 'ready' AND c.document_id IN ({marks})",
                tuple(group),
            ).fetchall():
                keys.append(ChunkKey(document_id, int(position)))
                stored.append(blob)
        if not keys:
            return []
        matrix = np.frombuffer(b"".join(stored), dtype=np.float32).reshape(len(keys), -1)
        cosines = matrix @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-cosines, kind="stable")[:k]
        return [(keys[i], float(cosines[i])) for i in order]

    def keyword_chunks(
        self, terms: Sequence[str], k: int, documents: Sequence[str] | None = None
    ) -> list[ChunkKey]:
        """BM25 over breadcrumb and text, any term matching; within ``documents`` only, when
        given."""
        return first_chunks(self._bm25("chunks", "chunk_fts", terms, k, documents), k)

    def keyword_rows(
        self, terms: Sequence[str], k: int, documents: Sequence[str] | None = None
    ) -> list[ChunkKey]:
        """BM25 over table rows alone, any term matching: the chunks of the best rows, each
        once; within ``documents`` only, when given."""
        found = self._bm25("chunk_rows", "chunk_row_fts", terms, k * ROWS_PER_CHUNK, documents)
        return first_chunks(found, k)

    def nearest_rows(
        self, vector: Vector, k: int, documents: Sequence[str] | None = None
    ) -> list[tuple[ChunkKey, float]]:
        """The chunks of the rows whose label vectors are nearest, each once at its best row's
        cosine (sqlite-vec computes the distances: a Python loop over every row's blob cost
        3x a search); rows of another dimension are skipped."""
        if k <= 0 or (documents is not None and not documents):
            return []
        blob = vector_blob(vector)
        within = ""
        params: tuple[object, ...] = (blob, len(blob))
        if documents is not None:
            within = f" AND r.document_id IN ({', '.join('?' * len(documents))})"
            params += tuple(documents)
        rows = self._db.execute(
            "SELECT r.document_id, r.position, vec_distance_cosine(r.embedding, ?) AS distance "
            "FROM chunk_rows r JOIN documents d ON d.id = r.document_id "
            "WHERE r.embedding IS NOT NULL AND length(r.embedding) = ? "
            f"AND d.status = 'ready'{within} ORDER BY distance LIMIT ?",
            (*params, k * ROWS_PER_CHUNK),
        ).fetchall()
        best: dict[tuple[str, int], float] = {}
        for document_id, position, distance in rows:
            best.setdefault((document_id, position), distance)
        return [
            (ChunkKey(str(document_id), int(position)), 1.0 - float(distance))
            for (document_id, position), distance in list(best.items())[:k]
        ]

    def _bm25(
        self,
        table: str,
        index: str,
        terms: Sequence[str],
        k: int,
        documents: Sequence[str] | None,
    ) -> list[tuple[str, int]]:
        """(document_id, position) of the ``table`` rows best matching any term in its FTS5
        ``index``, at most k; within ``documents`` only, when given."""
        if not terms or k <= 0 or (documents is not None and not documents):
            return []
        expression = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        within = ""
        params: tuple[object, ...] = (expression,)
        if documents is not None:
            marks = ", ".join("?" * len(documents))
            # The rowids the documents' rows span bound the index's scan (the same matches
            # within them, ranked by the whole index's statistics): a search within the named
            # documents took as long as one over the library before (bench/README.md).
            low, high = self._db.execute(
                f"SELECT min(rowid), max(rowid) FROM {table} WHERE document_id IN ({marks})",
                tuple(documents),
            ).fetchone()
            if low is None:
                return []
            within = f" AND t.document_id IN ({marks}) AND f.rowid BETWEEN ? AND ?"
            params += (*documents, low, high)
        # ``ORDER BY f.rank`` (the index's default rank: bm25 with equal column weights) lets
        # FTS5 sort its matches itself, so the joins run only until the limit is reached; with
        # ``ORDER BY bm25(...)`` every match was joined, then sorted (1.5x the time, the same
        # rows in the same order: bench/README.md).
        rows: list[tuple[str, int]] = self._db.execute(
            f"SELECT t.document_id, t.position FROM {index} f "
            f"JOIN {table} t ON t.rowid = f.rowid JOIN documents d ON d.id = t.document_id "
            f"WHERE {index} MATCH ? AND d.status = 'ready'{within} "
            "ORDER BY f.rank LIMIT ?",
            (*params, k),
        ).fetchall()
        return rows

    def _drop_chunks(self, document_id: str) -> None:
        row_ids = [
            str(row[0])
            for row in self._db.execute(
                "SELECT rowid FROM chunk_rows WHERE document_id = ?", (document_id,)
            ).fetchall()
        ]
        for group in id_groups(row_ids):
            marks = ", ".join("?" * len(group))
            params = tuple(int(r) for r in group)
            self._db.execute(f"DELETE FROM chunk_row_fts WHERE rowid IN ({marks})", params)
            self._db.execute(f"DELETE FROM chunk_rows WHERE rowid IN ({marks})", params)
        rowids = [
            row[0]
            for row in self._db.execute(
                "SELECT rowid FROM chunks WHERE document_id = ?", (document_id,)
            ).fetchall()
        ]
        for group in id_groups([str(r) for r in rowids]):
            marks = ", ".join("?" * len(group))
            params = tuple(int(r) for r in group)
            self._db.execute(f"DELETE FROM chunk_fts WHERE rowid IN ({marks})", params)
            if self._vector_tables.has_vectors():
                self._db.execute(f"DELETE FROM chunk_vectors WHERE rowid IN ({marks})", params)
            self._db.execute(f"DELETE FROM chunk_vectors_next WHERE rowid IN ({marks})", params)
            self._db.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", params)
