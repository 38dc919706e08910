"""The knowledge base's row shapes, shared by the SQLite and PostgreSQL backends (they differ
only in placeholders and in how a time is stored)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.kb.model import (
    Chunk,
    ChunkKey,
    Document,
    DocumentStatus,
    PendingRow,
    SourceType,
)
from memoryd.kb.rows import table_rows
from memoryd.storage.row_dialect import RowDialect, SqlConnection, VectorTables, ids_starting

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

DOCUMENT_COLUMNS = (
    "id, source_uri, collection, source_type, title, status, content_hash, document_type, "
    "error, chunk_count, token_count, images_read, byte_size, created_at, updated_at, metadata, "
    "redactions"
)
CHUNK_COLUMNS = "document_id, position, headings, breadcrumb, text, tokens, overlap_chars, pages"
# Every column but id and created_at follows a re-ingest.
DOCUMENT_UPSERT = "ON CONFLICT (id) DO UPDATE SET " + ", ".join(
    f"{column} = excluded.{column}"
    for column in (c.strip() for c in DOCUMENT_COLUMNS.split(","))
    if column not in ("id", "created_at")
)


def document_params(document: Document, stored_time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """A document as row values, in DOCUMENT_COLUMNS order."""
    return (
        document.id, document.source_uri, document.collection, document.source_type.value,
        document.title, document.status.value, document.content_hash, document.document_type,
        document.error, document.chunk_count, document.token_count, document.images_read,
        document.byte_size, stored_time(document.created_at), stored_time(document.updated_at),
        json.dumps(document.metadata, ensure_ascii=False, sort_keys=True),
        document.redactions,
    )  # fmt: skip


def document_from_row(row: Sequence[Any], read_time: Callable[[Any], datetime]) -> Document:
    """A DOCUMENT_COLUMNS row as a document."""
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
        created_at=read_time(row[13]),
        updated_at=read_time(row[14]),
        metadata=_metadata(row[15]),
        redactions=int(row[16]),
    )


def _metadata(value: Any) -> dict[str, Any]:
    """A document's metadata column (JSON text) as a dict; {} when empty."""
    loaded = json.loads(value) if isinstance(value, str) and value else value
    return dict(loaded) if isinstance(loaded, dict) else {}


def chunk_params(chunk: Chunk) -> tuple[Any, ...]:
    """A chunk as row values, in CHUNK_COLUMNS order (headings as JSON text)."""
    return (
        chunk.document_id, chunk.position, json.dumps(list(chunk.headings), ensure_ascii=False),
        chunk.breadcrumb, chunk.text, chunk.tokens, chunk.overlap_chars,
        json.dumps([list(p) for p in chunk.pages]),
    )  # fmt: skip


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """A CHUNK_COLUMNS row as a chunk (headings stored as JSON text or a JSON value)."""
    headings = row[2] if isinstance(row[2], list) else json.loads(row[2])
    return Chunk(
        document_id=row[0],
        position=int(row[1]),
        headings=tuple(headings),
        breadcrumb=row[3],
        text=row[4],
        tokens=int(row[5]),
        overlap_chars=int(row[6]),
        pages=tuple((int(p), int(o)) for p, o in json.loads(row[7] or "[]")),
    )


def chunks_by_key(rows: Sequence[Sequence[Any]]) -> dict[ChunkKey, Chunk]:
    """CHUNK_COLUMNS rows as chunks by (document, position)."""
    found: dict[ChunkKey, Chunk] = {}
    for row in rows:
        chunk = chunk_from_row(row)
        found[ChunkKey(chunk.document_id, chunk.position)] = chunk
    return found


_SELECT_DOCUMENTS = f"SELECT {DOCUMENT_COLUMNS} FROM documents"
_DOCUMENT_BY_ID = _SELECT_DOCUMENTS + " WHERE id = ?"
_DOCUMENT_BY_URI = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE source_uri = ?"
_DOCUMENT_PLACEHOLDERS = ", ".join(["?"] * (DOCUMENT_COLUMNS.count(",") + 1))
_SAVE_DOCUMENT = (
    f"INSERT INTO documents ({DOCUMENT_COLUMNS}) VALUES ({_DOCUMENT_PLACEHOLDERS}) "
    + DOCUMENT_UPSERT
)
_CHUNKS_FROM = f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND position >= ?"


class DocumentRows:
    """The knowledge-base statements both backends run alike; a backend adds its chunk
    indexes (full text, vectors) and id lists."""

    # The condition that holds for a chunk still waiting for its vector (each backend's own).
    PENDING_VECTOR = ""
    # The chunks' column a backend writes a chunk's vector state to (see _vector_value).
    VECTOR_COLUMN = ""
    # (position, stored vector) of a document's chunks that have their vector.
    VECTORS_BY_POSITION = ""

    def __init__(
        self, connection: SqlConnection, dialect: RowDialect, vector_tables: VectorTables
    ) -> None:
        self._db = connection
        self._dialect = dialect
        self._vector_tables = vector_tables

    def replace_chunks(
        self, document_id: str, chunks: Sequence[Chunk], vectors: Sequence[Vector | None]
    ) -> None:
        """Drop the old chunks (and all indexed from them) and write the new ones with their
        table rows; a chunk whose vector is None is stored pending. A row keeps the vector its
        label had before."""
        self._vector_tables.require_vectors()
        kept = self.row_vectors_by_label(document_id)
        self._drop_chunks(document_id)
        for chunk, vector in zip(chunks, vectors, strict=True):
            self._insert_chunk(chunk, vector)
            for values in row_params(chunk):
                self._insert_row(values, kept.get(values[4]))

    def save_chunk_vectors(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int:
        """Store the vector of each chunk still stored with the same text and without one;
        how many were stored (a chunk re-ingested or dropped meanwhile is passed over)."""
        self._vector_tables.require_vectors()
        return sum(
            self._save_chunk_vector(chunk, vector)
            for chunk, vector in zip(chunks, vectors, strict=True)
        )

    def _save_chunk_vector(self, chunk: Chunk, vector: Vector) -> bool:
        """Store one pending chunk's vector if the chunk is stored with the same text."""
        raise NotImplementedError

    def _drop_chunks(self, document_id: str) -> None:
        """A document's chunks and everything indexed from them (each backend's)."""
        raise NotImplementedError

    def _vector_value(self, vector: Vector | None) -> Any:
        """What VECTOR_COLUMN holds for a chunk with this vector (None: pending)."""
        raise NotImplementedError

    def _insert_chunk(self, chunk: Chunk, vector: Vector | None) -> Any:
        """Write one chunk's row; the cursor, for a backend that indexes it further."""
        values = (*chunk_params(chunk), self._vector_value(vector))
        sql = (
            f"INSERT INTO chunks ({CHUNK_COLUMNS}, {self.VECTOR_COLUMN}) "
            f"VALUES ({self._dialect.marks(len(values))})"
        )
        return self._db.execute(sql, values)

    def _insert_row(self, values: tuple[str, int, int, str, str], vector: bytes | None) -> Any:
        """Write one table row with the vector its label had (None: pending); the cursor."""
        return self._db.execute(self._dialect.sql(INSERT_ROW), (*values, vector))

    def pending_chunks(self, document_id: str, limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks still waiting for their vector, in position order."""
        if limit <= 0:
            return []
        sql = (
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND "
            f"{self.PENDING_VECTOR} ORDER BY position LIMIT ?"
        )
        rows = self._db.execute(self._dialect.sql(sql), (document_id, int(limit))).fetchall()
        return [chunk_from_row(row) for row in rows]

    def vectors_by_position(self, document_id: str) -> dict[int, Vector]:
        """Chunk vectors by position (pending chunks absent)."""
        if not self._vector_tables.has_vectors():
            return {}
        sql = self._dialect.sql(self.VECTORS_BY_POSITION)
        rows = self._db.execute(sql, (document_id,)).fetchall()
        return {int(row[0]): self._stored_vector(row[1]) for row in rows}

    def _stored_vector(self, value: Any) -> Vector:
        """A stored chunk vector as float32 numpy (each backend's storage)."""
        raise NotImplementedError

    def chunk_vectors(self, document_id: str) -> list[Vector]:
        """Chunk vectors in position order (pending chunks absent)."""
        by_position = self.vectors_by_position(document_id)
        return [by_position[position] for position in sorted(by_position)]

    def save_document(self, document: Document) -> None:
        """Insert the document row, or update every column but id and created_at."""
        dialect = self._dialect
        self._db.execute(
            dialect.sql(_SAVE_DOCUMENT), document_params(document, dialect.stored_time)
        )

    def get_document(self, document_id: str) -> Document | None:
        """One document by id."""
        row = self._db.execute(self._dialect.sql(_DOCUMENT_BY_ID), (document_id,)).fetchone()
        return document_from_row(row, self._dialect.read_time) if row else None

    def document_ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` document ids that start with ``prefix``, in id order."""
        return ids_starting(self._db, self._dialect, "documents", prefix, limit)

    def document_by_uri(self, source_uri: str) -> Document | None:
        """The document of one source."""
        row = self._db.execute(self._dialect.sql(_DOCUMENT_BY_URI), (source_uri,)).fetchone()
        return document_from_row(row, self._dialect.read_time) if row else None

    def documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first."""
        mark = self._dialect.mark
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents"
        params: list[Any] = []
        if collection is not None:
            sql += f" WHERE collection = {mark}"
            params.append(collection)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {mark}"
            params.append(int(limit))
        rows = self._db.execute(sql, params).fetchall()
        return [document_from_row(row, self._dialect.read_time) for row in rows]

    def documents_by_id(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """Documents by id."""
        read_time = self._dialect.read_time
        rows = self._db.select_in(_SELECT_DOCUMENTS, "id", sorted(set(document_ids)))
        return {row[0]: document_from_row(row, read_time) for row in rows}

    def chunks(self, document_id: str, first: int = 0, last: int | None = None) -> list[Chunk]:
        """Chunks in position order."""
        sql = self._dialect.sql(_CHUNKS_FROM)
        params: list[Any] = [document_id, first]
        if last is not None:
            sql += f" AND position <= {self._dialect.mark}"
            params.append(last)
        rows = self._db.execute(sql + " ORDER BY position", params).fetchall()
        return [chunk_from_row(row) for row in rows]

    def chunk_count(self) -> int:
        """How many chunks."""
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def row_vectors_by_label(self, document_id: str) -> dict[str, bytes]:
        """The document's stored row vectors by label: what a rewrite of its chunks keeps."""
        rows = self._db.execute(
            self._dialect.sql(
                "SELECT label, embedding FROM chunk_rows WHERE document_id = ? "
                "AND embedding IS NOT NULL AND label <> ''"
            ),
            (document_id,),
        ).fetchall()
        return {str(row[0]): bytes(row[1]) for row in rows}

    def row_labels(self, documents: Sequence[str]) -> list[str]:
        """The distinct row labels of ``documents`` (ready ones only), in no set order."""
        if not documents:
            return []
        rows = self._db.execute(
            self._dialect.sql(
                "SELECT DISTINCT r.label FROM chunk_rows r JOIN documents d "
                "ON d.id = r.document_id WHERE d.status = 'ready' AND r.label <> '' "
                f"AND r.document_id IN ({self._dialect.marks(len(documents))})"
            ),
            list(documents),
        ).fetchall()
        return [str(row[0]) for row in rows]

    def pending_rows(self, document_id: str, limit: int) -> list[PendingRow]:
        """Up to ``limit`` table rows with a label and no vector yet, in chunk and row order."""
        if limit <= 0:
            return []
        rows = self._db.execute(
            self._dialect.sql(
                "SELECT position, row_index, label FROM chunk_rows WHERE document_id = ? "
                "AND embedding IS NULL AND label <> '' ORDER BY position, row_index LIMIT ?"
            ),
            (document_id, int(limit)),
        ).fetchall()
        return [PendingRow(document_id, int(r[0]), int(r[1]), str(r[2])) for r in rows]

    def save_row_vectors(self, rows: Sequence[PendingRow], vectors: Sequence[Vector]) -> int:
        """Each row's vector, where the row is still stored with the same label and without
        one; how many were stored."""
        import numpy as np

        stored = 0
        sql = self._dialect.sql(
            "UPDATE chunk_rows SET embedding = ? WHERE document_id = ? AND position = ? "
            "AND row_index = ? AND label = ? AND embedding IS NULL"
        )
        for row, vector in zip(rows, vectors, strict=True):
            blob = np.asarray(vector, dtype=np.float32).tobytes()
            cursor = self._db.execute(
                sql, (blob, row.document_id, row.position, row.row_index, row.label)
            )
            stored += max(int(cursor.rowcount or 0), 0)
        return stored

    def nearest_rows(
        self, vector: Vector, k: int, documents: Sequence[str] | None = None
    ) -> list[tuple[ChunkKey, float]]:
        """The chunks of the table rows whose label vectors are nearest ``vector`` (exact
        cosine), each chunk once at its best row's cosine, at most ``k``; ready documents only,
        within ``documents`` when given. Rows of another dimension (a store re-embedded since)
        are skipped."""
        import numpy as np

        if k <= 0 or (documents is not None and not documents):
            return []
        sql = (
            "SELECT r.document_id, r.position, r.embedding FROM chunk_rows r "
            "JOIN documents d ON d.id = r.document_id "
            "WHERE d.status = 'ready' AND r.embedding IS NOT NULL"
        )
        params: list[Any] = []
        if documents is not None:
            sql += f" AND r.document_id IN ({self._dialect.marks(len(documents))})"
            params.extend(documents)
        query = np.asarray(vector, dtype=np.float32)
        width = query.size * 4
        keys: list[ChunkKey] = []
        blobs: list[bytes] = []
        for document_id, position, blob in self._db.execute(
            self._dialect.sql(sql), params
        ).fetchall():
            data = bytes(blob)
            if len(data) == width:
                keys.append(ChunkKey(str(document_id), int(position)))
                blobs.append(data)
        if not keys:
            return []
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(keys), -1)
        cosines = matrix @ query
        best: dict[ChunkKey, float] = {}
        for index in np.argsort(-cosines, kind="stable"):
            key = keys[int(index)]
            if key not in best:
                best[key] = float(cosines[int(index)])
                if len(best) >= k:
                    break
        return list(best.items())


# A row search reads this many rows per chunk it returns: a chunk's rows often match together.
ROWS_PER_CHUNK = 4


# How a row is written, with the vector its label had before (a rename, a re-ingest) or None:
# the vector fill embeds it then.
INSERT_ROW = (
    "INSERT INTO chunk_rows (document_id, position, row_index, text, label, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def row_params(chunk: Chunk) -> list[tuple[str, int, int, str, str]]:
    """A chunk's table rows as (document_id, position, row_index, text, label) values: what
    the rows' index holds for it (none for a chunk without tables)."""
    return [
        (chunk.document_id, chunk.position, row.index, row.text, row.label)
        for row in table_rows(chunk.breadcrumb, chunk.text)
    ]


def first_chunks(pairs: Sequence[Sequence[Any]], k: int) -> list[ChunkKey]:
    """The chunks of (document_id, position) row hits, best first, each once, at most k."""
    # The pairs as plain tuples first: a ChunkKey per row hit of a deep row search cost more
    # than the search's fusion.
    firsts = list(dict.fromkeys(map(tuple, pairs)))[:k]
    return [ChunkKey(str(document_id), int(position)) for document_id, position in firsts]
