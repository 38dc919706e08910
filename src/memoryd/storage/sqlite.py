"""The embedded SQLite backend: one file, WAL, FTS5 for BM25, sqlite-vec for vectors.

The store's parts live one module per store: sqlite_connection (the connection and how SQLite
holds values), sqlite_memories (memories, entities), sqlite_search (recall's legs),
sqlite_jobs and sqlite_kb; the rows they share with PostgreSQL live in the *_rows modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlean as sqlite3

from ..errors import StoreUnavailableError
from .audit_rows import AuditRows
from .meta_rows import RECORD_SIGNATURE, MetaAndLeases
from .protocols import EmbeddingSignature
from .sqlite_connection import SQLITE_ROWS, SqliteConnection
from .sqlite_health import QUICK_CHECK_BYTES, diagnose, holds_sqlite, raise_if_damaged
from .sqlite_jobs import SqliteJobQueue
from .sqlite_kb import SqliteKnowledgeStore
from .sqlite_memories import SqliteEntityIndex, SqliteMemoryRecords
from .sqlite_next import SqliteNextVectors
from .sqlite_schema import MIGRATIONS, chunk_vector_sql, vector_index_sql
from .sqlite_search import SqliteTextSearch, SqliteVectorSearch

__all__ = ["SqliteStore"]


class SqliteStore(MetaAndLeases[SqliteConnection]):
    """A memoryd store in one SQLite file."""

    def __init__(self, path: Path, *, create: bool) -> None:
        self.path = path
        if str(path) != ":memory:" and not path.exists() and not create:
            raise StoreUnavailableError(
                f"no memoryd store at {path}; run `memoryd init` first, or point --db / "
                "MEMORYD_DB at an existing store"
            )
        if holds_sqlite(path):
            # Before any connection: SQLite would fold a cut-short log into the file on close.
            raise_if_damaged(path, pages=path.stat().st_size <= QUICK_CHECK_BYTES)
        self._db = SqliteConnection(path)
        self._dialect = SQLITE_ROWS
        self._vectors_ready: bool | None = None
        self._migrate()
        self.entities = SqliteEntityIndex(self._db)
        self.memories = SqliteMemoryRecords(self._db, self, self.entities)
        self.audit = AuditRows(self._db, SQLITE_ROWS)
        self.vectors = SqliteVectorSearch(self._db, self)
        self.text = SqliteTextSearch(self._db)
        self.jobs = SqliteJobQueue(self._db)
        self.kb = SqliteKnowledgeStore(self._db, self)
        self.next_vectors = SqliteNextVectors(self._db, self.vectors.forget_bit_copy)

    def transaction(self) -> Any:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception."""
        return self._db.transaction()

    def snapshot(self) -> Any:
        """One read transaction for this thread: its reads see one committed state while
        other threads and processes keep writing."""
        return self._db.snapshot()

    def backup_to(self, target: Path) -> None:
        """A consistent online copy of the whole file (SQLite's backup API, in one step)."""
        destination = sqlite3.connect(str(target))
        source = sqlite3.connect(str(self.path))
        try:
            source.backup(destination)
        finally:
            source.close()
            destination.close()

    def initialize_embeddings(self, signature: EmbeddingSignature) -> None:
        """Record the signature and create the vec0 table, atomically."""
        with self.transaction():
            self._db.execute(RECORD_SIGNATURE, (signature.model, str(signature.dimension)))
            self._db.execute(vector_index_sql(signature.dimension))
            self._db.execute(chunk_vector_sql(signature.dimension))
        self._vectors_ready = True

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
        self.check_space()

    def integrity_errors(self) -> list[str]:
        """SQLite's own integrity check plus the FTS index's, as messages (empty when sound)."""
        try:
            problems = [
                str(row[0])
                for row in self._db.execute("PRAGMA integrity_check").fetchall()
                if row[0] != "ok"
            ]
        except sqlite3.DatabaseError as error:
            # Damage where the check itself reads (which pages depends on the file's layout).
            return [f"the file cannot be checked: {error}"]
        for table in ("memory_fts", "chunk_fts"):
            try:
                self._db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as error:
                problems.append(f"full-text index {table}: {error}")
        return problems

    def close(self) -> None:
        """Close the writer and the readers."""
        self._db.close()

    def _migrate(self) -> None:
        raw = self._db.raw
        try:
            tables = {
                row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as error:
            damage = diagnose(self.path, error) if holds_sqlite(self.path) else None
            self._db.close()
            if damage is not None:
                raise damage from None
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
