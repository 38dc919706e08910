"""Memories in the SQLite store: the rows (shared statements in memory_rows), their FTS5
entry and sqlite-vec vectors (float and bit index) under the row's rowid, and the entity
index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.clock import to_db
from memoryd.memory.model import Memory, Status, indexed_text
from memoryd.storage.entity_rows import EntityRows
from memoryd.storage.memory_rows import (
    MEMORY_COLUMN_COUNT,
    MEMORY_COLUMNS,
    PURGE_ASSIGNMENTS,
    SELECT_MEMORIES,
    STANDING_LESSONS_WHERE,
    MemoryRows,
    memory_params,
)
from memoryd.storage.protocols import chunks
from memoryd.storage.row_dialect import SqlConnection
from memoryd.storage.row_keys import RowKeys
from memoryd.storage.sqlite_connection import (
    SQLITE_ROWS,
    SqliteConnection,
    stored_vector,
    vector_blob,
)
from memoryd.storage.sqlite_search import INACTIVE, few_inactive, inactive_select

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

_SELECT_VECTORS = (
    "SELECT m.id, e.embedding FROM memory_embeddings e JOIN memories m ON m.rowid = e.rowid"
)
_INSERT = (
    f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES ({SQLITE_ROWS.marks(MEMORY_COLUMN_COUNT)})"
)
# The ids of the memories that are not active (an index-only read of memories_by_status_kind).
_INACTIVE_IDS = inactive_select("id")
# Up to this many memories that are not active, the entity leg leaves them out by id (SQLite
# keeps the ids in a set for the statement) instead of reading every tagged memory's row.
INACTIVE_IDS_MAX = 1000


class SqliteMemoryRecords(MemoryRows):
    """Memory rows, their FTS5 text and their sqlite-vec vectors, written together."""

    _dialect = SQLITE_ROWS
    # Without statistics SQLite reads every active lesson through (status, kind, …) to find
    # the few standing ones (0.7 ms at 10k memories); the partial index holds just those.
    _standing_lessons_sql = (
        SELECT_MEMORIES + " INDEXED BY memories_standing_lessons" + STANDING_LESSONS_WHERE
    )

    def insert(self, memory: Memory, vector: Vector | None) -> None:
        """Insert the row, its full-text entry and (when given) its vector."""
        cursor = self._db.execute(_INSERT, memory_params(memory, SQLITE_ROWS, self._keys))
        rowid = cursor.lastrowid
        if memory.purged_at is None:
            self._db.execute(
                "INSERT INTO memory_fts(rowid, content) VALUES (?, ?)",
                (rowid, indexed_text(memory)),
            )
        if vector is not None and memory.purged_at is None:
            self._vector_tables.require_vectors()
            self._db.execute(
                "INSERT INTO memory_embeddings(rowid, embedding) VALUES (?, ?)",
                (rowid, vector_blob(vector)),
            )
            self._db.execute(
                "INSERT INTO memory_bits(rowid, status, kind, bits) "
                "VALUES (?, ?, ?, vec_quantize_binary(?))",
                (rowid, memory.status.value, memory.kind.value, vector_blob(vector)),
            )
        if memory.entities and memory.purged_at is None:
            self._tag_entities(memory.id, memory.entities)

    def set_status(self, memory_id: str, status: Status) -> None:
        """Change status in the row and in the vector metadata."""
        super().set_status(memory_id, status)
        if not self._vector_tables.has_vectors():
            return
        # vec0 cannot update a partition key: move the row to its new partition.
        row = self._db.execute(
            "SELECT b.rowid, b.kind FROM memory_bits b JOIN memories m ON m.rowid = b.rowid "
            "WHERE m.id = ?",
            (memory_id,),
        ).fetchone()
        if row is not None:
            self._db.execute("DELETE FROM memory_bits WHERE rowid = ?", (row[0],))
            self._db.execute(
                "INSERT INTO memory_bits(rowid, status, kind, bits) "
                "SELECT rowid, ?, ?, vec_quantize_binary(embedding) FROM memory_embeddings "
                "WHERE rowid = ?",
                (status.value, row[1], row[0]),
            )

    def set_cues(self, memory: Memory, vector: Vector | None) -> None:
        """See :meth:`memoryd.storage.protocols.MemoryRecords.set_cues`."""
        row = self._db.execute(
            "SELECT rowid FROM memories WHERE id = ? AND purged_at IS NULL", (memory.id,)
        ).fetchone()
        if row is None:
            return
        rowid = row[0]
        cues = SQLITE_ROWS.stored_json(list(memory.cues))
        self._db.execute("UPDATE memories SET cues = ? WHERE rowid = ?", (cues, rowid))
        self._db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
        self._db.execute(
            "INSERT INTO memory_fts(rowid, content) VALUES (?, ?)", (rowid, indexed_text(memory))
        )
        if vector is None or not self._vector_tables.has_vectors():
            return
        self._db.execute(
            "UPDATE memory_embeddings SET embedding = ? WHERE rowid = ?",
            (vector_blob(vector), rowid),
        )
        # vec0 cannot update in place: the bit row is replaced (status, kind as they are).
        self._db.execute("DELETE FROM memory_bits WHERE rowid = ?", (rowid,))
        self._db.execute(
            "INSERT INTO memory_bits(rowid, status, kind, bits) "
            "SELECT m.rowid, m.status, m.kind, vec_quantize_binary(e.embedding) "
            "FROM memories m JOIN memory_embeddings e ON e.rowid = m.rowid WHERE m.rowid = ?",
            (rowid,),
        )

    def purge(self, memory_id: str, at: datetime) -> None:
        """Blank every field that could hold the owner's words; drop text and vector index."""
        row = self._db.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            return
        self._db.execute(
            f"UPDATE memories SET {PURGE_ASSIGNMENTS}? WHERE id = ?", (to_db(at), memory_id)
        )
        self._db.execute("DELETE FROM memory_fts WHERE rowid = ?", (row[0],))
        if self._vector_tables.has_vectors():
            # The float vector goes with secure_delete. vec0 can only flag its bit row free
            # (0.1.9 cannot overwrite bit vectors): 48 bytes of sign bits, no text, stay until
            # the slot is reused.
            self._db.execute("DELETE FROM memory_bits WHERE rowid = ?", (row[0],))
            self._db.execute("DELETE FROM memory_embeddings WHERE rowid = ?", (row[0],))
        # A re-embed's vector for the memory goes too.
        self._db.execute("DELETE FROM memory_embeddings_next WHERE rowid = ?", (row[0],))
        self._untag_purged(memory_id)

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by memory id (memories without one are absent)."""
        rows = self._db.select_in(_SELECT_VECTORS, "m.id", memory_ids)
        return {row[0]: stored_vector(row[1]) for row in rows}

    def stamp_retrieved(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Record that recall packed these memories."""
        for group in chunks(list(memory_ids)):
            self._db.execute(
                "UPDATE memories SET last_retrieved_at = ?, retrieval_hits = retrieval_hits + 1 "
                f"WHERE id IN ({SQLITE_ROWS.marks(len(group))})",
                (to_db(at), *group),
            )


def _entity_id(db: SqlConnection, name: str, key: str) -> int:
    """The id of the entity a name or alias refers to, creating the entity when new."""
    row = db.execute("SELECT entity_id FROM entity_aliases WHERE key = ?", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    entity_id = int(
        db.execute("INSERT INTO entities(name, key) VALUES (?, ?)", (name, key)).lastrowid
    )
    db.execute(
        "INSERT INTO entity_aliases(key, alias, entity_id) VALUES (?, ?, ?)", (key, name, entity_id)
    )
    return entity_id


class SqliteEntityIndex(EntityRows):
    """Entity names, aliases, and which active memories mention them."""

    def __init__(self, connection: SqliteConnection, keys: RowKeys) -> None:
        super().__init__(connection, SQLITE_ROWS, _entity_id, keys)
        self.inactive_ids_max = INACTIVE_IDS_MAX

    def version(self) -> tuple[int, int]:
        """Changes whenever a name or alias is added or removed (to refresh cached matchers)."""
        row = self._db.execute("SELECT count(*), coalesce(max(rowid), 0) FROM entity_aliases")
        count, newest = row.fetchone()
        return int(count), int(newest)

    def mention_counts(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many memories (any status) each entity tags: an index-only count."""
        counts: dict[int, int] = {}
        for entity_id in entity_ids:
            row = self._db.execute(
                "SELECT count(*) FROM memory_entities WHERE entity_id = ?", (entity_id,)
            ).fetchone()
            counts[entity_id] = int(row[0])
        return counts

    def rank_by_entities(self, weights: Mapping[int, float], limit: int) -> list[str]:
        """Active memories tagged with the weighted entities, by summed weight, then newest."""
        if not weights or limit <= 0:
            return []
        cases = " ".join("WHEN ? THEN ?" for _ in weights)
        params: list[Any] = [v for pair in weights.items() for v in pair]
        tagged = f"me.entity_id IN ({SQLITE_ROWS.marks(len(weights))})"
        # Why: joining every tagged row to its memory for the status reads one memory row per
        # tag (a name tagging 456 of 10,000 memories: ~2.2 ms when the reader's page cache was
        # just emptied by a write, as after every recall's stamp, against ~0.7 ms). With few
        # memories not active, they are left out by id instead (the same rows: every tag has
        # its memory, a foreign key).
        if self._few_inactive():
            source = f"memory_entities me WHERE {tagged} AND me.memory_id NOT IN ({_INACTIVE_IDS})"
            filters: tuple[str, ...] = INACTIVE
        else:
            source = (
                "memory_entities me JOIN memories m ON m.id = me.memory_id "
                f"WHERE {tagged} AND m.status = 'active'"
            )
            filters = ()
        rows = self._db.execute(
            f"SELECT me.memory_id, sum(CASE me.entity_id {cases} END) AS score FROM {source} "
            "GROUP BY me.memory_id ORDER BY score DESC, me.memory_id DESC LIMIT ?",
            (*params, *weights.keys(), *filters, int(limit)),
        ).fetchall()
        return [row[0] for row in rows]

    def _few_inactive(self) -> bool:
        """Whether at most ``inactive_ids_max`` memories are not active (counted no further)."""
        return few_inactive(self._db, self.inactive_ids_max)
