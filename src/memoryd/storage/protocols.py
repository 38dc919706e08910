"""The storage contract, one narrow protocol per capability.

Policy code never imports a backend; the service talks to these protocols only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from memoryd.jobs.model import Job
from memoryd.kb.model import Chunk, ChunkKey, Document
from memoryd.kb.sync.model import SyncFile, SyncSource
from memoryd.memory.model import AuditEntry, Kind, Memory, Status

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

    def abandon(self) -> int:
        """Drop the set and the target (returns how many vectors were dropped)."""
        ...


@dataclass(frozen=True)
class VectorHit:
    """A memory near a query vector."""

    memory_id: str
    cosine: float


class MemoryRecords(Protocol):
    """Memory rows and everything kept in step with them (text and vector indexes)."""

    def insert(self, memory: Memory, vector: Vector | None) -> None:
        """Store a new memory, index its text, and store its vector when given."""
        ...

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id."""
        ...

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Memories by id; missing ids are absent from the result."""
        ...

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids that start with ``prefix`` (an :func:`memoryd.ids.id_prefix`),
        in id order; one range scan of the primary key."""
        ...

    def query(
        self,
        *,
        status: Status | None = None,
        kind: Kind | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[Memory]:
        """Memories filtered by status and kind."""
        ...

    def count(self, *, status: Status | None = None) -> int:
        """How many memories, optionally of one status."""
        ...

    def in_slot(self, slot: str, status: Status) -> list[Memory]:
        """Memories of one fact slot in one status, oldest first."""
        ...

    def set_status(self, memory_id: str, status: Status) -> None:
        """Change status; indexes that filter by status follow."""
        ...

    def link_supersede(self, old_id: str, new_id: str, *, back_link: bool = True) -> None:
        """Record that ``new_id`` supersedes ``old_id``: old → new, and new → old when
        ``back_link`` (a row points back at one predecessor only)."""
        ...

    def mark_confirmed(self, memory_id: str, at: datetime) -> None:
        """Set ``last_confirmed_at`` (reinforcement)."""
        ...

    def live_facts_about(self, subject_keys: Sequence[str]) -> list[Memory]:
        """Active and pending facts whose canonical subject (:func:`memoryd.memory.slot_policy.
        canonical_subject`) is one of ``subject_keys``, by id: the subjects' vocabulary."""
        ...

    def fact_subjects(self) -> list[str]:
        """The canonical subjects that active or pending facts are about."""
        ...

    def slotted(self) -> list[Memory]:
        """Every memory with a fact slot, in any status, by id (for re-slotting)."""
        ...

    def set_slot(
        self, memory_id: str, slot: str | None, same_slot_as: str | None, subject: str | None
    ) -> None:
        """Move a memory to another fact slot: ``same_slot_as`` names the predicate whose slot
        it joined (None: its own), ``subject`` is its canonical subject key."""
        ...

    def unlink_supersede(self, old_id: str, new_id: str) -> None:
        """Undo a supersede link between ``old_id`` and ``new_id`` (both directions)."""
        ...

    def purge(self, memory_id: str, at: datetime) -> None:
        """Erase content, structure and vectors, keeping a tombstone row."""
        ...

    def set_cues(self, memory: Memory, vector: Vector | None) -> None:
        """Store ``memory.cues`` on its (unpurged) row, with its text index and, when given,
        the vector of its content with the cues in place of the stored one."""
        ...

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by memory id."""
        ...

    def stamp_retrieved(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Set last_retrieved_at and bump retrieval_hits."""
        ...

    def events_between(self, start: datetime, end: datetime, limit: int) -> list[Memory]:
        """Active events with start ≤ occurred_at < end, newest first."""
        ...

    def standing_lessons(self) -> list[Memory]:
        """Active lessons with importance high or critical."""
        ...


class AuditLog(Protocol):
    """Append-only record of status changes."""

    def append(self, entry: AuditEntry) -> None:
        """Record one change."""
        ...

    def for_memories(self, memory_ids: Sequence[str]) -> list[AuditEntry]:
        """Entries of these memories, in the order they were written."""
        ...


class VectorSearch(Protocol):
    """Nearest memories by cosine."""

    def nearest(
        self, vector: Vector, statuses: Sequence[Status], k: int, kinds: Sequence[Kind] = ()
    ) -> list[VectorHit]:
        """Up to ``k`` memories in the given statuses (and kinds), closest first."""
        ...


@dataclass(frozen=True)
class TextHit:
    """An active memory that contains some of the query's words."""

    memory_id: str
    terms: frozenset[str]


@dataclass(frozen=True)
class TextResult:
    """What the full-text leg found, and how common each query word is among active
    memories (the recall gates tell a selective word from a common one by it)."""

    hits: tuple[TextHit, ...]
    document_frequency: Mapping[str, int]


class TextSearch(Protocol):
    """Full-text (BM25) search over active memories."""

    def search(self, terms: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> TextResult:
        """Up to ``k`` active memories (of ``kinds``, when given) containing any of ``terms``
        (content words, as :func:`memoryd.words.query_terms` makes them), best first, each
        with the terms it contains; and, for every term, how many active memories contain it."""
        ...


class EntityIndex(Protocol):
    """Entity names and aliases and the active memories tagged with them."""

    def version(self) -> tuple[int, int]:
        """A value that changes whenever names or aliases change."""
        ...

    def aliases(self) -> list[tuple[str, int]]:
        """Every (alias or name, entity id)."""
        ...

    def add_alias(self, name: str, alias: str) -> None:
        """Another name for an entity."""
        ...

    def mention_counts(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many memories (any status) each entity tags."""
        ...

    def alias_pairs(self) -> list[tuple[str, str]]:
        """Every (entity name, alias), sorted (for export)."""
        ...

    def rank_by_entities(self, weights: Mapping[int, float], limit: int) -> list[str]:
        """Active memory ids tagged with the weighted entities, by summed weight, newest
        first among equals."""
        ...


class JobQueue(Protocol):
    """Persisted jobs, claimed one at a time."""

    def enqueue(self, job: Job) -> None:
        """Add a queued job."""
        ...

    def claim(self, kinds: Sequence[str], now: datetime, lease_seconds: int) -> Job | None:
        """Take the oldest due job of these kinds (or one whose lease ran out): mark it
        running and count the attempt. Call inside a transaction."""
        ...

    def claim_one(self, job_id: str, now: datetime) -> Job | None:
        """Claim one specific queued job now, whatever its due time; None if it is not
        queued (another worker holds it, or it ended)."""
        ...

    def finish(self, job_id: str, result: dict[str, Any], now: datetime) -> None:
        """Mark done with its result."""
        ...

    def retry(self, job_id: str, error: str, next_attempt_at: datetime) -> None:
        """Back to queued, to run again at ``next_attempt_at``."""
        ...

    def release(self, job_id: str, claimed_at: datetime, now: datetime) -> bool:
        """Undo the claim made at ``claimed_at`` if the job still runs under it: queued again,
        due ``now``, the attempt not counted. False when the job has moved on."""
        ...

    def fail(self, job_id: str, error: str, now: datetime, *, keep_payload: bool = False) -> None:
        """Give up on the job; the error stays visible. Its payload is dropped unless
        ``keep_payload``."""
        ...

    def requeue(self, job_id: str, now: datetime) -> bool:
        """Queue a failed or waiting job again, due ``now``, attempts from zero; False when it
        is running or done."""
        ...

    def get(self, job_id: str) -> Job | None:
        """One job."""
        ...

    def recent(self, limit: int) -> list[Job]:
        """The newest jobs."""
        ...

    def counts(self) -> dict[str, int]:
        """Jobs by status."""
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

    def chunk_count(self) -> int:
        """How many chunks are stored."""
        ...

    def chunk_vectors(self, document_id: str) -> list[Vector]:
        """The vectors of a document's chunks that have one, in position order."""
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
