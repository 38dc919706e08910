"""Memories in the PostgreSQL store: the rows (shared statements in memory_rows) with their
generated tsvector and pgvector column, HNSW search, and the entity index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.memory.model import Kind, Memory, Status, indexed_text
from memoryd.storage.entity_rows import EntityRows
from memoryd.storage.memory_rows import (
    MEMORY_COLUMNS,
    PURGE_ASSIGNMENTS,
    MemoryRows,
    MemoryVectorSearch,
    memory_params,
)
from memoryd.storage.postgres_connection import (
    POSTGRES_ROWS,
    PostgresDatabase,
    hnsw_rows,
    stored_vector,
    vector_param,
)
from memoryd.storage.protocols import VectorHit
from memoryd.storage.row_dialect import SqlConnection
from memoryd.storage.row_keys import RowKeys

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector


class PostgresMemoryRecords(MemoryRows):
    """Memory rows; their text index (a generated tsvector) and vector live in the row."""

    _dialect = POSTGRES_ROWS

    def insert(self, memory: Memory, vector: Vector | None) -> None:
        """Insert the row (with its vector when given) and link its entities."""
        purged = memory.purged_at is not None
        stored = vector if vector is not None and not purged else None
        if stored is not None:
            self._vector_tables.require_vectors()
        columns = MEMORY_COLUMNS + ", indexed_text" + (", embedding" if stored is not None else "")
        params = [
            *memory_params(memory, POSTGRES_ROWS, self._keys),
            "" if purged else indexed_text(memory),
        ]
        if stored is not None:
            params.append(vector_param(stored))
        self._db.execute(
            f"INSERT INTO memories ({columns}) VALUES ({POSTGRES_ROWS.marks(len(params))})",
            params,
        )
        if memory.entities and not purged:
            self._tag_entities(memory.id, memory.entities)

    def set_cues(self, memory: Memory, vector: Vector | None) -> None:
        """See :meth:`memoryd.storage.protocols.MemoryRecords.set_cues`."""
        stored = vector is not None and self._vector_tables.has_vectors()
        params: list[Any] = [POSTGRES_ROWS.stored_json(list(memory.cues)), indexed_text(memory)]
        if stored:
            assert vector is not None
            params.append(vector_param(vector))
        self._db.execute(
            "UPDATE memories SET cues = %s, indexed_text = %s"
            + (", embedding = %s" if stored else "")
            + " WHERE id = %s AND purged_at IS NULL",
            [*params, memory.id],
        )

    def purge(self, memory_id: str, at: datetime) -> None:
        """Blank every field that could hold the owner's words, the vector and the index."""
        self._db.execute(
            f"UPDATE memories SET {PURGE_ASSIGNMENTS}%s, indexed_text = '', embedding_next = NULL"
            + (", embedding = NULL" if self._vector_tables.has_vectors() else "")
            + " WHERE id = %s",
            (at, memory_id),
        )
        self._untag_purged(memory_id)

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by memory id."""
        if not memory_ids or not self._vector_tables.has_vectors():
            return {}
        rows = self._db.execute(
            "SELECT id, embedding FROM memories WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (list(memory_ids),),
        ).fetchall()
        return {row[0]: stored_vector(row[1]) for row in rows}

    def stamp_retrieved(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Record that recall packed these memories."""
        if memory_ids:
            self._db.execute(
                "UPDATE memories SET last_retrieved_at = %s, retrieval_hits = retrieval_hits + 1 "
                "WHERE id = ANY(%s)",
                (at, list(memory_ids)),
            )


class PostgresVectorSearch(MemoryVectorSearch[PostgresDatabase]):
    """HNSW (cosine) over memory vectors, filtered by status and kind; iterative scans keep
    filtered queries full."""

    def _search(
        self, vectors: Sequence[Vector], statuses: Sequence[Status], k: int, kinds: Sequence[Kind]
    ) -> list[list[VectorHit]]:
        # One statement for every vector: each one's own index scan (a LATERAL subquery, as
        # the single vector's statement reads it), its rows tagged with the vector's place.
        nearest = (
            "SELECT id, embedding <=> q.v AS distance FROM memories "
            "WHERE embedding IS NOT NULL AND status = ANY(%s)"
        )
        params: list[Any] = [[s.value for s in statuses]]
        if kinds:
            nearest += " AND kind = ANY(%s)"
            params.append([k.value for k in kinds])
        nearest += " ORDER BY embedding <=> q.v LIMIT %s"
        params.append(int(k))
        queries = ", ".join(["(%s, %s::vector)"] * len(vectors))
        sql = (
            f"SELECT q.n, h.id, h.distance FROM (VALUES {queries}) AS q(n, v) "
            f"CROSS JOIN LATERAL ({nearest}) AS h"
        )
        tagged = [value for n, vector in enumerate(vectors) for value in (n, vector_param(vector))]
        found: list[list[VectorHit]] = [[] for _ in vectors]
        for n, memory_id, distance in hnsw_rows(self._db, sql, [*tagged, *params], k):
            found[n].append(VectorHit(memory_id=memory_id, cosine=1.0 - float(distance)))
        return [sorted(hits, key=lambda hit: -hit.cosine) for hits in found]


class PostgresEntityIndex(EntityRows):
    """Entity names, aliases, and which active memories mention them."""

    def __init__(self, db: PostgresDatabase, keys: RowKeys) -> None:
        super().__init__(db, POSTGRES_ROWS, _entity_id, keys)

    def version(self) -> tuple[int, int]:
        """Changes whenever a name or alias is added or removed."""
        row = self._db.execute(
            "SELECT count(*), coalesce(max(seq), 0) FROM entity_aliases"
        ).fetchone()
        return int(row[0]), int(row[1])

    def mention_counts(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many memories (any status) each entity tags."""
        if not entity_ids:
            return {}
        rows = self._db.execute(
            "SELECT entity_id, count(*) FROM memory_entities WHERE entity_id = ANY(%s) "
            "GROUP BY entity_id",
            (list(entity_ids),),
        ).fetchall()
        found = {int(row[0]): int(row[1]) for row in rows}
        return {entity_id: found.get(entity_id, 0) for entity_id in entity_ids}

    def rank_by_entities(self, weights: Mapping[int, float], limit: int) -> list[str]:
        """Active memories tagged with the weighted entities, by summed weight, then newest."""
        if not weights or limit <= 0:
            return []
        ids = list(weights)
        values = [float(weights[i]) for i in ids]
        rows = self._db.execute(
            "SELECT me.memory_id, sum(w.weight) AS score FROM memory_entities me "
            "JOIN unnest(%s::bigint[], %s::float8[]) AS w(entity_id, weight) "
            "ON w.entity_id = me.entity_id "
            "JOIN memories m ON m.id = me.memory_id WHERE m.status = 'active' "
            "GROUP BY me.memory_id ORDER BY score DESC, me.memory_id DESC LIMIT %s",
            (ids, values, int(limit)),
        ).fetchall()
        return [row[0] for row in rows]


def _entity_id(db: SqlConnection, name: str, key: str) -> int:
    """The entity for ``name`` (created with its own alias when new)."""
    row = db.execute("SELECT entity_id FROM entity_aliases WHERE key = %s", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    row = db.execute(
        "INSERT INTO entities(name, key) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET name = entities.name RETURNING id",
        (name, key),
    ).fetchone()
    entity_id = int(row[0])
    db.execute(
        "INSERT INTO entity_aliases(key, alias, entity_id) VALUES (%s, %s, %s) "
        "ON CONFLICT (key) DO NOTHING",
        (key, name, entity_id),
    )
    return entity_id
