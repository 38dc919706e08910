"""The knowledge base in the SQLite store: documents, chunks, FTS5 and sqlite-vec."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..clock import from_db, to_db
from ..embedding import Vector
from ..kb.model import Chunk, ChunkKey, Document, DocumentStatus, SourceType
from .protocols import chunks as id_groups

if TYPE_CHECKING:
    from .sqlite import SqliteStore, _Connection

_DOCUMENT_COLUMNS = (
    "id, source_uri, collection, source_type, title, status, content_hash, document_type, "
    "error, chunk_count, token_count, images_read, byte_size, created_at, updated_at"
)
_CHUNK_COLUMNS = "document_id, position, headings, breadcrumb, text, tokens, overlap_chars"


class SqliteKnowledgeStore:
    """Documents and chunks; a chunk's row, FTS entry and vector share its rowid."""

    def __init__(self, connection: _Connection, store: SqliteStore) -> None:
        self._db = connection
        self._store = store

    def save_document(self, document: Document) -> None:
        """Insert or replace the document row."""
        self._db.execute(
            f"INSERT INTO documents ({_DOCUMENT_COLUMNS}) VALUES ({', '.join('?' * 15)}) "
            "ON CONFLICT(id) DO UPDATE SET source_uri = excluded.source_uri, "
            "collection = excluded.collection, source_type = excluded.source_type, "
            "title = excluded.title, status = excluded.status, "
            "content_hash = excluded.content_hash, document_type = excluded.document_type, "
            "error = excluded.error, chunk_count = excluded.chunk_count, "
            "token_count = excluded.token_count, images_read = excluded.images_read, "
            "byte_size = excluded.byte_size, updated_at = excluded.updated_at",
            _document_params(document),
        )

    def get_document(self, document_id: str) -> Document | None:
        """One document by id."""
        row = self._db.execute(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE id = ?", (document_id,)
        ).fetchone()
        return _document_from_row(row) if row else None

    def document_by_uri(self, source_uri: str) -> Document | None:
        """The document of one source."""
        row = self._db.execute(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE source_uri = ?", (source_uri,)
        ).fetchone()
        return _document_from_row(row) if row else None

    def documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first."""
        sql = f"SELECT {_DOCUMENT_COLUMNS} FROM documents"
        params: list[Any] = []
        if collection is not None:
            sql += " WHERE collection = ?"
            params.append(collection)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_document_from_row(row) for row in self._db.execute(sql, params).fetchall()]

    def documents_by_id(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """Documents by id."""
        found: dict[str, Document] = {}
        for group in id_groups(sorted(set(document_ids))):
            rows = self._db.execute(
                f"SELECT {_DOCUMENT_COLUMNS} FROM documents "
                f"WHERE id IN ({', '.join('?' * len(group))})",
                tuple(group),
            ).fetchall()
            for row in rows:
                document = _document_from_row(row)
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
                f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    chunk.document_id,
                    chunk.position,
                    json.dumps(list(chunk.headings), ensure_ascii=False),
                    chunk.breadcrumb,
                    chunk.text,
                    chunk.tokens,
                    chunk.overlap_chars,
                ),
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
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND position >= ?"
        params: list[Any] = [document_id, first]
        if last is not None:
            sql += " AND position <= ?"
            params.append(last)
        rows = self._db.execute(sql + " ORDER BY position", params).fetchall()
        return [_chunk_from_row(row) for row in rows]

    def chunks_by_key(self, keys: Sequence[ChunkKey]) -> dict[ChunkKey, Chunk]:
        """Chunks by (document, position)."""
        found: dict[ChunkKey, Chunk] = {}
        for start in range(0, len(keys), 200):
            group = keys[start : start + 200]
            where = " OR ".join("(document_id = ? AND position = ?)" for _ in group)
            params = [value for key in group for value in (key.document_id, key.position)]
            rows = self._db.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE {where}", params
            ).fetchall()
            for row in rows:
                chunk = _chunk_from_row(row)
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


def _document_params(document: Document) -> tuple[Any, ...]:
    return (
        document.id,
        document.source_uri,
        document.collection,
        document.source_type.value,
        document.title,
        document.status.value,
        document.content_hash,
        document.document_type,
        document.error,
        document.chunk_count,
        document.token_count,
        document.images_read,
        document.byte_size,
        to_db(document.created_at),
        to_db(document.updated_at),
    )


def _document_from_row(row: Sequence[Any]) -> Document:
    created, updated = from_db(row[13]), from_db(row[14])
    assert created is not None and updated is not None
    return Document(
        id=row[0],
        source_uri=row[1],
        collection=row[2],
        source_type=SourceType(row[3]),
        title=row[4],
        status=DocumentStatus(row[5]),
        content_hash=row[6],
        document_type=row[7],
        error=row[8],
        chunk_count=int(row[9]),
        token_count=int(row[10]),
        images_read=int(row[11]),
        byte_size=int(row[12]),
        created_at=created,
        updated_at=updated,
    )


def _chunk_from_row(row: Sequence[Any]) -> Chunk:
    return Chunk(
        document_id=row[0],
        position=int(row[1]),
        headings=tuple(json.loads(row[2])),
        breadcrumb=row[3],
        text=row[4],
        tokens=int(row[5]),
        overlap_chars=int(row[6]),
    )
