"""Memory rows, shared by the SQLite and PostgreSQL backends: the columns, a memory as
parameters and back, and the statements both run alike. Each backend adds what truly differs
(its text and vector indexes, id lists, entity creation)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from memoryd.memory.model import Importance, Kind, Memory, Source, Status
from memoryd.storage.entity_rows import EntityRows
from memoryd.storage.protocols import VectorHit
from memoryd.storage.row_dialect import RowDialect, SqlConnection, VectorTables, ids_starting
from memoryd.storage.row_keys import RowKeys

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

MEMORY_COLUMNS = (
    "id, kind, status, content, subject, predicate, object, slot, entities, confidence, "
    "importance, changes_behavior, occurred_at, source, source_ref, extractor_model, "
    "prompt_version, created_at, last_confirmed_at, last_retrieved_at, retrieval_hits, "
    "supersedes, superseded_by, purged_at, same_slot_as, subject_key, cues"
)
MEMORY_COLUMN_COUNT = len(MEMORY_COLUMNS.split(","))
SELECT_MEMORIES = f"SELECT {MEMORY_COLUMNS} FROM memories"
_BY_ID = SELECT_MEMORIES + " WHERE id = ?"
_IN_SLOT = SELECT_MEMORIES + " WHERE slot = ? AND status = ? ORDER BY id"
_EVENTS_WHERE = (
    " WHERE status = 'active' AND kind = 'event' "
    "AND occurred_at >= ? AND occurred_at < ? ORDER BY occurred_at DESC LIMIT ?"
)
_EVENTS_BETWEEN = SELECT_MEMORIES + _EVENTS_WHERE
# The same rows in the same order (the same index walk), two columns of each: recall's time
# leg reads 4 × its depth to keep its depth, and a whole row costs ~15 µs to read and convert.
_EVENT_TIMES_BETWEEN = "SELECT id, occurred_at FROM memories" + _EVENTS_WHERE
STANDING_LESSONS_WHERE = (
    " WHERE status = 'active' AND kind = 'lesson' "
    "AND importance IN ('high', 'critical') ORDER BY (importance = 'critical') DESC, id DESC"
)
_STANDING_LESSONS = SELECT_MEMORIES + STANDING_LESSONS_WHERE
_COUNT_ALL = "SELECT sum(n) FROM memory_counts"
_COUNT_STATUS = "SELECT n FROM memory_counts WHERE status = ?"
_SET_STATUS = "UPDATE memories SET status = ? WHERE id = ?"
_LINK_FORWARD = "UPDATE memories SET superseded_by = ? WHERE id = ?"
_LINK_BACK = "UPDATE memories SET supersedes = ? WHERE id = ?"
_MARK_CONFIRMED = "UPDATE memories SET last_confirmed_at = ? WHERE id = ?"
_SET_SLOT = "UPDATE memories SET slot = ?, same_slot_as = ?, subject_key = ? WHERE id = ?"
_UNLINK_FORWARD = "UPDATE memories SET superseded_by = NULL WHERE id = ? AND superseded_by = ?"
_UNLINK_BACK = "UPDATE memories SET supersedes = NULL WHERE id = ? AND supersedes = ?"
_LIVE_FACTS = " AND kind = 'fact' AND status IN ('active', 'pending') ORDER BY id"
_FACT_SUBJECTS = (
    "SELECT DISTINCT subject_key FROM memories WHERE subject_key IS NOT NULL "
    "AND status IN ('active', 'pending') AND kind = 'fact'"
)
_SLOTTED_FACTS = SELECT_MEMORIES + " WHERE slot IS NOT NULL ORDER BY id"
_TAG_ENTITY = (
    "INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
)
_UNTAG_MEMORY = "DELETE FROM memory_entities WHERE memory_id = ?"
# A name only a purged memory mentioned is private too.
_DROP_UNMENTIONED_ENTITIES = (
    "DELETE FROM entities WHERE NOT EXISTS "
    "(SELECT 1 FROM memory_entities me WHERE me.entity_id = entities.id)"
)
# Every field that could hold the owner's words; the backend appends its own index columns.
PURGE_ASSIGNMENTS = (
    "content = '', subject = NULL, predicate = NULL, object = NULL, entities = '[]', "
    "source_ref = NULL, same_slot_as = NULL, subject_key = NULL, cues = '[]', purged_at = "
)


def memory_params(memory: Memory, dialect: RowDialect, keys: RowKeys) -> tuple[Any, ...]:
    """A memory as row values, in MEMORY_COLUMNS order (its subject keyed by ``keys``)."""
    stored_time = dialect.stored_time
    return (
        memory.id, memory.kind.value, memory.status.value, memory.content, memory.subject,
        memory.predicate, memory.object, memory.slot, dialect.stored_json(list(memory.entities)),
        memory.confidence, memory.importance.value if memory.importance else None,
        memory.changes_behavior, stored_time(memory.occurred_at), memory.source.value,
        memory.source_ref, memory.extractor_model, memory.prompt_version,
        stored_time(memory.created_at), stored_time(memory.last_confirmed_at),
        stored_time(memory.last_retrieved_at), memory.retrieval_hits, memory.supersedes,
        memory.superseded_by, stored_time(memory.purged_at), memory.same_slot_as,
        subject_key(memory, keys), dialect.stored_json(list(memory.cues)),
    )  # fmt: skip


def subject_key(memory: Memory, keys: RowKeys) -> str | None:
    """The key a fact's vocabulary is looked up by, as the domain keys its subject (None for
    anything else)."""
    if memory.slot is None or not memory.subject:
        return None
    return keys.subject(memory.subject)


# Recall converts a hundred-odd rows per message: plain dict lookups beat Enum() calls.
_KINDS = {kind.value: kind for kind in Kind}
_STATUSES = {status.value: status for status in Status}
_SOURCES = {source.value: source for source in Source}
_IMPORTANCES = {importance.value: importance for importance in Importance}


# Recall converts up to a few hundred rows per message. A frozen dataclass's __init__ sets each
# of Memory's 26 fields through object.__setattr__ (~8 µs a memory); filling a new instance's
# __dict__ at once, in the fields' order, makes the same object in ~1 µs. Only while Memory is
# a plain dataclass with no __slots__, nothing run after __init__ and exactly the fields
# memory_from_row fills, in this order; else memory_from_row calls Memory(...).
_FILLED = (
    "id", "kind", "status", "content", "source", "created_at", "last_confirmed_at",
    "confidence", "subject", "predicate", "object", "slot", "entities", "importance",
    "changes_behavior", "occurred_at", "source_ref", "extractor_model", "prompt_version",
    "last_retrieved_at", "retrieval_hits", "supersedes", "superseded_by", "purged_at",
    "same_slot_as", "cues",
)  # fmt: skip
PLAIN_MEMORY = (
    tuple(f.name for f in dataclasses.fields(Memory)) == _FILLED
    and not hasattr(Memory, "__post_init__")
    and not hasattr(Memory, "__slots__")
)


def memory_from_row(row: Sequence[Any], dialect: RowDialect) -> Memory:
    """A MEMORY_COLUMNS row as a memory."""
    read_time = dialect.read_time
    fields = {
        "id": row[0],
        "kind": _KINDS[row[1]],
        "status": _STATUSES[row[2]],
        "content": row[3],
        "source": _SOURCES[row[13]],
        "created_at": read_time(row[17]),
        "last_confirmed_at": read_time(row[18]),
        "confidence": float(row[9]),
        "subject": row[4],
        "predicate": row[5],
        "object": row[6],
        "slot": row[7],
        "entities": dialect.read_names(row[8]) if row[8] and row[8] != "[]" else (),
        "importance": _IMPORTANCES[row[10]] if row[10] else None,
        "changes_behavior": bool(row[11]),
        "occurred_at": read_time(row[12]) if row[12] else None,
        "source_ref": row[14],
        "extractor_model": row[15],
        "prompt_version": row[16],
        "last_retrieved_at": read_time(row[19]) if row[19] else None,
        "retrieval_hits": int(row[20]),
        "supersedes": row[21],
        "superseded_by": row[22],
        "purged_at": read_time(row[23]) if row[23] else None,
        "same_slot_as": row[24],
        "cues": dialect.read_names(row[26]) if row[26] and row[26] != "[]" else (),
    }
    if not PLAIN_MEMORY:
        return Memory(**fields)
    memory = object.__new__(Memory)
    memory.__dict__.update(fields)
    return memory


class MemoryRows:
    """The memory-table reads and writes both backends run alike. A backend subclasses it,
    names its ``_dialect`` and adds its indexes (full text, vectors); names are tagged through
    the entity index."""

    _dialect: ClassVar[RowDialect]

    def __init__(
        self,
        connection: SqlConnection,
        vector_tables: VectorTables,
        entities: EntityRows,
        keys: RowKeys,
    ) -> None:
        self._db = connection
        self._vector_tables = vector_tables
        self._entities = entities
        self._keys = keys

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Memories by id."""
        dialect = self._dialect
        rows = self._db.select_in(SELECT_MEMORIES, "id", memory_ids)
        return {row[0]: memory_from_row(row, dialect) for row in rows}

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids that start with ``prefix``, in id order."""
        return ids_starting(self._db, self._dialect, "memories", prefix, limit)

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id."""
        dialect = self._dialect
        row = self._db.execute(dialect.sql(_BY_ID), (memory_id,)).fetchone()
        return memory_from_row(row, dialect) if row else None

    def query(
        self,
        *,
        status: Status | None = None,
        kind: Kind | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[Memory]:
        """Memories filtered by status and kind, by id (= creation time)."""
        dialect = self._dialect
        clauses, params = [], []
        if status is not None:
            clauses.append(f"status = {dialect.mark}")
            params.append(status.value)
        if kind is not None:
            clauses.append(f"kind = {dialect.mark}")
            params.append(kind.value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        order = "DESC" if newest_first else "ASC"
        limit_sql = f"LIMIT {int(limit)}" if limit is not None else ""
        rows = self._db.execute(
            f"{SELECT_MEMORIES} {where} ORDER BY id {order} {limit_sql}", params
        ).fetchall()
        return [memory_from_row(row, dialect) for row in rows]

    def count(self, *, status: Status | None = None) -> int:
        """How many memories."""
        if status is None:
            row = self._db.execute(_COUNT_ALL).fetchone()
        else:
            row = self._db.execute(self._dialect.sql(_COUNT_STATUS), (status.value,)).fetchone()
        return int(row[0] or 0) if row else 0

    def in_slot(self, slot: str, status: Status) -> list[Memory]:
        """Memories of one slot in one status, oldest first."""
        dialect = self._dialect
        rows = self._db.execute(dialect.sql(_IN_SLOT), (slot, status.value)).fetchall()
        return [memory_from_row(row, dialect) for row in rows]

    def set_status(self, memory_id: str, status: Status) -> None:
        """Change the row's status."""
        self._db.execute(self._dialect.sql(_SET_STATUS), (status.value, memory_id))

    def link_supersede(self, old_id: str, new_id: str, *, back_link: bool = True) -> None:
        """Point old → new (and new → old when ``back_link``)."""
        self._db.execute(self._dialect.sql(_LINK_FORWARD), (new_id, old_id))
        if back_link:
            self._db.execute(self._dialect.sql(_LINK_BACK), (old_id, new_id))

    def live_facts_about(self, subject_keys: Sequence[str]) -> list[Memory]:
        """Active and pending facts whose canonical subject is one of ``subject_keys``."""
        if not subject_keys:
            return []
        dialect = self._dialect
        marks = dialect.marks(len(subject_keys))
        rows = self._db.execute(
            dialect.sql(f"{SELECT_MEMORIES} WHERE subject_key IN ({marks}){_LIVE_FACTS}"),
            list(subject_keys),
        ).fetchall()
        return [memory_from_row(row, dialect) for row in rows]

    def fact_subjects(self) -> list[str]:
        """The canonical subjects of the active and pending facts."""
        return sorted(str(row[0]) for row in self._db.execute(_FACT_SUBJECTS).fetchall())

    def slotted(self) -> list[Memory]:
        """Every memory with a fact slot, whatever its status, by id."""
        dialect = self._dialect
        rows = self._db.execute(_SLOTTED_FACTS).fetchall()
        return [memory_from_row(row, dialect) for row in rows]

    def set_slot(
        self, memory_id: str, slot: str | None, same_slot_as: str | None, subject: str | None
    ) -> None:
        """Move a memory to ``slot`` (joined through ``same_slot_as``, or its own), with its
        canonical ``subject`` key."""
        self._db.execute(self._dialect.sql(_SET_SLOT), (slot, same_slot_as, subject, memory_id))

    def unlink_supersede(self, old_id: str, new_id: str) -> None:
        """Undo :meth:`link_supersede`: old no longer points at new, nor new back at old."""
        dialect = self._dialect
        self._db.execute(dialect.sql(_UNLINK_FORWARD), (old_id, new_id))
        self._db.execute(dialect.sql(_UNLINK_BACK), (new_id, old_id))

    def mark_confirmed(self, memory_id: str, at: datetime) -> None:
        """Set last_confirmed_at."""
        dialect = self._dialect
        self._db.execute(dialect.sql(_MARK_CONFIRMED), (dialect.stored_time(at), memory_id))

    def events_between(self, start: datetime, end: datetime, limit: int) -> list[Memory]:
        """Active events with start ≤ occurred_at < end, newest first."""
        dialect = self._dialect
        rows = self._db.execute(
            dialect.sql(_EVENTS_BETWEEN),
            (dialect.stored_time(start), dialect.stored_time(end), int(limit)),
        ).fetchall()
        return [memory_from_row(row, dialect) for row in rows]

    def event_times_between(
        self, start: datetime, end: datetime, limit: int
    ) -> list[tuple[str, datetime]]:
        """(id, occurred_at) of what :meth:`events_between` returns, in its order."""
        dialect = self._dialect
        read_time = dialect.read_time
        rows = self._db.execute(
            dialect.sql(_EVENT_TIMES_BETWEEN),
            (dialect.stored_time(start), dialect.stored_time(end), int(limit)),
        ).fetchall()
        return [(row[0], read_time(row[1])) for row in rows]

    _standing_lessons_sql: ClassVar[str] = _STANDING_LESSONS

    def standing_lessons(self) -> list[Memory]:
        """Active lessons of importance high or critical, critical first, newest first."""
        rows = self._db.execute(self._standing_lessons_sql).fetchall()
        return [memory_from_row(row, self._dialect) for row in rows]

    def _tag_entities(self, memory_id: str, names: Sequence[str]) -> None:
        """Link the memory to the entity of each name (created when new)."""
        statement = self._dialect.sql(_TAG_ENTITY)
        for name in names:
            if self._keys.entity(name):
                self._db.execute(statement, (memory_id, self._entities.entity_id(name)))

    def _untag_purged(self, memory_id: str) -> None:
        """Drop the memory's entity links, and entities no other memory mentions."""
        self._db.execute(self._dialect.sql(_UNTAG_MEMORY), (memory_id,))
        self._db.execute(_DROP_UNMENTIONED_ENTITIES)


ConnectionT = TypeVar("ConnectionT", bound=SqlConnection)


class MemoryVectorSearch(Generic[ConnectionT]):
    """Nearest memories by vector: what both backends answer without a query (no vectors
    yet, nothing wanted); a backend adds ``_search``, its index's KNN."""

    def __init__(self, connection: ConnectionT, vector_tables: VectorTables) -> None:
        self._db = connection
        self._vector_tables = vector_tables

    def nearest(
        self,
        vector: Vector,
        statuses: Sequence[Status],
        k: int,
        kinds: Sequence[Kind] = (),
    ) -> list[VectorHit]:
        """Up to k memories in the given statuses (and kinds, when given), closest first."""
        return self.nearest_each([vector], statuses, k, kinds)[0]

    def nearest_each(
        self,
        vectors: Sequence[Vector],
        statuses: Sequence[Status],
        k: int,
        kinds: Sequence[Kind] = (),
    ) -> list[list[VectorHit]]:
        """What :meth:`nearest` answers for each of ``vectors``, in order, read in one pass."""
        if len(vectors) == 0:
            return []
        if not self._vector_tables.has_vectors() or k <= 0 or not statuses:
            return [[] for _ in vectors]
        self._vector_tables.check_space()
        return self._search(vectors, statuses, k, kinds)

    def _search(
        self, vectors: Sequence[Vector], statuses: Sequence[Status], k: int, kinds: Sequence[Kind]
    ) -> list[list[VectorHit]]:
        raise NotImplementedError
