"""The storage contract, one narrow protocol per capability: the memory capabilities in
``memory_protocols.py``, the knowledge base's in ``kb_protocols.py``, the job queue in
``job_protocols.py``; here the :class:`Store` that holds them all, with the small ones (the
vectors a re-embed fills, imported chats, eval cases). Every name is importable from here.

Policy code never imports a backend; the service talks to these protocols only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from memoryd.storage.job_protocols import JobQueue
from memoryd.storage.kb_protocols import KnowledgeStore, SyncedSources
from memoryd.storage.memory_protocols import (
    AuditLog,
    EntityIndex,
    MemoryRecords,
    PhrasesWritten,
    TextHit,
    TextResult,
    TextSearch,
    VectorHit,
    VectorSearch,
)

__all__ = [
    "VECTOR_SOURCES",
    "AuditLog",
    "EmbeddingSignature",
    "EntityIndex",
    "EvalCases",
    "FileCopy",
    "ImportedChats",
    "JobQueue",
    "KnowledgeStore",
    "MemoryRecords",
    "NextVectors",
    "PendingText",
    "PhrasesWritten",
    "Store",
    "SyncedSources",
    "TextHit",
    "TextResult",
    "TextSearch",
    "VectorHit",
    "VectorSearch",
    "VectorSource",
    "chunks",
]

if TYPE_CHECKING:
    from memoryd.evaluation.model import EvalCase
    from memoryd.providers.embedder import Vector


@dataclass(frozen=True)
class EmbeddingSignature:
    """Which embedding space a store's vectors live in."""

    model: str
    dimension: int


@dataclass(frozen=True)
class FileCopy:
    """What a store's copy in one file holds, counted by opening the checked copy."""

    memories: int
    documents: int


# The rows a re-embed gives a vector: every memory not purged, and every chunk.
VectorSource = Literal["memories", "chunks"]
VECTOR_SOURCES: tuple[VectorSource, ...] = ("memories", "chunks")


@dataclass(frozen=True)
class PendingText:
    """A row still without its vector in the set a re-embed fills: its sequence number
    (SQLite rowid, PostgreSQL seq), what the embedder reads, and the stored values the
    vector is saved against (the row must still hold them)."""

    key: int
    text: str
    match: tuple[str, ...]


class NextVectors(Protocol):
    """A second vector set, for another model, filled beside the live one while the store
    keeps serving; switched in when complete. Writes go inside the caller's transaction."""

    def target(self) -> EmbeddingSignature | None:
        """The model the set is being filled for, or None when no re-embed is under way."""
        ...

    def begin(self, target: EmbeddingSignature) -> int:
        """Record ``target``; a set filled for another target is dropped (returns how many
        vectors were dropped)."""
        ...

    def missing(
        self, source: VectorSource, after: int, limit: int, *, every: bool = False
    ) -> list[PendingText]:
        """Up to ``limit`` rows past ``after`` (in key order) that have no vector in the set
        (``every``: all rows that need one, as a re-embed from scratch would send them)."""
        ...

    def save(
        self, source: VectorSource, texts: Sequence[PendingText], vectors: Sequence[Vector]
    ) -> int:
        """Store each vector for its row if the row still holds what was embedded."""
        ...

    def counts(self) -> dict[VectorSource, tuple[int, int]]:
        """(rows with a vector in the set, rows that need one) for each source."""
        ...

    def switch(self) -> int:
        """Make the set the store's vectors and the target its recorded model, when no row
        is missing one; else change nothing. Returns the rows still missing (0: switched)."""
        ...


class ImportedChats(Protocol):
    """Which conversation messages ``import-chats`` already queued, by source."""

    def imported(self, source: str) -> frozenset[tuple[str, str]]:
        """Every ``(conversation id, message id)`` already imported from ``source``."""
        ...

    def rows(self) -> list[tuple[str, str, str, str, datetime]]:
        """Every imported message: source, conversation id, message id, job id, when."""
        ...

    def record(
        self, source: str, conversation_id: str, queued: Sequence[tuple[str, str]], at: datetime
    ) -> None:
        """Record ``(message id, job id)`` pairs of a conversation as imported."""
        ...


class EvalCases(Protocol):
    """The owner's evaluation cases (``memoryd eval``)."""

    def save(self, case: EvalCase) -> None:
        """Insert the case, or replace its question and ids when its id is stored."""
        ...

    def get(self, case_id: str) -> EvalCase | None:
        """One case by id."""
        ...

    def by_question(self, question: str) -> EvalCase | None:
        """The case asking exactly ``question``, if any."""
        ...

    def all(self) -> list[EvalCase]:
        """Every case, oldest first."""
        ...

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` case ids that start with ``prefix``, in id order."""
        ...

    def delete(self, case_id: str) -> None:
        """Remove one case (nothing when it is not stored)."""
        ...


class Store(Protocol):
    """A backend: the capabilities above plus transactions and the embedding signature."""

    @property
    def memories(self) -> MemoryRecords:
        """Memory rows."""
        ...

    @property
    def audit(self) -> AuditLog:
        """The audit log."""
        ...

    @property
    def vectors(self) -> VectorSearch:
        """Vector search over memories."""
        ...

    @property
    def text(self) -> TextSearch:
        """Full-text search over active memories."""
        ...

    @property
    def entities(self) -> EntityIndex:
        """Entities and aliases."""
        ...

    @property
    def jobs(self) -> JobQueue:
        """The background job queue."""
        ...

    @property
    def imported_chats(self) -> ImportedChats:
        """The conversation messages already imported."""
        ...

    @property
    def kb(self) -> KnowledgeStore:
        """The knowledge base's documents and chunks."""
        ...

    @property
    def next_vectors(self) -> NextVectors:
        """The vector set a re-embed fills for another model."""
        ...

    @property
    def evals(self) -> EvalCases:
        """The owner's evaluation cases."""
        ...

    @property
    def sync(self) -> SyncedSources:
        """Synced sources and their files' states."""
        ...

    def expect_signature(self, signature: EmbeddingSignature) -> None:
        """Vectors this process writes and searches come from ``signature``'s model: once
        the store records another (a re-embed switched it), vector work here is refused."""
        ...

    def check_space(self) -> None:
        """Raise StoreMismatchError once the store records another model than the one
        :meth:`expect_signature` named."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """All writes inside commit together or not at all."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside (on this thread) all see one consistent state, whatever other
        processes write meanwhile (export, backup)."""
        ...

    def embedding_signature(self) -> EmbeddingSignature | None:
        """The signature recorded at creation, or None for a store not yet initialised."""
        ...

    def initialize_embeddings(self, signature: EmbeddingSignature) -> None:
        """Record the signature and create the vector index; once per store."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A value from the store's small key-value table."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the key-value table (inside a transaction)."""
        ...

    def meta_items(self) -> dict[str, str]:
        """The whole key-value table (for export)."""
        ...

    def try_lock(self, name: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        """Take a named lease if free or expired; True when taken (inside a transaction)."""
        ...

    def lock_holder(self, name: str) -> str | None:
        """Who holds the named lease, if anyone."""
        ...

    def take_over_lock(
        self, name: str, previous: str, holder: str, now: datetime, lease_seconds: int
    ) -> bool:
        """Take a lease from a holder known to be dead, if it still holds it."""
        ...

    def unlock(self, name: str, holder: str) -> None:
        """Release a lease this holder took."""
        ...

    def integrity_errors(self) -> list[str]:
        """The backend's own consistency checks, as messages (empty when sound)."""
        ...

    def copy_to_file(self, target: Path) -> FileCopy | None:
        """A consistent copy of the whole store written to ``target`` (a new file) while
        writers go on, and checked by opening it; None, writing nothing, when the backend keeps
        no file to copy (PostgreSQL: a backup exports the store instead)."""
        ...

    def erase_traces(self, *, documents: bool = False) -> None:
        """Make purged content unrecoverable from the backend's files (logs, free pages);
        with ``documents``, removed documents' chunks too."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def chunks(values: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    """Split a long id list so IN (...) clauses stay under driver limits."""
    for start in range(0, len(values), size):
        yield values[start : start + size]
