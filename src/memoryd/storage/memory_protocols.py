"""The memory capabilities of a store: memory rows (with their text and vector indexes), the
audit log, vector and full-text search over memories, and the entity index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memoryd.memory.model import AuditEntry, Kind, Memory, Status

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector


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

    def event_times_between(
        self, start: datetime, end: datetime, limit: int
    ) -> list[tuple[str, datetime]]:
        """(id, occurred_at) of what :meth:`events_between` returns, in its order."""
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

    def nearest_each(
        self,
        vectors: Sequence[Vector],
        statuses: Sequence[Status],
        k: int,
        kinds: Sequence[Kind] = (),
    ) -> list[list[VectorHit]]:
        """What :meth:`nearest` answers for each of ``vectors``, in their order, from one
        read of the index (a message and its sentences)."""
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


@dataclass(frozen=True)
class PhrasesWritten:
    """Phrases a memory written in [start, end) may hold ("tomorrow", written the day before
    the one asked about): :meth:`TextSearch.holding_written`."""

    phrases: tuple[str, ...]
    start: datetime
    end: datetime


class TextSearch(Protocol):
    """Full-text (BM25) search over active memories."""

    def search(self, terms: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> TextResult:
        """Up to ``k`` active memories (of ``kinds``, when given) containing any of ``terms``
        (content words, as :func:`memoryd.words.query_terms` makes them), best first, each
        with the terms it contains; and, for every term, how many active memories contain it."""
        ...

    def holding(self, phrases: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> list[str]:
        """Up to ``k`` active memories (of ``kinds``, when given) whose text holds any of
        ``phrases`` (words in a row, as the index splits them: "november 15"), newest first."""
        ...

    def holding_written(
        self, groups: Sequence[PhrasesWritten], k: int, kinds: Sequence[Kind] = ()
    ) -> list[str]:
        """Up to ``k`` active memories (of ``kinds``, when given) that hold any phrase of a
        group (as :meth:`holding` reads one) and were written (``occurred_at``, else
        ``created_at``) inside that group's [start, end), newest first."""
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
