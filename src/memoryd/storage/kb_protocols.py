"""The knowledge base's capabilities of a store: documents and their chunks (with the chunks'
text and vector indexes), and the synced sources with their files' states."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from memoryd.kb.model import Chunk, ChunkKey, Document, PendingRow
from memoryd.kb.sync.model import SyncFile, SyncSource

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector


class KnowledgeStore(Protocol):
    """Documents, their chunks, and the chunks' text and vector indexes, written together."""

    def save_document(self, document: Document) -> None:
        """Insert or update a document row (by id)."""
        ...

    def get_document(self, document_id: str) -> Document | None:
        """One document by id."""
        ...

    def document_ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` document ids that start with ``prefix`` (an
        :func:`memoryd.ids.id_prefix`), in id order; one range scan of the primary key."""
        ...

    def document_by_uri(self, source_uri: str) -> Document | None:
        """The document ingested from this source, if any."""
        ...

    def documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first, optionally of one collection."""
        ...

    def documents_by_id(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """Documents by id; missing ids are absent."""
        ...

    def replace_chunks(
        self, document_id: str, chunks: Sequence[Chunk], vectors: Sequence[Vector | None]
    ) -> None:
        """Drop the document's chunks and store these (call inside a transaction); a chunk
        whose vector is None is stored without one, pending (keyword-searchable only)."""
        ...

    def pending_chunks(self, document_id: str, limit: int) -> list[Chunk]:
        """Up to ``limit`` of a document's chunks still without a vector, in position order."""
        ...

    def save_chunk_vectors(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int:
        """Store each chunk's vector if that chunk is still stored with the same text and has
        none yet (call inside a transaction); how many were stored."""
        ...

    def vector_counts(self, document_ids: Sequence[str]) -> dict[str, int]:
        """How many of each document's chunks have their vector (documents with chunks)."""
        ...

    def vectors_by_position(self, document_id: str) -> dict[int, Vector]:
        """A document's chunk vectors by chunk position (pending chunks absent)."""
        ...

    def delete_document(self, document_id: str) -> None:
        """The document, its chunks and their index entries."""
        ...

    def chunks(self, document_id: str, first: int = 0, last: int | None = None) -> list[Chunk]:
        """The document's chunks with first ≤ position ≤ last, in order."""
        ...

    def chunks_by_key(self, keys: Sequence[ChunkKey]) -> dict[ChunkKey, Chunk]:
        """Chunks by address."""
        ...

    def nearest_chunks(
        self, vector: Vector, k: int, documents: Sequence[str] | None = None
    ) -> list[tuple[ChunkKey, float]]:
        """Up to k chunks of ready documents by cosine, closest first; only chunks of
        ``documents`` when given."""
        ...

    def keyword_chunks(
        self, terms: Sequence[str], k: int, documents: Sequence[str] | None = None
    ) -> list[ChunkKey]:
        """Chunks of ready documents matching any of ``terms``, best BM25 first; only chunks
        of ``documents`` when given."""
        ...

    def keyword_rows(
        self, terms: Sequence[str], k: int, documents: Sequence[str] | None = None
    ) -> list[ChunkKey]:
        """The chunks of the table rows (each indexed alone, :mod:`memoryd.kb.rows`) that best
        match any of ``terms`` by BM25, each chunk once, at most k; only chunks of
        ``documents`` when given."""
        ...

    def row_labels(self, documents: Sequence[str]) -> list[str]:
        """The distinct row labels (:func:`memoryd.kb.rows.label_text`) of ``documents``,
        ready ones only."""
        ...

    def pending_rows(self, document_id: str, limit: int) -> list[PendingRow]:
        """Up to ``limit`` of a document's table rows with a label and no vector yet."""
        ...

    def save_row_vectors(self, rows: Sequence[PendingRow], vectors: Sequence[Vector]) -> int:
        """Store each row's label vector if the row is still stored with the same label and
        has none yet (call inside a transaction); how many were stored."""
        ...

    def nearest_rows(
        self, vector: Vector, k: int, documents: Sequence[str] | None = None
    ) -> list[tuple[ChunkKey, float]]:
        """The chunks of the table rows whose label vectors are nearest ``vector``, each chunk
        once at its best row's cosine, closest first, at most k; ready documents only, only
        ``documents`` when given."""
        ...

    def chunk_count(self) -> int:
        """How many chunks are stored."""
        ...

    def chunk_vectors(self, document_id: str) -> list[Vector]:
        """The vectors of a document's chunks that have one, in position order."""
        ...


class SyncedSources(Protocol):
    """Folders, files and URLs kept current, and the state of each of their files. Writes go
    inside the caller's transaction."""

    def save_source(self, source: SyncSource) -> None:
        """Insert a source, or update everything but its location, kind and creation."""
        ...

    def sources(self) -> list[SyncSource]:
        """Every source, oldest first."""
        ...

    def get_source(self, source_id: str) -> SyncSource | None:
        """One source by id."""
        ...

    def source_by_location(self, location: str) -> SyncSource | None:
        """The source registered for this folder, file or URL."""
        ...

    def delete_source(self, source_id: str) -> None:
        """The source and its files' rows (not their documents)."""
        ...

    def files(self, source_id: str) -> list[SyncFile]:
        """A source's files, by path."""
        ...

    def get_file(self, source_id: str, path: str) -> SyncFile | None:
        """One file's row."""
        ...

    def save_file(self, file: SyncFile) -> None:
        """Insert or update one file's row."""
        ...

    def delete_file(self, source_id: str, path: str) -> None:
        """One file's row."""
        ...

    def files_of_document(self, document_id: str) -> list[SyncFile]:
        """The file rows that point at a document."""
        ...

    def state_counts(self) -> dict[str, dict[str, int]]:
        """How many files each source has in each state."""
        ...
