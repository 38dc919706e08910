"""The knowledge base in the SQLite store: documents, chunks, FTS5 and sqlite-vec."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..clock import from_db, to_db
from ..embedding import Vector
from ..kb.model import Chunk, ChunkKey, Document
from .kb_rows import (
    CHUNK_COLUMNS,
    DOCUMENT_COLUMNS,
    DOCUMENT_UPSERT,
    chunk_from_row,
    chunk_params,
    document_from_row,
    document_params,
)
from .protocols import chunks as id_groups

if TYPE_CHECKING:
    from .sqlite import SqliteStore, _Connection


class SqliteKnowledgeStore:
    """Documents and chunks; a chunk's row, FTS entry and vector share its rowid."""

    def __init__(self, connection: _Connection, store: SqliteStore) -> None:
        self._db = connection
        self._store = store

    def save_document(self, document: Document) -> None:
        """Insert or replace the document row."""
        self._db.execute(
            f"INSERT INTO documents ({DOCUMENT_COLUMNS}) VALUES ({', '.join('?' * 15)}) "
            + DOCUMENT_UPSERT,
            document_params(document, to_db),
        )

    def get_document(self, document_id: str) -> Document | None:
        """One document by id."""
        row = self._db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ?", (document_id,)
        ).fetchone()
        return document_from_row(row, _time) if row else None

    def document_by_uri(self, source_uri: str) -> Document | None:
        """The document of one source."""
        row = self._db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE source_uri = ?", (source_uri,)
        ).fetchone()
        return document_from_row(row, _time) if row else None

    def documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first."""
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents"
        params: list[Any] = []
        if collection is not None:
            sql += " WHERE collection = ?"
            params.append(collection)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [document_from_row(row, _time) for row in self._db.execute(sql, params).fetchall()]

    def documents_by_id(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """Documents by id."""
        found: dict[str, Document] = {}
        for group in id_groups(sorted(set(document_ids))):
            rows = self._db.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents "
                f"WHERE id IN ({', '.join('?' * len(group))})",
                tuple(group),
            ).fetchall()
            for row in rows:
                document = document_from_row(row, _time)
                found[document.id] = document
        return found

    def replace_chunks(
        self, document_id: str, chunks: Sequence[Chunk], vectors: Sequence[Vector]
    ) -> None:
        """Drop the old chunks (rows, FTS, vectors) and write the new ones."""
        self._store.require_vectors()
        self._drop_chunks(document_id)
        for chunk, vector in zip(chunks, vectors, strict=True):
            cursor = self._db.execute(
                f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                chunk_params(chunk),
            )
            rowid = cursor.lastrowid
            self._db.execute(
                "INSERT INTO chunk_fts(rowid, breadcrumb, text) VALUES (?, ?, ?)",
                (rowid, chunk.breadcrumb, chunk.text),
            )
            self._db.execute(
                "INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)",
                (rowid, np.asarray(vector, dtype=np.float32).tobytes()),
            )

    def delete_document(self, document_id: str) -> None:
        """The document and everything indexed from it."""
        self._drop_chunks(document_id)
        self._db.execute("DELETE FROM documents WHERE id = ?", (document_id,))

    def chunks(self, document_id: str, first: int = 0, last: int | None = None) -> list[Chunk]:
        """Chunks in position order."""
        sql = f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND position >= ?"
        params: list[Any] = [document_id, first]
        if last is not None:
            sql += " AND position <= ?"
            params.append(last)
        rows = self._db.execute(sql + " ORDER BY position", params).fetchall()
        return [chunk_from_row(row) for row in rows]

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
            for row in rows:
                chunk = chunk_from_row(row)
                found[ChunkKey(chunk.document_id, chunk.position)] = chunk
        return found

    def nearest_chunks(self, vector: Vector, k: int) -> list[tuple[ChunkKey, float]]:
        """Exact cosine KNN over chunk vectors, then only chunks of ready documents."""
        if k <= 0 or not self._store.has_vectors():
            return []
        rows = self._db.execute(
            "SELECT c.document_id, c.position, v.distance FROM "
            "(SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ?) v "
            "JOIN chunks c ON c.rowid = v.rowid JOIN documents d ON d.id = c.document_id "
            "WHERE d.status = 'ready' ORDER BY v.distance",
            (np.asarray(vector, dtype=np.float32).tobytes(), k),
        ).fetchall()
        return [(ChunkKey(row[0], int(row[1])), 1.0 - float(row[2])) for row in rows]

    def keyword_chunks(self, terms: Sequence[str], k: int) -> list[ChunkKey]:
        """BM25 over breadcrumb and text, any term matching."""
        if not terms or k <= 0:
            return []
        expression = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        rows = self._db.execute(
            "SELECT c.document_id, c.position FROM chunk_fts f "
            "JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON d.id = c.document_id "
            "WHERE chunk_fts MATCH ? AND d.status = 'ready' ORDER BY bm25(chunk_fts) LIMIT ?",
            (expression, k),
        ).fetchall()
        return [ChunkKey(row[0], int(row[1])) for row in rows]

    def chunk_count(self) -> int:
        """How many chunks."""
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def chunk_vectors(self, document_id: str) -> list[Vector]:
        """Chunk vectors in position order."""
        rows = self._db.execute(
            "SELECT v.embedding FROM chunks c JOIN chunk_vectors v ON v.rowid = c.rowid "
            "WHERE c.document_id = ? ORDER BY c.position",
            (document_id,),
        ).fetchall()
        return [np.frombuffer(row[0], dtype=np.float32).copy() for row in rows]

    def _drop_chunks(self, document_id: str) -> None:
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
            if self._store.has_vectors():
                self._db.execute(f"DELETE FROM chunk_vectors WHERE rowid IN ({marks})", params)
            self._db.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", params)


def _time(value: str) -> datetime:
    parsed = from_db(value)
    assert parsed is not None
    return parsed
