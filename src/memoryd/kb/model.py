"""Knowledge-base records: documents, their chunks, and search hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, TypedDict

from memoryd.errors import InvalidInputError
from memoryd.json_shapes import Default, Described
from memoryd.trust.credential_screening import screened_field


class SourceType(StrEnum):
    """Where a document came from; trust, and so search weight, follows."""

    CURATED = "curated"
    MISSION = "mission"
    WEB = "web"


# SPEC §6: curated documents 1.0, mission output 0.8, web clips 0.6.
SOURCE_WEIGHTS: dict[SourceType, float] = {
    SourceType.CURATED: 1.0,
    SourceType.MISSION: 0.8,
    SourceType.WEB: 0.6,
}


class DocumentStatus(StrEnum):
    """``queued``: waiting for a (re)try; ``ready``: searchable; ``failed``: see ``error``."""

    QUEUED = "queued"
    READY = "ready"
    FAILED = "failed"


def parse_source_type(value: str) -> SourceType:
    """A source type from user input, or a clear error listing the choices."""
    try:
        return SourceType(value.strip().lower())
    except ValueError:
        choices = ", ".join(t.value for t in SourceType)
        raise InvalidInputError(f"unknown source type {value!r}; use one of {choices}") from None


# The collection a document joins when none is named.
DEFAULT_COLLECTION = "default"


def check_collection(value: str) -> str:
    """A collection name: 1–64 letters, digits, '-', '_' or '.'."""
    name = value.strip()
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name):
        raise InvalidInputError(
            f"invalid collection name {value!r}: use 1-64 letters, digits, '-', '_' or '.'"
        )
    return screened_field(name, "collection name")


class DocumentJson(TypedDict):
    # A document as the CLI and the HTTP API show it.
    id: str
    source_uri: str
    collection: str
    source_type: str
    title: str
    status: str
    error: str | None
    content_hash: str | None
    document_type: str | None
    chunks: int
    tokens: int
    images_read: int
    redactions: Annotated[int, Default(0)]
    bytes: int
    created_at: str
    updated_at: str
    embedded_chunks: Annotated[
        int | None,
        Default(None),
        Described("chunks whose vector is stored; the rest are keyword-only"),
    ]
    embedding: Annotated[
        str | None,
        Default(None),
        Described('"embedding 120/347" while the worker fills the vectors'),
    ]
    metadata: Annotated[
        dict[str, Any],
        Default(factory=dict),
        Described(
            "what the document says about itself: a Markdown note's front matter, "
            "#tags and [[wiki links]]"
        ),
    ]


@dataclass(frozen=True)
class Document:
    """One ingested source (a file, a URL or given bytes)."""

    id: str
    source_uri: str
    collection: str
    source_type: SourceType
    title: str
    status: DocumentStatus
    created_at: datetime
    updated_at: datetime
    content_hash: str | None = None
    document_type: str | None = None
    error: str | None = None
    chunk_count: int = 0
    token_count: int = 0
    images_read: int = 0
    # Secrets redacted from its text at ingest (the count only; the secrets are never kept).
    redactions: int = 0
    byte_size: int = 0
    # How many chunks have their vector (the rest wait for the worker); None: not counted.
    embedded_chunks: int | None = None
    # What the document says about itself: a note's front matter, #tags and [[links]].
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def pending_vectors(self) -> int:
        """Chunks still without a vector: keyword-searchable, not yet vector-searchable."""
        if self.embedded_chunks is None:
            return 0
        return max(self.chunk_count - self.embedded_chunks, 0)

    @property
    def embedding_label(self) -> str:
        """ "embedding 120/347" while vectors are missing, '' once all are there."""
        if not self.pending_vectors:
            return ""
        return f"embedding {self.embedded_chunks}/{self.chunk_count}"

    def to_json(self) -> DocumentJson:
        """JSON shape for the CLI and API."""
        return {
            "id": self.id,
            "source_uri": self.source_uri,
            "collection": self.collection,
            "source_type": self.source_type.value,
            "title": self.title,
            "status": self.status.value,
            "error": self.error,
            "content_hash": self.content_hash,
            "document_type": self.document_type,
            "chunks": self.chunk_count,
            "tokens": self.token_count,
            "images_read": self.images_read,
            "redactions": self.redactions,
            "bytes": self.byte_size,
            "embedded_chunks": self.embedded_chunks,
            "embedding": self.embedding_label or None,
            "metadata": self.metadata,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True)
class Chunk:
    """A stored piece of a document; ``position`` is its chunk id within the document."""

    document_id: str
    position: int
    headings: tuple[str, ...]
    breadcrumb: str
    text: str
    tokens: int
    overlap_chars: int = 0
    # Where pages begin in ``text``: (page, character offset), the first at 0; empty when the
    # document has no pages.
    pages: tuple[tuple[int, int], ...] = ()

    @property
    def page_range(self) -> tuple[int, int] | None:
        """(first page, last page) the chunk's text comes from, or None."""
        if not self.pages:
            return None
        return self.pages[0][0], self.pages[-1][0]

    @property
    def page_label(self) -> str:
        """ "p. 34" or "pp. 34–35" ('' when the document has no pages)."""
        return page_label(self.page_range)

    @property
    def embedded_text(self) -> str:
        """What the embedder reads: the breadcrumb, then the text."""
        return embedded_text(self.breadcrumb, self.text)


def embedded_text(breadcrumb: str, text: str) -> str:
    """What the embedder reads for a chunk: the breadcrumb, then the text."""
    return f"{breadcrumb}\n\n{text}" if breadcrumb else text


@dataclass(frozen=True)
class ChunkKey:
    """A chunk's address."""

    document_id: str
    position: int


def page_label(pages: tuple[int, int] | None) -> str:
    """ "p. 34" for one page, "pp. 34–35" for a range, '' for none."""
    if pages is None:
        return ""
    first, last = pages
    return f"p. {first}" if first == last else f"pp. {first}–{last}"
