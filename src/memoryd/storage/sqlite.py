"""The embedded SQLite backend: one file, WAL, FTS5 for BM25, sqlite-vec for vectors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import sqlean as sqlite3
import sqlite_vec

from ..clock import from_db, to_db
from ..embedding import Vector
from ..entities import normalize_name
from ..errors import StoreUnavailableError
from ..jobs import Job, JobStatus
from ..model import Actor, AuditEntry, Importance, Kind, Memory, Source, Status, indexed_text
from .protocols import EmbeddingSignature, TextHit, TextResult, VectorHit, chunks
from .sqlite_kb import SqliteKnowledgeStore
from .sqlite_schema import MIGRATIONS, chunk_vector_sql, vector_index_sql

# The bit prefilter keeps this many candidates per wanted result (and at least PREFILTER_MIN)
# for the exact re-rank; measured on MiniLM vectors it recovers the float top-k almost whole.
PREFILTER_OVERSAMPLE = 2
PREFILTER_MIN = 64

_MEMORY_COLUMNS = (
    "id, kind, status, content, subject, predicate, object, slot, entities, confidence, "
    "importance, changes_behavior, occurred_at, source, source_ref, extractor_model, "
    "prompt_version, created_at, last_confirmed_at, last_retrieved_at, retrieval_hits, "
    "supersedes, superseded_by, purged_at"
)


class _Connection:
    """One sqlite connection, serialised by a re-entrant lock, with nestable transactions."""

    def __init__(self, path: Path) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.raw = _connect(path)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self.lock:
            return self.raw.execute(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.lock:
            if self.depth:
                self.depth += 1
                try:
                    yield
                finally:
                    self.depth -= 1
                return
            self.raw.execute("BEGIN IMMEDIATE")
            self.depth = 1
            try:
                yield
            except BaseException:
                self.raw.execute("ROLLBACK")
                raise
            else:
                self.raw.execute("COMMIT")
            finally:
                self.depth = 0


def _connect(path: Path) -> Any:
    if str(path) != ":memory:":
        if path.is_dir():
            raise StoreUnavailableError(
                f"cannot open store {path}: it is a directory; pass a file path with --db "
                "or MEMORYD_DB"
            )
        if not path.parent.is_dir():
            raise StoreUnavailableError(
                f"cannot open store {path}: directory {path.parent} does not exist; create it "
                "or choose another path with --db or MEMORYD_DB"
            )
    try:
        raw = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        raw.enable_load_extension(True)
        sqlite_vec.load(raw)
        raw.enable_load_extension(False)
        raw.execute("PRAGMA busy_timeout = 10000")
    except sqlite3.DatabaseError as error:
        raise StoreUnavailableError(
            f"cannot open store {path}: {error}; is this a memoryd store? Point --db or "
            "MEMORYD_DB at a memoryd file, or run `memoryd init` on a new path"
        ) from None
    return raw


class SqliteMemoryRecords:
    """Memory rows, their FTS5 text and their sqlite-vec vectors, written together."""

    def __init__(self, connection: _Connection, store: SqliteStore) -> None:
        self._db = connection
        self._store = store

    def insert(self, memory: Memory, vector: Vector | None) -> None:
        """Insert the row, its full-text entry and (when given) its vector."""
        cursor = self._db.execute(
            f"INSERT INTO memories ({_MEMORY_COLUMNS}) VALUES ({', '.join('?' * 24)})",
            _memory_params(memory),
        )
        rowid = cursor.lastrowid
        if memory.purged_at is None:
            self._db.execute(
                "INSERT INTO memory_fts(rowid, content) VALUES (?, ?)",
                (rowid, indexed_text(memory)),
            )
        if vector is not None and memory.purged_at is None:
            self._store.require_vectors()
            self._db.execute(
                "INSERT INTO memory_embeddings(rowid, embedding) VALUES (?, ?)",
                (rowid, _blob(vector)),
            )
            self._db.execute(
                "INSERT INTO memory_bits(rowid, status, kind, bits) "
                "VALUES (?, ?, ?, vec_quantize_binary(?))",
                (rowid, memory.status.value, memory.kind.value, _blob(vector)),
            )
        if memory.entities and memory.purged_at is None:
            self._link_entities(memory.id, memory.entities)

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id."""
        row = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return _memory_from_row(row) if row else None

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Memories by id."""
        found: dict[str, Memory] = {}
        for group in chunks(list(memory_ids)):
            marks = ", ".join("?" * len(group))
            rows = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})",
                tuple(group),
            ).fetchall()
            for row in rows:
                memory = _memory_from_row(row)
                found[memory.id] = memory
        return found

    def query(
        self,
        *,
        status: Status | None = None,
        kind: Kind | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[Memory]:
        """Memories filtered by status and kind, by id (= creation time)."""
        clauses, params = [], []
        if status is not None:
            clauses.append("status = ?")
            params.append(status.value)
        if kind is not None:
            clauses.append("kind = ?")
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
                "SELECT n FROM memory_counts WHERE status = ?", (status.value,)
            ).fetchone()
        return int(row[0] or 0) if row else 0

    def in_slot(self, slot: str, status: Status) -> list[Memory]:
        """Memories of one slot in one status, oldest first."""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE slot = ? AND status = ? ORDER BY id",
            (slot, status.value),
        ).fetchall()
        return [_memory_from_row(row) for row in rows]

    def set_status(self, memory_id: str, status: Status) -> None:
        """Change status in the row and in the vector metadata."""
        self._db.execute("UPDATE memories SET status = ? WHERE id = ?", (status.value, memory_id))
        if not self._store.has_vectors():
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

    def link_supersede(self, old_id: str, new_id: str, *, back_link: bool = True) -> None:
        """Point old → new (and new → old when ``back_link``)."""
        self._db.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (new_id, old_id))
        if back_link:
            self._db.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (old_id, new_id))

    def mark_confirmed(self, memory_id: str, at: datetime) -> None:
        """Set last_confirmed_at."""
        self._db.execute(
            "UPDATE memories SET last_confirmed_at = ? WHERE id = ?", (to_db(at), memory_id)
        )

    def purge(self, memory_id: str, at: datetime) -> None:
        """Blank every field that could hold the owner's words; drop text and vector index."""
        row = self._db.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            return
        self._db.execute(
            "UPDATE memories SET content = '', subject = NULL, predicate = NULL, object = NULL, "
            "entities = '[]', source_ref = NULL, purged_at = ? WHERE id = ?",
            (to_db(at), memory_id),
        )
        self._db.execute("DELETE FROM memory_fts WHERE rowid = ?", (row[0],))
        if self._store.has_vectors():
            # The float vector goes with secure_delete. vec0 can only flag its bit row free
            # (0.1.9 cannot overwrite bit vectors): 48 bytes of sign bits, no text, stay until
            # the slot is reused.
            self._db.execute("DELETE FROM memory_bits WHERE rowid = ?", (row[0],))
            self._db.execute("DELETE FROM memory_embeddings WHERE rowid = ?", (row[0],))
        self._db.execute("DELETE FROM memory_entities WHERE memory_id = ?", (memory_id,))
        # A name only a purged memory mentioned is private too.
        self._db.execute(
            "DELETE FROM entities WHERE NOT EXISTS "
            "(SELECT 1 FROM memory_entities me WHERE me.entity_id = entities.id)"
        )

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by memory id (memories without one are absent)."""
        found: dict[str, Vector] = {}
        for group in chunks(list(memory_ids)):
            rows = self._db.execute(
                "SELECT m.id, e.embedding FROM memory_embeddings e JOIN memories m "
                f"ON m.rowid = e.rowid WHERE m.id IN ({', '.join('?' * len(group))})",
                tuple(group),
            ).fetchall()
            for row in rows:
                found[row[0]] = np.frombuffer(row[1], dtype=np.float32).copy()
        return found

    def stamp_retrieved(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Record that recall packed these memories."""
        for group in chunks(list(memory_ids)):
            self._db.execute(
                "UPDATE memories SET last_retrieved_at = ?, retrieval_hits = retrieval_hits + 1 "
                f"WHERE id IN ({', '.join('?' * len(group))})",
                (to_db(at), *group),
            )

    def events_between(self, start: datetime, end: datetime, limit: int) -> list[Memory]:
        """Active events with start ≤ occurred_at < end."""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE status = 'active' AND kind = 'event' "
            "AND occurred_at >= ? AND occurred_at < ? ORDER BY occurred_at DESC LIMIT ?",
            (to_db(start), to_db(end), int(limit)),
        ).fetchall()
        return [_memory_from_row(row) for row in rows]

    def standing_lessons(self) -> list[Memory]:
        """Active lessons of importance high or critical, critical first, newest first."""
        rows = self._db.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE status = 'active' AND kind = 'lesson' "
            "AND importance IN ('high', 'critical') "
            "ORDER BY importance = 'critical' DESC, id DESC"
        ).fetchall()
        return [_memory_from_row(row) for row in rows]

    def _link_entities(self, memory_id: str, names: Sequence[str]) -> None:
        for name in names:
            if not normalize_name(name):
                continue
            self._db.execute(
                "INSERT OR IGNORE INTO memory_entities(memory_id, entity_id) VALUES (?, ?)",
                (memory_id, _entity_id(self._db, name)),
            )


class SqliteAuditLog:
    """The audit_log table."""

    def __init__(self, connection: _Connection) -> None:
        self._db = connection

    def append(self, entry: AuditEntry) -> None:
        """Record one change."""
        self._db.execute(
            "INSERT INTO audit_log (memory_id, at, actor, rule, action, from_status, to_status, "
            "reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.memory_id,
                to_db(entry.at),
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
        rows: list[Any] = []
        for group in chunks(list(memory_ids)):
            rows.extend(
                self._db.execute(
                    "SELECT id, memory_id, at, actor, rule, action, from_status, to_status, reason "
                    f"FROM audit_log WHERE memory_id IN ({', '.join('?' * len(group))})",
                    tuple(group),
                ).fetchall()
            )
        rows.sort(key=lambda row: row[0])
        return [
            AuditEntry(
                memory_id=row[1],
                at=_required_time(row[2]),
                actor=Actor(row[3]),
                rule=row[4],
                action=row[5],
                from_status=Status(row[6]) if row[6] else None,
                to_status=Status(row[7]),
                reason=row[8],
            )
            for row in rows
        ]


class SqliteVectorSearch:
    """KNN over memory vectors with sqlite-vec, filtered by status metadata."""

    def __init__(self, connection: _Connection, store: SqliteStore) -> None:
        self._db = connection
        self._store = store

    def nearest(
        self,
        vector: Vector,
        statuses: Sequence[Status],
        k: int,
        kinds: Sequence[Kind] = (),
    ) -> list[VectorHit]:
        """Up to k memories in the given statuses (and kinds, when given), closest first:
        a Hamming prefilter over the bit index, then the exact cosine on the candidates."""
        if not self._store.has_vectors() or k <= 0 or not statuses:
            return []
        query = _blob(vector)
        pool = max(k * PREFILTER_OVERSAMPLE, PREFILTER_MIN)
        candidates: list[int] = []
        for status in statuses:
            sql = (
                "SELECT rowid FROM memory_bits WHERE bits MATCH vec_quantize_binary(?) "
                "AND k = ? AND status = ?"
            )
            params: list[Any] = [query, pool, status.value]
            if kinds:
                sql += f" AND kind IN ({', '.join('?' * len(kinds))})"
                params.extend(kind.value for kind in kinds)
            candidates.extend(row[0] for row in self._db.execute(sql, params).fetchall())
        if not candidates:
            return []
        ids: list[str] = []
        blobs: list[bytes] = []
        for start in range(0, len(candidates), 500):
            group = candidates[start : start + 500]
            marks = ", ".join("?" * len(group))
            rows = self._db.execute(
                "SELECT m.id, e.embedding FROM memory_embeddings e "
                f"JOIN memories m ON m.rowid = e.rowid WHERE e.rowid IN ({marks})",
                tuple(group),
            ).fetchall()
            for row in rows:
                ids.append(row[0])
                blobs.append(row[1])
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        cosines = matrix @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-cosines, kind="stable")[:k]
        return [VectorHit(memory_id=ids[i], cosine=float(cosines[i])) for i in order]


class SqliteTextSearch:
    """BM25 over active memories with FTS5."""

    def __init__(self, connection: _Connection) -> None:
        self._db = connection

    def search(self, terms: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> TextResult:
        """Active memories containing any of ``terms``, best BM25 first, with the terms each
        contains and every term's document frequency among active memories."""
        if not terms:
            return TextResult((), {})
        phrases = ['"' + term.replace('"', '""') + '"' for term in terms]
        hits: list[tuple[str, int]] = []
        if k > 0:
            sql = (
                "SELECT m.id, m.rowid FROM memory_fts JOIN memories m "
                "ON m.rowid = memory_fts.rowid WHERE memory_fts MATCH ? AND m.status = 'active'"
            )
            params: list[Any] = [" OR ".join(phrases)]
            if kinds:
                sql += f" AND m.kind IN ({', '.join('?' * len(kinds))})"
                params.extend(kind.value for kind in kinds)
            rows = self._db.execute(sql + " ORDER BY bm25(memory_fts) LIMIT ?", (*params, k))
            hits = [(row[0], row[1]) for row in rows.fetchall()]
        marks = ", ".join("?" * len(hits))
        contains: dict[int, set[str]] = {rowid: set() for _, rowid in hits}
        frequency: dict[str, int] = {}
        for term, phrase in zip(terms, phrases, strict=True):
            # One pass over the term's postings: how many active memories hold it, and which
            # of the hits do.
            found = (
                f", json_group_array(m.rowid) FILTER (WHERE m.rowid IN ({marks}))" if hits else ""
            )
            row = self._db.execute(
                f"SELECT count(*){found} FROM memory_fts JOIN memories m "
                "ON m.rowid = memory_fts.rowid WHERE memory_fts MATCH ? AND m.status = 'active'",
                (*(rowid for _, rowid in hits), phrase),
            ).fetchone()
            frequency[term] = int(row[0])
            for rowid in json.loads(row[1]) if hits else ():
                contains[rowid].add(term)
        return TextResult(
            tuple(TextHit(memory_id, frozenset(contains[rowid])) for memory_id, rowid in hits),
            frequency,
        )


def _entity_id(db: _Connection, name: str) -> int:
    """The id of the entity a name or alias refers to, creating the entity when new."""
    key = normalize_name(name)
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


class SqliteEntityIndex:
    """Entity names, aliases, and which active memories mention them."""

    def __init__(self, connection: _Connection) -> None:
        self._db = connection

    def version(self) -> tuple[int, int]:
        """Changes whenever a name or alias is added or removed (to refresh cached matchers)."""
        row = self._db.execute("SELECT count(*), coalesce(max(rowid), 0) FROM entity_aliases")
        count, newest = row.fetchone()
        return int(count), int(newest)

    def aliases(self) -> list[tuple[str, int]]:
        """Every (alias or name, entity id)."""
        rows = self._db.execute("SELECT alias, entity_id FROM entity_aliases").fetchall()
        return [(row[0], int(row[1])) for row in rows]

    def add_alias(self, name: str, alias: str) -> None:
        """Make ``alias`` another name of the entity called ``name`` (created if new)."""
        alias_key = normalize_name(alias)
        entity_id = _entity_id(self._db, name)
        self._db.execute(
            "INSERT INTO entity_aliases(key, alias, entity_id) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET entity_id = excluded.entity_id, alias = excluded.alias",
            (alias_key, alias, entity_id),
        )

    def mention_counts(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many memories (any status) each entity tags: an index-only count."""
        counts: dict[int, int] = {}
        for entity_id in entity_ids:
            row = self._db.execute(
                "SELECT count(*) FROM memory_entities WHERE entity_id = ?", (entity_id,)
            ).fetchone()
            counts[entity_id] = int(row[0])
        return counts

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
        cases = " ".join("WHEN ? THEN ?" for _ in weights)
        params: list[Any] = [v for pair in weights.items() for v in pair]
        rows = self._db.execute(
            f"SELECT me.memory_id, sum(CASE me.entity_id {cases} END) AS score "
            "FROM memory_entities me JOIN memories m ON m.id = me.memory_id "
            f"WHERE me.entity_id IN ({', '.join('?' * len(weights))}) AND m.status = 'active' "
            "GROUP BY me.memory_id ORDER BY score DESC, me.memory_id DESC LIMIT ?",
            (*params, *weights.keys(), int(limit)),
        ).fetchall()
        return [row[0] for row in rows]


_JOB_COLUMNS = (
    "id, kind, payload, status, attempts, next_attempt_at, created_at, claimed_at, finished_at, "
    "last_error, result"
)


class SqliteJobQueue:
    """The jobs table. Claims run inside BEGIN IMMEDIATE, so one writer claims at a time."""

    def __init__(self, connection: _Connection) -> None:
        self._db = connection

    def enqueue(self, job: Job) -> None:
        """Add a queued job."""
        self._db.execute(
            f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                job.id,
                job.kind,
                json.dumps(job.payload),
                job.status.value,
                job.attempts,
                to_db(job.next_attempt_at),
                to_db(job.created_at),
                to_db(job.claimed_at),
                to_db(job.finished_at),
                job.last_error,
                json.dumps(job.result) if job.result is not None else None,
            ),
        )

    def claim(self, kinds: Sequence[str], now: datetime, lease_seconds: int) -> Job | None:
        """The oldest due job of these kinds, or a running one whose lease ran out."""
        if not kinds:
            return None
        expired = to_db(now - timedelta(seconds=lease_seconds))
        row = self._db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE kind IN ({', '.join('?' * len(kinds))}) AND "
            "((status = 'queued' AND next_attempt_at <= ?) OR "
            "(status = 'running' AND claimed_at <= ?)) ORDER BY next_attempt_at, id LIMIT 1",
            (*kinds, to_db(now), expired),
        ).fetchone()
        if row is None:
            return None
        self._db.execute(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, claimed_at = ? "
            "WHERE id = ?",
            (to_db(now), row[0]),
        )
        return self.get(row[0])

    def claim_one(self, job_id: str, now: datetime) -> Job | None:
        """Claim a specific queued job now (``observe --wait``); None when another worker
        holds it or it has ended."""
        cursor = self._db.execute(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, claimed_at = ? "
            "WHERE id = ? AND status = 'queued'",
            (to_db(now), job_id),
        )
        return self.get(job_id) if cursor.rowcount else None

    def finish(self, job_id: str, result: dict[str, Any], now: datetime) -> None:
        """Mark done."""
        # The conversation text is not needed once extracted: keep no copy of it.
        self._db.execute(
            "UPDATE jobs SET status = 'done', finished_at = ?, result = ?, last_error = NULL, "
            "payload = '{}' WHERE id = ?",
            (to_db(now), json.dumps(result), job_id),
        )

    def retry(self, job_id: str, error: str, next_attempt_at: datetime) -> None:
        """Back to the queue."""
        self._db.execute(
            "UPDATE jobs SET status = 'queued', next_attempt_at = ?, last_error = ?, "
            "claimed_at = NULL WHERE id = ?",
            (to_db(next_attempt_at), error, job_id),
        )

    def fail(self, job_id: str, error: str, now: datetime) -> None:
        """Give up."""
        self._db.execute(
            "UPDATE jobs SET status = 'failed', finished_at = ?, last_error = ?, payload = '{}' "
            "WHERE id = ?",
            (to_db(now), error, job_id),
        )

    def get(self, job_id: str) -> Job | None:
        """One job."""
        row = self._db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        found = row.fetchone()
        return _job_from_row(found) if found else None

    def recent(self, limit: int) -> list[Job]:
        """Newest first."""
        rows = self._db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs ORDER BY id DESC LIMIT ?", (int(limit),)
        ).fetchall()
        return [_job_from_row(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """Jobs by status."""
        rows = self._db.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
        return {row[0]: int(row[1]) for row in rows}


def _job_from_row(row: Sequence[Any]) -> Job:
    return Job(
        id=row[0],
        kind=row[1],
        payload=json.loads(row[2]),
        status=JobStatus(row[3]),
        attempts=int(row[4]),
        next_attempt_at=_required_time(row[5]),
        created_at=_required_time(row[6]),
        claimed_at=from_db(row[7]),
        finished_at=from_db(row[8]),
        last_error=row[9],
        result=json.loads(row[10]) if row[10] else None,
    )


class SqliteStore:
    """A memoryd store in one SQLite file."""

    def __init__(self, path: Path, *, create: bool) -> None:
        self.path = path
        if str(path) != ":memory:" and not path.exists() and not create:
            raise StoreUnavailableError(
                f"no memoryd store at {path}; run `memoryd init` first, or point --db / "
                "MEMORYD_DB at an existing store"
            )
        self._db = _Connection(path)
        self._vectors_ready: bool | None = None
        self._migrate()
        self.memories = SqliteMemoryRecords(self._db, self)
        self.audit = SqliteAuditLog(self._db)
        self.vectors = SqliteVectorSearch(self._db, self)
        self.text = SqliteTextSearch(self._db)
        self.entities = SqliteEntityIndex(self._db)
        self.jobs = SqliteJobQueue(self._db)
        self.kb = SqliteKnowledgeStore(self._db, self)

    def transaction(self) -> Any:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception."""
        return self._db.transaction()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction on the store's connection, holding its lock: other threads of
        this process wait, other processes keep writing to the WAL without being seen."""
        with self._db.lock:
            if self._db.depth:
                yield
                return
            self._db.raw.execute("BEGIN")
            self._db.depth = 1
            try:
                yield
            finally:
                self._db.depth = 0
                self._db.raw.execute("COMMIT")

    def backup_to(self, target: Path) -> None:
        """A consistent online copy of the whole file (SQLite's backup API, in one step)."""
        destination = sqlite3.connect(str(target))
        source = sqlite3.connect(str(self.path))
        try:
            source.backup(destination)
        finally:
            source.close()
            destination.close()

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
        """Record the signature and create the vec0 table, atomically."""
        with self.transaction():
            self._db.execute(
                "INSERT INTO meta(key, value) VALUES ('embedding_model', ?), "
                "('embedding_dimension', ?)",
                (signature.model, str(signature.dimension)),
            )
            self._db.execute(vector_index_sql(signature.dimension))
            self._db.execute(chunk_vector_sql(signature.dimension))
        self._vectors_ready = True

    def get_meta(self, key: str) -> str | None:
        """A value from the store's key-value table."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the store's key-value table."""
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def meta_items(self) -> dict[str, str]:
        """The whole key-value table."""
        return {str(k): str(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def try_lock(self, name: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        """Take the named lease if it is free or expired (call inside a transaction)."""
        expires = to_db(now + timedelta(seconds=lease_seconds))
        cursor = self._db.execute(
            "INSERT INTO locks(name, holder, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, "
            "expires_at = excluded.expires_at WHERE locks.expires_at <= ? "
            "OR locks.holder = excluded.holder",
            (name, holder, expires, to_db(now)),
        )
        return bool(cursor.rowcount)

    def lock_holder(self, name: str) -> str | None:
        """Who holds the named lease, if anyone."""
        row = self._db.execute("SELECT holder FROM locks WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row else None

    def take_over_lock(
        self, name: str, previous: str, holder: str, now: datetime, lease_seconds: int
    ) -> bool:
        """Take the lease from ``previous`` (known dead) if it still holds it."""
        cursor = self._db.execute(
            "UPDATE locks SET holder = ?, expires_at = ? WHERE name = ? AND holder = ?",
            (holder, to_db(now + timedelta(seconds=lease_seconds)), name, previous),
        )
        return bool(cursor.rowcount)

    def unlock(self, name: str, holder: str) -> None:
        """Release the lease if ``holder`` still holds it."""
        self._db.execute("DELETE FROM locks WHERE name = ? AND holder = ?", (name, holder))

    def has_vectors(self) -> bool:
        """Whether the vector table exists yet."""
        if self._vectors_ready is None:
            row = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'memory_bits'"
            ).fetchone()
            self._vectors_ready = row is not None
        return self._vectors_ready

    def erase_traces(self) -> None:
        """After a purge: fold the write-ahead log (which still holds old page images) into
        the main file, where secure_delete has zeroed them, and truncate it."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def require_vectors(self) -> None:
        """Fail clearly when vectors are written before the embedding signature exists."""
        if not self.has_vectors():
            raise StoreUnavailableError(
                f"store {self.path} has no embedding signature yet; run `memoryd init`"
            )

    def integrity_errors(self) -> list[str]:
        """SQLite's own integrity check plus the FTS index's, as messages (empty when sound)."""
        problems = [
            str(row[0])
            for row in self._db.execute("PRAGMA integrity_check").fetchall()
            if row[0] != "ok"
        ]
        for table in ("memory_fts", "chunk_fts"):
            try:
                self._db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as error:
                problems.append(f"full-text index {table}: {error}")
        return problems

    def close(self) -> None:
        """Close the connection."""
        with self._db.lock:
            self._db.raw.close()

    def _migrate(self) -> None:
        raw = self._db.raw
        try:
            tables = {
                row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as error:
            raise StoreUnavailableError(
                f"cannot open store {self.path}: {error}; it is not a memoryd store"
            ) from None
        if tables and "schema_migrations" not in tables:
            raise StoreUnavailableError(
                f"{self.path} is an SQLite database but not a memoryd store; "
                "choose another path with --db or MEMORYD_DB"
            )
        # Only now that the file is known to be ours (or new) may its settings change.
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = ON")
        # Purge must leave no trace of erased text in freed pages.
        raw.execute("PRAGMA secure_delete = ON")
        with self._db.lock:
            raw.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            applied = {row[0] for row in raw.execute("SELECT name FROM schema_migrations")}
            for name, sql in MIGRATIONS:
                if name in applied:
                    continue
                raw.execute("BEGIN IMMEDIATE")
                try:
                    for statement in _statements(sql):
                        raw.execute(statement)
                    raw.execute("INSERT INTO schema_migrations(name) VALUES (?)", (name,))
                except BaseException:
                    raw.execute("ROLLBACK")
                    raise
                raw.execute("COMMIT")
            # Stores made before the knowledge base existed get its vector table now.
            dimension = raw.execute(
                "SELECT value FROM meta WHERE key = 'embedding_dimension'"
            ).fetchone()
            if dimension is not None:
                raw.execute(chunk_vector_sql(int(dimension[0])))


def _statements(sql: str) -> list[str]:
    """Split a migration script on statement boundaries (sqlite3.complete_statement)."""
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


def _blob(vector: Vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _memory_params(memory: Memory) -> tuple[Any, ...]:
    return (
        memory.id,
        memory.kind.value,
        memory.status.value,
        memory.content,
        memory.subject,
        memory.predicate,
        memory.object,
        memory.slot,
        json.dumps(list(memory.entities)),
        memory.confidence,
        memory.importance.value if memory.importance else None,
        int(memory.changes_behavior),
        to_db(memory.occurred_at),
        memory.source.value,
        memory.source_ref,
        memory.extractor_model,
        memory.prompt_version,
        to_db(memory.created_at),
        to_db(memory.last_confirmed_at),
        to_db(memory.last_retrieved_at),
        memory.retrieval_hits,
        memory.supersedes,
        memory.superseded_by,
        to_db(memory.purged_at),
    )


# Recall converts a hundred-odd rows per message: plain dict lookups beat Enum() calls.
_KINDS = {kind.value: kind for kind in Kind}
_STATUSES = {status.value: status for status in Status}
_SOURCES = {source.value: source for source in Source}
_IMPORTANCES = {importance.value: importance for importance in Importance}
_parse_time = datetime.fromisoformat


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
        entities=tuple(json.loads(row[8])) if row[8] != "[]" else (),
        confidence=float(row[9]),
        importance=_IMPORTANCES[row[10]] if row[10] else None,
        changes_behavior=bool(row[11]),
        occurred_at=_parse_time(row[12]) if row[12] else None,
        source=_SOURCES[row[13]],
        source_ref=row[14],
        extractor_model=row[15],
        prompt_version=row[16],
        created_at=_parse_time(row[17]),
        last_confirmed_at=_parse_time(row[18]),
        last_retrieved_at=_parse_time(row[19]) if row[19] else None,
        retrieval_hits=int(row[20]),
        supersedes=row[21],
        superseded_by=row[22],
        purged_at=_parse_time(row[23]) if row[23] else None,
    )


def _required_time(value: str) -> datetime:
    parsed = from_db(value)
    assert parsed is not None
    return parsed
