"""The PostgreSQL backend: psycopg 3 with a connection pool, pgvector HNSW (cosine), tsvector
with GIN, named transactional migrations. Same protocols, same behaviour as SQLite.

Write transactions take one transaction-scoped advisory lock, so they serialise as SQLite's
``BEGIN IMMEDIATE`` does — across every process sharing the database. Queued jobs are claimed
with ``FOR UPDATE SKIP LOCKED``. The full-text leg compensates ``ts_rank``'s missing IDF by
weighting each query term with its BM25 inverse document frequency.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from ..embedding import Vector
from ..entities import normalize_name
from ..errors import StoreUnavailableError
from ..jobs import Job, JobStatus
from ..kb.model import Chunk, ChunkKey, Document
from ..model import Actor, AuditEntry, Importance, Kind, Memory, Source, Status, indexed_text
from .kb_rows import (
    CHUNK_COLUMNS,
    DOCUMENT_COLUMNS,
    DOCUMENT_UPSERT,
    chunk_from_row,
    chunk_params,
    document_from_row,
    document_params,
)
from .postgres_schema import MIGRATIONS, vector_columns_sql
from .protocols import EmbeddingSignature, TextHit, TextResult, VectorHit

# One key for "a memoryd write transaction is open" (pg_advisory_xact_lock), another for
# "migrations are running".
WRITE_LOCK_KEY = 0x6D656D6F7279
MIGRATION_LOCK_KEY = 0x6D656D6F7280
# Weight each full-text query term by its BM25 IDF (off only to measure what it is worth).
IDF_WEIGHTING = True
# HNSW candidates examined per query: enough that status filters still leave k rows.
EF_SEARCH = 200

_MEMORY_COLUMNS = (
    "id, kind, status, content, subject, predicate, object, slot, entities, confidence, "
    "importance, changes_behavior, occurred_at, source, source_ref, extractor_model, "
    "prompt_version, created_at, last_confirmed_at, last_retrieved_at, retrieval_hits, "
    "supersedes, superseded_by, purged_at"
)
_JOB_COLUMNS = (
    "id, kind, payload, status, attempts, next_attempt_at, created_at, claimed_at, finished_at, "
    "last_error, result"
)


class _Database:
    """A pool plus the transaction of the current thread (nested ``transaction`` joins it)."""

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self._local = threading.local()
        self.errors = psycopg
        try:
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True},
                configure=self._configure,
                open=True,
                timeout=15,
            )
            self.pool.wait(timeout=15)
        except Exception as error:  # psycopg_pool raises PoolTimeout; the cause says why
            raise StoreUnavailableError(
                f"cannot connect to PostgreSQL at {_redacted(url)}: {_cause(error)}; check the "
                "URL, that the server runs, and the user's password"
            ) from None

    @staticmethod
    def _configure(connection: Any) -> None:
        connection.execute("SET TIME ZONE 'UTC'")
        row = connection.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone()
        if row is not None:
            from pgvector.psycopg import register_vector

            register_vector(connection)

    @property
    def current(self) -> Any | None:
        return getattr(self._local, "connection", None)

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        """Run in this thread's transaction, or alone (autocommit) outside one."""
        connection = self.current
        if connection is not None:
            return connection.execute(sql, params)
        with self.pool.connection() as fresh:
            cursor = fresh.execute(sql, params)
            # Rows must be read before the connection goes back to the pool.
            return _Buffered(cursor.fetchall() if cursor.description else [], cursor.rowcount)

    @contextmanager
    def transaction(self, *, write_lock: bool = True) -> Iterator[None]:
        if self.current is not None:
            yield
            return
        with self.pool.connection() as connection:
            self._local.connection = connection
            try:
                with connection.transaction():
                    if write_lock:
                        connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
                    yield
            finally:
                self._local.connection = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if self.current is not None:
            yield
            return
        with self.pool.connection() as connection:
            self._local.connection = connection
            try:
                connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try:
                    yield
                finally:
                    connection.execute("COMMIT")
            finally:
                self._local.connection = None

    def reconfigure(self) -> None:
        """Re-run the connection setup (the vector type now exists)."""
        self.pool.close()
        from psycopg_pool import ConnectionPool

        self.pool = ConnectionPool(
            self.url, min_size=1, max_size=8, kwargs={"autocommit": True},
            configure=self._configure, open=True, timeout=15,
        )  # fmt: skip

    def close(self) -> None:
        self.pool.close()


class _Buffered:
    """Fetched rows of a statement run outside a transaction."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows


class PostgresMemoryRecords:
    """Memory rows; their text index (a generated tsvector) and vector live in the row."""

    def __init__(self, db: _Database, store: PostgresStore) -> None:
        self._db = db
        self._store = store

    def insert(self, memory: Memory, vector: Vector | None) -> None:
        """Insert the row (with its vector when given) and link its entities."""
        purged = memory.purged_at is not None
        has_vector = vector is not None and not purged
        if has_vector:
            self._store.require_vectors()
        columns = _MEMORY_COLUMNS + ", indexed_text" + (", embedding" if has_vector else "")
        params = [*_memory_params(memory), "" if purged else indexed_text(memory)]
        if has_vector:
            params.append(np.asarray(vector, dtype=np.float32))
        self._db.execute(
            f"INSERT INTO memories ({columns}) VALUES ({', '.join(['%s'] * len(params))})",
            params,
        )
        if memory.entities and not purged:
            for name in memory.entities:
                if normalize_name(name):
                    self._db.execute(
                        "INSERT INTO memory_entities(memory_id, entity_id) VALUES (%s, %s) "
                        "ON CONFLICT DO NOTHING",
                        (memory.id, _entity_id(self._db, name)),
                    )

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id."""
        row = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = %s", (memory_id,)
        ).fetchone()
        return _memory_from_row(row) if row else None

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Memories by id."""
        if not memory_ids:
            return {}
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ANY(%s)", (list(memory_ids),)
        ).fetchall()
        return {row[0]: _memory_from_row(row) for row in rows}

    def query(
        self,
        *,
        status: Status | None = None,
        kind: Kind | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[Memory]:
        """Memories by status and kind, by id (= creation time)."""
        clauses, params = [], []
        if status is not None:
            clauses.append("status = %s")
            params.append(status.value)
        if kind is not None:
            clauses.append("kind = %s")
            params.append(kind.value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        order = "DESC" if newest_first else "ASC"
        limit_sql = f"LIMIT {int(limit)}" if limit is not None else ""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories {where} ORDER BY id {order} {limit_sql}",
            params,
        ).fetchall()
        return [_memory_from_row(row) for row in rows]

    def count(self, *, status: Status | None = None) -> int:
        """How many memories."""
        if status is None:
            row = self._db.execute("SELECT sum(n) FROM memory_counts").fetchone()
        else:
            row = self._db.execute(
                "SELECT n FROM memory_counts WHERE status = %s", (status.value,)
            ).fetchone()
        return int(row[0] or 0) if row else 0

    def in_slot(self, slot: str, status: Status) -> list[Memory]:
        """Memories of one slot in one status, oldest first."""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE slot = %s AND status = %s ORDER BY id",
            (slot, status.value),
        ).fetchall()
        return [_memory_from_row(row) for row in rows]

    def set_status(self, memory_id: str, status: Status) -> None:
        """Change status (the vector index filters by the column)."""
        self._db.execute("UPDATE memories SET status = %s WHERE id = %s", (status.value, memory_id))

    def link_supersede(self, old_id: str, new_id: str, *, back_link: bool = True) -> None:
        """Point old → new (and new → old when ``back_link``)."""
        self._db.execute("UPDATE memories SET superseded_by = %s WHERE id = %s", (new_id, old_id))
        if back_link:
            self._db.execute("UPDATE memories SET supersedes = %s WHERE id = %s", (old_id, new_id))

    def mark_confirmed(self, memory_id: str, at: datetime) -> None:
        """Set last_confirmed_at."""
        self._db.execute(
            "UPDATE memories SET last_confirmed_at = %s WHERE id = %s", (at, memory_id)
        )

    def purge(self, memory_id: str, at: datetime) -> None:
        """Blank every field that could hold the owner's words, the vector and the index."""
        self._db.execute(
            "UPDATE memories SET content = '', subject = NULL, predicate = NULL, object = NULL, "
            "entities = '[]', source_ref = NULL, purged_at = %s, indexed_text = ''"
            + (", embedding = NULL" if self._store.has_vectors() else "")
            + " WHERE id = %s",
            (at, memory_id),
        )
        self._db.execute("DELETE FROM memory_entities WHERE memory_id = %s", (memory_id,))
        self._db.execute(
            "DELETE FROM entities e WHERE NOT EXISTS "
            "(SELECT 1 FROM memory_entities me WHERE me.entity_id = e.id)"
        )

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by memory id."""
        if not memory_ids or not self._store.has_vectors():
            return {}
        rows = self._db.execute(
            "SELECT id, embedding FROM memories WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (list(memory_ids),),
        ).fetchall()
        return {row[0]: _array(row[1]) for row in rows}

    def stamp_retrieved(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Record that recall packed these memories."""
        if memory_ids:
            self._db.execute(
                "UPDATE memories SET last_retrieved_at = %s, retrieval_hits = retrieval_hits + 1 "
                "WHERE id = ANY(%s)",
                (at, list(memory_ids)),
            )

    def events_between(self, start: datetime, end: datetime, limit: int) -> list[Memory]:
        """Active events with start ≤ occurred_at < end, newest first."""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE status = 'active' AND kind = 'event' "
            "AND occurred_at >= %s AND occurred_at < %s ORDER BY occurred_at DESC LIMIT %s",
            (start, end, int(limit)),
        ).fetchall()
        return [_memory_from_row(row) for row in rows]

    def standing_lessons(self) -> list[Memory]:
        """Active lessons of importance high or critical, critical first, newest first."""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE status = 'active' AND kind = 'lesson' "
            "AND importance IN ('high', 'critical') "
            "ORDER BY (importance = 'critical') DESC, id DESC"
        ).fetchall()
        return [_memory_from_row(row) for row in rows]


class PostgresAuditLog:
    """The audit_log table."""

    def __init__(self, db: _Database) -> None:
        self._db = db

    def append(self, entry: AuditEntry) -> None:
        """Record one change."""
        self._db.execute(
            "INSERT INTO audit_log (memory_id, at, actor, rule, action, from_status, to_status, "
            "reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                entry.memory_id,
                entry.at,
                entry.actor.value,
                entry.rule,
                entry.action,
                entry.from_status.value if entry.from_status else None,
                entry.to_status.value,
                entry.reason,
            ),
        )

    def for_memories(self, memory_ids: Sequence[str]) -> list[AuditEntry]:
        """Entries of these memories in write order."""
        if not memory_ids:
            return []
        rows = self._db.execute(
            "SELECT memory_id, at, actor, rule, action, from_status, to_status, reason "
            "FROM audit_log WHERE memory_id = ANY(%s) ORDER BY id",
            (list(memory_ids),),
        ).fetchall()
        return [
            AuditEntry(
                memory_id=row[0],
                at=_aware(row[1]),
                actor=Actor(row[2]),
                rule=row[3],
                action=row[4],
                from_status=Status(row[5]) if row[5] else None,
                to_status=Status(row[6]),
                reason=row[7],
            )
            for row in rows
        ]


class PostgresVectorSearch:
    """HNSW (cosine) over memory vectors, filtered by status and kind."""

    def __init__(self, db: _Database, store: PostgresStore) -> None:
        self._db = db
        self._store = store

    def nearest(
        self,
        vector: Vector,
        statuses: Sequence[Status],
        k: int,
        kinds: Sequence[Kind] = (),
    ) -> list[VectorHit]:
        """Up to k memories, closest first; iterative scans keep filtered queries full."""
        if not self._store.has_vectors() or k <= 0 or not statuses:
            return []
        sql = (
            "SELECT id, embedding <=> %s AS distance FROM memories "
            "WHERE embedding IS NOT NULL AND status = ANY(%s)"
        )
        query = np.asarray(vector, dtype=np.float32)
        params: list[Any] = [query, [s.value for s in statuses]]
        if kinds:
            sql += " AND kind = ANY(%s)"
            params.append([k.value for k in kinds])
        sql += " ORDER BY embedding <=> %s LIMIT %s"
        params += [query, int(k)]
        with self._db.transaction(write_lock=False):
            self._db.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(k) * 2)}")
            self._db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = self._db.execute(sql, params).fetchall()
        hits = [VectorHit(memory_id=row[0], cosine=1.0 - float(row[1])) for row in rows]
        # relaxed_order may return near-ties slightly out of order: restore exact order.
        return sorted(hits, key=lambda hit: -hit.cosine)


class PostgresTextSearch:
    """Full-text search over active memories, ranked BM25-like (IDF-weighted ts_rank)."""

    def __init__(self, db: _Database) -> None:
        self._db = db

    def search(self, terms: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> TextResult:
        """Active memories containing any of ``terms``, best first, with the terms each
        contains and every term's document frequency among active memories."""
        if not terms:
            return TextResult((), {})
        kind_filter = ""
        params: list[Any] = []
        if kinds:
            kind_filter = " AND kind = ANY(%s)"
            params.append([kind.value for kind in kinds])
        count = len(terms)
        ranked = _idf_ranked_sql(
            table="memories",
            key="id",
            where="status = 'active'",
            total="(SELECT n FROM memory_counts WHERE status = 'active')",
            terms=count,
            carry=", kind",
            narrow=kind_filter,
        )
        rows = self._db.execute(ranked, (*terms, *params, max(0, int(k)))).fetchall()
        if rows:
            frequency = dict(zip(terms, (int(n) for n in rows[0][1 + count :]), strict=True))
        else:
            # No hit to carry the counts (k = 0, or a kind filter that matched nothing).
            counts = ", ".join(f"count(*) FILTER (WHERE fts @@ q{i})" for i in range(count))
            queries = ", ".join(f"plainto_tsquery('english', %s) AS q{i}" for i in range(count))
            union = " || ".join(f"q{i}" for i in range(count))
            row = self._db.execute(
                f"WITH q AS (SELECT {queries}) SELECT {counts} FROM memories, q "
                f"WHERE status = 'active' AND fts @@ ({union})",
                tuple(terms),
            ).fetchone()
            frequency = dict(zip(terms, (int(n) for n in row), strict=True))
        hits = tuple(
            TextHit(
                row[0],
                frozenset(
                    term for term, found in zip(terms, row[1 : 1 + count], strict=True) if found
                ),
            )
            for row in rows
        )
        return TextResult(hits, frequency)


def _idf_ranked_sql(
    *, table: str, key: str, where: str, total: str, terms: int, carry: str = "", narrow: str = ""
) -> str:
    """Rows matching any term, ranked by Σ idf(term) × ts_rank(row, term); each row comes with
    whether it holds each term and, after those, each term's count among the rows ``where``
    selects. ``narrow`` (a condition on the ``carry`` columns) filters the ranked rows only,
    never the counts.

    ts_rank alone scores a common word like a rare one; the BM25 IDF, computed from how many
    candidate rows hold each term, restores the weight of rare words.
    """
    queries = ", ".join(f"plainto_tsquery('english', %s) AS q{i}" for i in range(terms))
    union = " || ".join(f"q{i}" for i in range(terms))
    counts = ", ".join(f"count(*) FILTER (WHERE fts @@ q{i}) AS n{i}" for i in range(terms))
    holds = ", ".join(f"fts @@ q{i}" for i in range(terms))
    frequencies = ", ".join(f"n{i}" for i in range(terms))
    score = (
        " + ".join(
            f"ln(1 + ({total} - n{i} + 0.5) / (n{i} + 0.5)) * ts_rank(fts, q{i})"
            for i in range(terms)
        )
        if IDF_WEIGHTING
        else f"ts_rank(fts, {union})"
    )
    narrowed = f"SELECT * FROM hits WHERE true{narrow}" if narrow else "SELECT * FROM hits"
    return (
        f"WITH q AS (SELECT {queries}), "
        # MATERIALIZED: computed once, whatever the planner guesses about the row count.
        f"hits AS MATERIALIZED (SELECT {key} AS key, fts{carry} FROM {table}, q "
        f"WHERE {where} AND fts @@ ({union})), "
        f"df AS MATERIALIZED (SELECT {counts} FROM hits, q), "
        f"ranked AS ({narrowed}) "
        f"SELECT key, {holds}, {frequencies} FROM ranked, q, df "
        f"ORDER BY {score} DESC, key DESC LIMIT %s"
    )


def _entity_id(db: _Database, name: str) -> int:
    """The entity for ``name`` (created with its own alias when new)."""
    key = normalize_name(name)
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


class PostgresEntityIndex:
    """Entity names, aliases, and which active memories mention them."""

    def __init__(self, db: _Database) -> None:
        self._db = db

    def version(self) -> tuple[int, int]:
        """Changes whenever a name or alias is added or removed."""
        row = self._db.execute(
            "SELECT count(*), coalesce(max(seq), 0) FROM entity_aliases"
        ).fetchone()
        return int(row[0]), int(row[1])

    def aliases(self) -> list[tuple[str, int]]:
        """Every (alias or name, entity id)."""
        rows = self._db.execute("SELECT alias, entity_id FROM entity_aliases").fetchall()
        return [(row[0], int(row[1])) for row in rows]

    def add_alias(self, name: str, alias: str) -> None:
        """Make ``alias`` another name of the entity called ``name``."""
        entity_id = _entity_id(self._db, name)
        self._db.execute(
            "INSERT INTO entity_aliases(key, alias, entity_id) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO UPDATE SET entity_id = excluded.entity_id, "
            "alias = excluded.alias",
            (normalize_name(alias), alias, entity_id),
        )

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

    def alias_pairs(self) -> list[tuple[str, str]]:
        """Every (entity name, alias), sorted."""
        rows = self._db.execute(
            "SELECT e.name, a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
        ).fetchall()
        return sorted((str(row[0]), str(row[1])) for row in rows)

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


class PostgresJobQueue:
    """The jobs table; claims take the row with FOR UPDATE SKIP LOCKED."""

    def __init__(self, db: _Database) -> None:
        self._db = db

    def enqueue(self, job: Job) -> None:
        """Add a job."""
        from psycopg.types.json import Jsonb

        self._db.execute(
            f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})",
            (
                job.id, job.kind, Jsonb(job.payload), job.status.value, job.attempts,
                job.next_attempt_at, job.created_at, job.claimed_at, job.finished_at,
                job.last_error, Jsonb(job.result) if job.result is not None else None,
            ),
        )  # fmt: skip

    def claim(self, kinds: Sequence[str], now: datetime, lease_seconds: int) -> Job | None:
        """The oldest due job of these kinds, or a running one whose lease ran out."""
        if not kinds:
            return None
        row = self._db.execute(
            "SELECT id FROM jobs WHERE kind = ANY(%s) AND "
            "((status = 'queued' AND next_attempt_at <= %s) OR "
            "(status = 'running' AND claimed_at <= %s)) "
            "ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
            (list(kinds), now, now - timedelta(seconds=lease_seconds)),
        ).fetchone()
        if row is None:
            return None
        self._db.execute(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, claimed_at = %s "
            "WHERE id = %s",
            (now, row[0]),
        )
        return self.get(row[0])

    def claim_one(self, job_id: str, now: datetime) -> Job | None:
        """Claim a specific queued job now."""
        cursor = self._db.execute(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, claimed_at = %s "
            "WHERE id = %s AND status = 'queued'",
            (now, job_id),
        )
        return self.get(job_id) if cursor.rowcount else None

    def finish(self, job_id: str, result: dict[str, Any], now: datetime) -> None:
        """Mark done; the conversation text is dropped."""
        from psycopg.types.json import Jsonb

        self._db.execute(
            "UPDATE jobs SET status = 'done', finished_at = %s, result = %s, last_error = NULL, "
            "payload = '{}' WHERE id = %s",
            (now, Jsonb(result), job_id),
        )

    def retry(self, job_id: str, error: str, next_attempt_at: datetime) -> None:
        """Back to the queue."""
        self._db.execute(
            "UPDATE jobs SET status = 'queued', next_attempt_at = %s, last_error = %s, "
            "claimed_at = NULL WHERE id = %s",
            (next_attempt_at, error, job_id),
        )

    def fail(self, job_id: str, error: str, now: datetime) -> None:
        """Give up."""
        self._db.execute(
            "UPDATE jobs SET status = 'failed', finished_at = %s, last_error = %s, "
            "payload = '{}' WHERE id = %s",
            (now, error, job_id),
        )

    def get(self, job_id: str) -> Job | None:
        """One job."""
        row = self._db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = %s", (job_id,)
        ).fetchone()
        return _job_from_row(row) if row else None

    def recent(self, limit: int) -> list[Job]:
        """Newest first."""
        rows = self._db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs ORDER BY id DESC LIMIT %s", (int(limit),)
        ).fetchall()
        return [_job_from_row(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """Jobs by status."""
        rows = self._db.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
        return {row[0]: int(row[1]) for row in rows}


class PostgresKnowledgeStore:
    """Documents and chunks; a chunk's tsvector and vector live in its row."""

    def __init__(self, db: _Database, store: PostgresStore) -> None:
        self._db = db
        self._store = store

    def save_document(self, document: Document) -> None:
        """Insert or update the document row."""
        self._db.execute(
            f"INSERT INTO documents ({DOCUMENT_COLUMNS}) VALUES ({', '.join(['%s'] * 15)}) "
            + DOCUMENT_UPSERT,
            document_params(document, _same),
        )

    def get_document(self, document_id: str) -> Document | None:
        """One document."""
        row = self._db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = %s", (document_id,)
        ).fetchone()
        return document_from_row(row, _same) if row else None

    def document_by_uri(self, source_uri: str) -> Document | None:
        """The document of one source."""
        row = self._db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE source_uri = %s", (source_uri,)
        ).fetchone()
        return document_from_row(row, _same) if row else None

    def documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first."""
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents"
        params: list[Any] = []
        if collection is not None:
            sql += " WHERE collection = %s"
            params.append(collection)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        return [document_from_row(row, _same) for row in self._db.execute(sql, params).fetchall()]

    def documents_by_id(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """Documents by id."""
        if not document_ids:
            return {}
        rows = self._db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ANY(%s)",
            (sorted(set(document_ids)),),
        ).fetchall()
        return {row[0]: document_from_row(row, _same) for row in rows}

    def replace_chunks(
        self, document_id: str, chunks: Sequence[Chunk], vectors: Sequence[Vector]
    ) -> None:
        """Drop the old chunks and write the new ones with their vectors."""
        self._store.require_vectors()
        self._db.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))
        for chunk, vector in zip(chunks, vectors, strict=True):
            self._db.execute(
                f"INSERT INTO chunks ({CHUNK_COLUMNS}, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (*chunk_params(chunk), np.asarray(vector, dtype=np.float32)),
            )

    def delete_document(self, document_id: str) -> None:
        """The document and its chunks."""
        self._db.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))
        self._db.execute("DELETE FROM documents WHERE id = %s", (document_id,))

    def chunks(self, document_id: str, first: int = 0, last: int | None = None) -> list[Chunk]:
        """Chunks in position order."""
        sql = f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = %s AND position >= %s"
        params: list[Any] = [document_id, first]
        if last is not None:
            sql += " AND position <= %s"
            params.append(last)
        rows = self._db.execute(sql + " ORDER BY position", params).fetchall()
        return [chunk_from_row(row) for row in rows]

    def chunks_by_key(self, keys: Sequence[ChunkKey]) -> dict[ChunkKey, Chunk]:
        """Chunks by (document, position)."""
        if not keys:
            return {}
        rows = self._db.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN unnest(%s::text[], %s::int[]) "
            "AS k(document_id, position) USING (document_id, position)",
            ([k.document_id for k in keys], [k.position for k in keys]),
        ).fetchall()
        found = {}
        for row in rows:
            chunk = chunk_from_row(row)
            found[ChunkKey(chunk.document_id, chunk.position)] = chunk
        return found

    def nearest_chunks(self, vector: Vector, k: int) -> list[tuple[ChunkKey, float]]:
        """HNSW cosine KNN over chunks of ready documents."""
        if k <= 0 or not self._store.has_vectors():
            return []
        query = np.asarray(vector, dtype=np.float32)
        with self._db.transaction(write_lock=False):
            self._db.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(k) * 2)}")
            self._db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = self._db.execute(
                "SELECT c.document_id, c.position, c.embedding <=> %s AS distance FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE d.status = 'ready' "
                "ORDER BY c.embedding <=> %s LIMIT %s",
                (query, query, int(k)),
            ).fetchall()
        hits = [(ChunkKey(row[0], int(row[1])), 1.0 - float(row[2])) for row in rows]
        return sorted(hits, key=lambda hit: -hit[1])

    def keyword_chunks(self, terms: Sequence[str], k: int) -> list[ChunkKey]:
        """IDF-weighted full-text ranking over breadcrumb and text, any term matching."""
        if not terms or k <= 0:
            return []
        sql = _idf_ranked_sql(
            table="chunks",
            key="(document_id, position)",
            where="document_id IN (SELECT id FROM documents WHERE status = 'ready')",
            total="(SELECT count(*) FROM chunks)",
            terms=len(terms),
        )
        rows = self._db.execute(sql, (*terms, int(k))).fetchall()
        keys = []
        for row in rows:
            document_id, position = _record_pair(row[0])
            keys.append(ChunkKey(document_id, position))
        return keys

    def chunk_count(self) -> int:
        """How many chunks."""
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def chunk_vectors(self, document_id: str) -> list[Vector]:
        """Chunk vectors in position order."""
        rows = self._db.execute(
            "SELECT embedding FROM chunks WHERE document_id = %s ORDER BY position",
            (document_id,),
        ).fetchall()
        return [_array(row[0]) for row in rows]


class PostgresStore:
    """A memoryd store in a PostgreSQL database."""

    def __init__(self, url: str, *, create: bool) -> None:
        self.url = url
        self.path = _redacted(url)
        self._db = _Database(url)
        self._vectors_ready: bool | None = None
        try:
            self._prepare(create)
        except BaseException:
            self._db.close()
            raise
        self.memories = PostgresMemoryRecords(self._db, self)
        self.audit = PostgresAuditLog(self._db)
        self.vectors = PostgresVectorSearch(self._db, self)
        self.text = PostgresTextSearch(self._db)
        self.entities = PostgresEntityIndex(self._db)
        self.jobs = PostgresJobQueue(self._db)
        self.kb = PostgresKnowledgeStore(self._db, self)

    def transaction(self) -> Any:
        """One database transaction holding the memoryd write lock; nested calls join it."""
        return self._db.transaction()

    def snapshot(self) -> Any:
        """A REPEATABLE READ, read-only transaction: every read inside sees one state."""
        return self._db.snapshot()

    def embedding_signature(self) -> EmbeddingSignature | None:
        """The recorded model and dimension."""
        rows = dict(
            self._db.execute(
                "SELECT key, value FROM meta "
                "WHERE key IN ('embedding_model', 'embedding_dimension')"
            ).fetchall()
        )
        if "embedding_model" not in rows:
            return None
        return EmbeddingSignature(rows["embedding_model"], int(rows["embedding_dimension"]))

    def initialize_embeddings(self, signature: EmbeddingSignature) -> None:
        """Record the signature and add the vector columns and HNSW indexes, atomically."""
        with self.transaction():
            self._db.execute(
                "INSERT INTO meta(key, value) VALUES ('embedding_model', %s), "
                "('embedding_dimension', %s)",
                (signature.model, str(signature.dimension)),
            )
            for statement in vector_columns_sql(signature.dimension):
                self._db.execute(statement)
        self._vectors_ready = True

    def get_meta(self, key: str) -> str | None:
        """A value from the key-value table."""
        row = self._db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the key-value table."""
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def meta_items(self) -> dict[str, str]:
        """The whole key-value table."""
        rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return {str(row[0]): str(row[1]) for row in rows}

    def try_lock(self, name: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        """Take the named lease if free or expired (inside a transaction)."""
        cursor = self._db.execute(
            "INSERT INTO locks(name, holder, expires_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
            "expires_at = excluded.expires_at WHERE locks.expires_at <= %s "
            "OR locks.holder = excluded.holder",
            (name, holder, now + timedelta(seconds=lease_seconds), now),
        )
        return bool(cursor.rowcount)

    def lock_holder(self, name: str) -> str | None:
        """Who holds the named lease."""
        row = self._db.execute("SELECT holder FROM locks WHERE name = %s", (name,)).fetchone()
        return str(row[0]) if row else None

    def take_over_lock(
        self, name: str, previous: str, holder: str, now: datetime, lease_seconds: int
    ) -> bool:
        """Take the lease from a holder known to be dead."""
        cursor = self._db.execute(
            "UPDATE locks SET holder = %s, expires_at = %s WHERE name = %s AND holder = %s",
            (holder, now + timedelta(seconds=lease_seconds), name, previous),
        )
        return bool(cursor.rowcount)

    def unlock(self, name: str, holder: str) -> None:
        """Release a lease this holder took."""
        self._db.execute("DELETE FROM locks WHERE name = %s AND holder = %s", (name, holder))

    def has_vectors(self) -> bool:
        """Whether the vector columns exist yet."""
        if self._vectors_ready is None:
            row = self._db.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = 'memories' "
                "AND column_name = 'embedding' AND table_schema = current_schema()"
            ).fetchone()
            self._vectors_ready = row is not None
        return self._vectors_ready

    def require_vectors(self) -> None:
        """Fail clearly when vectors are written before the signature exists."""
        if not self.has_vectors():
            raise StoreUnavailableError(
                f"store {self.path} has no embedding signature yet; run `memoryd init`"
            )

    def integrity_errors(self) -> list[str]:
        """Consistency checks PostgreSQL does not enforce by itself."""
        problems: list[str] = []
        checks = {
            "two active memories share a fact slot": (
                "SELECT count(*) FROM (SELECT slot FROM memories WHERE status = 'active' AND "
                "slot IS NOT NULL GROUP BY slot HAVING count(*) > 1) s"
            ),
            "memory counts disagree with the rows": (
                "SELECT count(*) FROM memory_counts c WHERE c.n <> "
                "(SELECT count(*) FROM memories m WHERE m.status = c.status)"
            ),
            "documents whose chunk count disagrees with their chunks": (
                "SELECT count(*) FROM documents d WHERE d.status = 'ready' AND d.chunk_count <> "
                "(SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"
            ),
            "supersede links to missing memories": (
                "SELECT count(*) FROM memories m WHERE (m.supersedes IS NOT NULL AND NOT EXISTS "
                "(SELECT 1 FROM memories o WHERE o.id = m.supersedes)) OR (m.superseded_by IS "
                "NOT NULL AND NOT EXISTS (SELECT 1 FROM memories o WHERE o.id = m.superseded_by))"
            ),
        }
        for message, sql in checks.items():
            count = int(self._db.execute(sql).fetchone()[0])
            if count:
                problems.append(f"{message}: {count}")
        return problems

    def erase_traces(self) -> None:
        """After a purge: rewrite the tables so the old row versions are gone from the data
        files. (PostgreSQL's write-ahead log keeps them until its segments are recycled.)"""
        with self._db.pool.connection() as connection:
            connection.execute(
                "VACUUM FULL memories, memory_entities, entities, entity_aliases, jobs"
            )

    def close(self) -> None:
        """Close the pool."""
        self._db.close()

    def _prepare(self, create: bool) -> None:
        """Create the extension and run migrations (under an advisory lock), or explain which
        privilege is missing."""
        errors = self._db.errors
        with self._db.pool.connection() as connection:
            tables = {
                row[0]
                for row in connection.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                ).fetchall()
            }
            if tables and "schema_migrations" not in tables:
                raise StoreUnavailableError(
                    f"{self.path} holds tables but is not a memoryd store; use an empty "
                    "database or schema"
                )
            if not tables and not create:
                raise StoreUnavailableError(
                    f"no memoryd store in {self.path}; run `memoryd init` first"
                )
            try:
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                    connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except errors.errors.InsufficientPrivilege:
                raise StoreUnavailableError(
                    f"cannot create the pgvector extension in {self.path}: the user lacks the "
                    "privilege. Ask a superuser to run `CREATE EXTENSION vector;` in this "
                    "database once, then run `memoryd init` again"
                ) from None
            except errors.errors.FeatureNotSupported as error:
                raise StoreUnavailableError(
                    f"the PostgreSQL server has no pgvector extension ({error}); install "
                    "pgvector on the server"
                ) from None
            try:
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                    connection.execute(
                        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
                        "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                    )
                    applied = {
                        row[0]
                        for row in connection.execute(
                            "SELECT name FROM schema_migrations"
                        ).fetchall()
                    }
                    for name, sql in MIGRATIONS:
                        if name in applied:
                            continue
                        connection.execute(sql)
                        connection.execute(
                            "INSERT INTO schema_migrations(name) VALUES (%s)", (name,)
                        )
            except errors.errors.InsufficientPrivilege as error:
                raise StoreUnavailableError(
                    f"cannot create memoryd's tables in {self.path}: {error.diag.message_primary}"
                    "; grant the user CREATE on the database's schema (GRANT CREATE ON SCHEMA "
                    "public TO <user>)"
                ) from None
        self._db.reconfigure()


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def _cause(error: BaseException) -> str:
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _array(value: Any) -> Vector:
    """A stored vector as float32 numpy (pgvector returns its own Vector type)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32).copy()


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _record_pair(value: Any) -> tuple[str, int]:
    """A (document_id, position) row value, as psycopg returns a record."""
    if isinstance(value, tuple):
        return str(value[0]), int(value[1])
    text = str(value).strip("()")
    document_id, position = text.rsplit(",", 1)
    return document_id.strip('"'), int(position)


def _memory_params(memory: Memory) -> list[Any]:
    from psycopg.types.json import Jsonb

    return [
        memory.id, memory.kind.value, memory.status.value, memory.content, memory.subject,
        memory.predicate, memory.object, memory.slot, Jsonb(list(memory.entities)),
        memory.confidence, memory.importance.value if memory.importance else None,
        memory.changes_behavior, memory.occurred_at, memory.source.value, memory.source_ref,
        memory.extractor_model, memory.prompt_version, memory.created_at,
        memory.last_confirmed_at, memory.last_retrieved_at, memory.retrieval_hits,
        memory.supersedes, memory.superseded_by, memory.purged_at,
    ]  # fmt: skip


_KINDS = {kind.value: kind for kind in Kind}
_STATUSES = {status.value: status for status in Status}
_SOURCES = {source.value: source for source in Source}
_IMPORTANCES = {importance.value: importance for importance in Importance}


def _memory_from_row(row: Sequence[Any]) -> Memory:
    return Memory(
        id=row[0],
        kind=_KINDS[row[1]],
        status=_STATUSES[row[2]],
        content=row[3],
        subject=row[4],
        predicate=row[5],
        object=row[6],
        slot=row[7],
        entities=tuple(row[8]) if row[8] else (),
        confidence=float(row[9]),
        importance=_IMPORTANCES[row[10]] if row[10] else None,
        changes_behavior=bool(row[11]),
        occurred_at=row[12],
        source=_SOURCES[row[13]],
        source_ref=row[14],
        extractor_model=row[15],
        prompt_version=row[16],
        created_at=row[17],
        last_confirmed_at=row[18],
        last_retrieved_at=row[19],
        retrieval_hits=int(row[20]),
        supersedes=row[21],
        superseded_by=row[22],
        purged_at=row[23],
    )


def _job_from_row(row: Sequence[Any]) -> Job:
    return Job(
        id=row[0],
        kind=row[1],
        payload=dict(row[2] or {}),
        status=JobStatus(row[3]),
        attempts=int(row[4]),
        next_attempt_at=row[5],
        created_at=row[6],
        claimed_at=row[7],
        finished_at=row[8],
        last_error=row[9],
        result=dict(row[10]) if row[10] is not None else None,
    )


def _same(value: Any) -> Any:
    """PostgreSQL hands back and takes aware datetimes as they are."""
    return value
