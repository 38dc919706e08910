"""The PostgreSQL backend: psycopg 3 with a connection pool, pgvector HNSW (cosine), tsvector
with GIN, named transactional migrations. Same protocols, same behaviour as SQLite.

Write transactions take one transaction-scoped advisory lock, so they serialise as SQLite's
``BEGIN IMMEDIATE`` does — across every process sharing the database. Queued jobs are claimed
with ``FOR UPDATE SKIP LOCKED``. The full-text leg compensates ``ts_rank``'s missing IDF by
weighting each query term with its BM25 inverse document frequency.

The store's parts live one module per store: postgres_connection (the pool and how PostgreSQL
holds values), postgres_memories (memories, entities, vectors), postgres_text,
postgres_jobs and postgres_kb; the rows they share with SQLite live in the *_rows modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.errors import StoreUnavailableError
from memoryd.storage.audit_rows import AuditRows
from memoryd.storage.chat_import_rows import ImportedChatRows
from memoryd.storage.eval_rows import EvalRows
from memoryd.storage.meta_rows import RECORD_SIGNATURE, MetaAndLeases
from memoryd.storage.postgres_connection import (
    MIGRATION_LOCK_KEY,
    POSTGRES_ROWS,
    PostgresDatabase,
    redacted_url,
)
from memoryd.storage.postgres_jobs import PostgresJobQueue
from memoryd.storage.postgres_kb import PostgresKnowledgeStore
from memoryd.storage.postgres_memories import (
    PostgresEntityIndex,
    PostgresMemoryRecords,
    PostgresVectorSearch,
)
from memoryd.storage.postgres_next import PostgresNextVectors
from memoryd.storage.postgres_schema import MIGRATIONS, vector_columns_sql
from memoryd.storage.postgres_text import PostgresTextSearch
from memoryd.storage.protocols import EmbeddingSignature
from memoryd.storage.row_keys import READ_ONLY_KEYS, RowKeys
from memoryd.storage.sync_rows import SyncRows

__all__ = ["PostgresKnowledgeStore", "PostgresStore"]

# Weight each full-text query term by its BM25 IDF (off only to measure what it is worth).
IDF_WEIGHTING = True


class PostgresStore(MetaAndLeases[PostgresDatabase]):
    """A memoryd store in a PostgreSQL database (``keys``: as :class:`SqliteStore`'s)."""

    def __init__(self, url: str, *, create: bool, keys: RowKeys = READ_ONLY_KEYS) -> None:
        self.url = url
        self.path = redacted_url(url)
        self._db = PostgresDatabase(url)
        self._dialect = POSTGRES_ROWS
        self._vectors_ready: bool | None = None
        try:
            self._prepare(create)
        except BaseException:
            self._db.close()
            raise
        self.entities = PostgresEntityIndex(self._db, keys)
        self.memories = PostgresMemoryRecords(self._db, self, self.entities, keys)
        self.audit = AuditRows(self._db, POSTGRES_ROWS)
        self.vectors = PostgresVectorSearch(self._db, self)
        # Read when the store opens, so a benchmark can turn it off first.
        self.text = PostgresTextSearch(self._db, idf_weighting=IDF_WEIGHTING)
        self.jobs = PostgresJobQueue(self._db)
        self.imported_chats = ImportedChatRows(self._db, POSTGRES_ROWS)
        self.kb = PostgresKnowledgeStore(self._db, self, idf_weighting=IDF_WEIGHTING)
        self.next_vectors = PostgresNextVectors(self._db)
        self.evals = EvalRows(self._db, POSTGRES_ROWS)
        self.sync = SyncRows(self._db, POSTGRES_ROWS)

    def transaction(self) -> Any:
        """One database transaction holding the memoryd write lock; nested calls join it."""
        return self._db.transaction()

    def snapshot(self) -> Any:
        """A REPEATABLE READ, read-only transaction: every read inside sees one state."""
        return self._db.snapshot()

    def initialize_embeddings(self, signature: EmbeddingSignature) -> None:
        """Record the signature and add the vector columns and HNSW indexes, atomically."""
        with self.transaction():
            self._db.execute(
                POSTGRES_ROWS.sql(RECORD_SIGNATURE), (signature.model, str(signature.dimension))
            )
            for statement in vector_columns_sql(signature.dimension):
                self._db.execute(statement)
        self._vectors_ready = True

    def has_vectors(self) -> bool:
        """Whether the vector columns exist yet."""
        if self._vectors_ready is None:
            row = self._db.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = 'memories' "
                "AND column_name = 'embedding' AND table_schema = current_schema()"
            ).fetchone()
            self._vectors_ready = row is not None
        return self._vectors_ready

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

    def copy_to_file(self, target: Path) -> None:
        """A database is no file to copy: a backup exports it instead (nothing written)."""
        return None

    def erase_traces(self, *, documents: bool = False) -> None:
        """After a purge: rewrite the tables so the old row versions are gone from the data
        files; with ``documents``, the knowledge base's tables too (a rewrite of every chunk,
        so only when documents were removed). (PostgreSQL's write-ahead log keeps them until
        its segments are recycled.)"""
        tables = "memories, memory_entities, entities, entity_aliases, jobs"
        if documents:
            tables += ", documents, chunks"
        with self._db.connection() as connection:
            connection.execute(f"VACUUM FULL {tables}")

    def close(self) -> None:
        """Close the pool."""
        self._db.close()

    def _prepare(self, create: bool) -> None:
        """Create the extension and run migrations (under an advisory lock), or explain which
        privilege is missing."""
        errors = self._db.errors
        with self._db.connection() as connection:
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
