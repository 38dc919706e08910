"""The tables and migrations both backends create alike, written once with ``$`` marks for
the column types that differ (``sqlite_schema.py`` and ``postgres_schema.py`` fill them).

Only the names of applied migrations are recorded, so a migration's text may be built here
as long as what it creates stays the same; each backend keeps its own migration names and
order (they were numbered separately) and writes what only it has (SQLite's FTS5 and vector
tables, PostgreSQL's generated tsvector columns, sequences and triggers).
"""

from __future__ import annotations

from string import Template
from typing import Literal

Backend = Literal["postgres", "sqlite"]

# Each mark, and what it is in (PostgreSQL, SQLite).
COLUMN_TYPES: dict[str, tuple[str, str]] = {
    "time": ("TIMESTAMPTZ", "TEXT"),  # an instant (SQLite: ISO-8601 text)
    "json": ("JSONB", "TEXT"),
    "big": ("BIGINT", "INTEGER"),  # 64-bit (SQLite's INTEGER already is)
    "real": ("DOUBLE PRECISION", "REAL"),
    "flag": ("BOOLEAN NOT NULL DEFAULT FALSE", "INTEGER NOT NULL DEFAULT 0"),  # yes/no
    "serial": ("BIGSERIAL", "INTEGER"),  # a key the database numbers (SQLite: the rowid)
    "blob": ("BYTEA", "BLOB"),
    # When a memory's link to another is checked: at commit (PostgreSQL), at each statement
    # (SQLite).
    "deferred": (" DEFERRABLE INITIALLY DEFERRED", ""),
}


def filled(backend: Backend, *parts: str) -> str:
    """``parts`` joined, each ``$mark`` replaced by ``backend``'s type."""
    column = 0 if backend == "postgres" else 1
    types = {mark: words[column] for mark, words in COLUMN_TYPES.items()}
    return Template("".join(parts)).substitute(types)


META = """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
"""

# Every column of a memory both backends store, in their order (the table's opening and any
# columns only one backend has are written by each backend).
MEMORY_COLUMNS = """
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('fact', 'event', 'lesson', 'inference')),
            status TEXT NOT NULL
                CHECK (status IN ('pending', 'active', 'rejected', 'archived')),
            content TEXT NOT NULL,
            subject TEXT,
            predicate TEXT,
            object TEXT,
            slot TEXT,
            entities $json NOT NULL DEFAULT '[]',
            confidence $real NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
            importance TEXT CHECK (importance IN ('low', 'medium', 'high', 'critical')),
            changes_behavior $flag,
            occurred_at $time,
            source TEXT NOT NULL,
            source_ref TEXT,
            extractor_model TEXT,
            prompt_version TEXT,
            created_at $time NOT NULL,
            last_confirmed_at $time NOT NULL,
            last_retrieved_at $time,
            retrieval_hits INTEGER NOT NULL DEFAULT 0,
            supersedes TEXT REFERENCES memories(id)$deferred,
            superseded_by TEXT REFERENCES memories(id)$deferred,
            purged_at $time"""

MEMORY_INDEXES = """
        CREATE UNIQUE INDEX memories_one_active_per_slot
            ON memories(slot) WHERE status = 'active' AND slot IS NOT NULL;
        CREATE INDEX memories_by_status_kind ON memories(status, kind, id);
        CREATE INDEX memories_by_slot ON memories(slot, status);
"""

AUDIT_LOG = """
        CREATE TABLE audit_log (
            id $serial PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories(id),
            at $time NOT NULL,
            actor TEXT NOT NULL,
            rule TEXT,
            action TEXT NOT NULL,
            from_status TEXT,
            to_status TEXT NOT NULL,
            reason TEXT NOT NULL
        );
        CREATE INDEX audit_by_memory ON audit_log(memory_id, id);
"""

ENTITIES = """
        CREATE TABLE entities (
            id $serial PRIMARY KEY,
            name TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE
        );
"""

# After entity_aliases (each backend's: PostgreSQL numbers the aliases for the index's version).
MEMORY_ENTITIES = """
        CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL REFERENCES memories(id),
            entity_id $big NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, entity_id)
        );
        CREATE INDEX memory_entities_by_entity ON memory_entities(entity_id, memory_id);
"""

STANDING_LESSONS = """
        CREATE INDEX memories_standing_lessons ON memories(importance, id)
            WHERE status = 'active' AND kind = 'lesson';
"""

JOBS = """
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            payload $json NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at $time NOT NULL,
            created_at $time NOT NULL,
            claimed_at $time,
            finished_at $time,
            last_error TEXT,
            result $json
        );
        CREATE INDEX jobs_due ON jobs(status, next_attempt_at);
"""

LOCKS = """
        CREATE TABLE locks (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at $time NOT NULL
        );
"""

DOCUMENTS = """
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            source_uri TEXT NOT NULL UNIQUE,
            collection TEXT NOT NULL,
            source_type TEXT NOT NULL CHECK (source_type IN ('curated', 'mission', 'web')),
            title TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'ready', 'failed')),
            content_hash TEXT,
            document_type TEXT,
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            token_count INTEGER NOT NULL DEFAULT 0,
            images_read INTEGER NOT NULL DEFAULT 0,
            byte_size $big NOT NULL DEFAULT 0,
            created_at $time NOT NULL,
            updated_at $time NOT NULL
        );
        CREATE INDEX documents_by_collection ON documents(collection, id);
"""

# A chunk's columns both backends store (its key and its text index are each backend's).
CHUNK_COLUMNS = """
            position INTEGER NOT NULL,
            headings $json NOT NULL,
            breadcrumb TEXT NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            overlap_chars INTEGER NOT NULL DEFAULT 0,"""

FACT_PREDICATES_NOTE = """
        -- A fact's predicate joins its indexed text (memoryd.memory.model.indexed_text): questions
        -- use the slot's word ("my job") where the content words it otherwise."""

CHUNK_PAGES = """
        -- Where pages begin in each chunk: JSON [[page, character offset], ...].
        ALTER TABLE chunks ADD COLUMN pages TEXT NOT NULL DEFAULT '[]';
"""

FACT_SLOT_VOCABULARY = """
        -- A fact's canonical subject (memoryd.memory.slot_policy.canonical_subject), so the
        -- predicates a
        -- subject already has are one index probe away; and, when the fact joined another
        -- predicate's slot through that vocabulary, the predicate it joined. Both are filled
        -- by the re-slot that runs once when the store is next opened (slot_scheme in meta).
        ALTER TABLE memories ADD COLUMN same_slot_as TEXT;
        ALTER TABLE memories ADD COLUMN subject_key TEXT;
        CREATE INDEX memories_by_subject_key ON memories(subject_key, status)
            WHERE subject_key IS NOT NULL;
"""

EVAL_CASES = """
        -- The owner's evaluation set (`memoryd eval`): a question, the memory ids recall
        -- should find for it and those it should not show.
        CREATE TABLE eval_cases (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL UNIQUE,
            expected $json NOT NULL DEFAULT '[]',
            noise $json NOT NULL DEFAULT '[]',
            created_at $time NOT NULL
        );
"""

IMPORTED_CHATS = """
        -- The conversation messages `memoryd import-chats` queued (by the exporting service,
        -- the conversation's id and the owner message's id), so importing again queues nothing.
        CREATE TABLE imported_chats (
            source TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            job_id TEXT NOT NULL,
            imported_at $time NOT NULL,
            PRIMARY KEY (source, conversation_id, message_id)
        );
"""

MEMORY_CUES = """
        -- The words a person would use when asking about a memory later (a JSON list the
        -- extraction model or consolidation writes): indexed with it, never shown as content.
        ALTER TABLE memories ADD COLUMN cues $json NOT NULL DEFAULT '[]';
"""

# The table's opening; each backend closes it with its own text index.
CHUNK_ROWS = """
        -- Each table row of a chunk, indexed alone with its table's title, its column headers
        -- and its label (memoryd.kb.rows); a row found leads to its chunk. Written with the
        -- chunks: documents stored before this migration get theirs when ingested again.
        CREATE TABLE chunk_rows (
            document_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            row_index INTEGER NOT NULL,
            text TEXT NOT NULL,"""

DOCUMENT_REDACTIONS = """
        -- How many secrets (keys, tokens, private keys, passwords) were redacted from a
        -- document's text at ingest: the owner sees the count, never the secret.
        ALTER TABLE documents ADD COLUMN redactions INTEGER NOT NULL DEFAULT 0;
"""

SYNCED_SOURCES = """
        -- What a document says about itself (a Markdown note's front matter, tags, links).
        ALTER TABLE documents ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
        -- Folders, files and URLs the service keeps current (`memoryd kb sync`), and the
        -- state of each of their files: what was last read from it (hash, size, mtime) and
        -- the document it became.
        CREATE TABLE sync_sources (
            id TEXT PRIMARY KEY,
            location TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('folder', 'file', 'url')),
            collection TEXT NOT NULL,
            ignore_patterns TEXT NOT NULL DEFAULT '[]',
            include_hidden INTEGER NOT NULL DEFAULT 0,
            max_bytes $big NOT NULL,
            every_seconds INTEGER NOT NULL,
            created_at $time NOT NULL,
            last_looked_at $time,
            last_error TEXT
        );
        CREATE TABLE sync_files (
            source_id TEXT NOT NULL REFERENCES sync_sources(id),
            path TEXT NOT NULL,
            state TEXT NOT NULL
                CHECK (state IN ('queued', 'current', 'failed', 'skipped', 'erased')),
            reason TEXT,
            document_id TEXT,
            content_hash TEXT,
            size $big NOT NULL DEFAULT 0,
            mtime_ns $big NOT NULL DEFAULT 0,
            updated_at $time NOT NULL,
            PRIMARY KEY (source_id, path)
        );
        CREATE INDEX sync_files_by_document ON sync_files(document_id)
            WHERE document_id IS NOT NULL;
"""

KB_ROW_VECTORS = """
        -- Each table row's label text (memoryd.kb.rows.label_text) and its vector (float32
        -- bytes, NULL until the vector fill reaches it): a question near a row's label finds
        -- the row whatever its words. Rows stored before this migration have no label and get
        -- one when their document is ingested again.
        ALTER TABLE chunk_rows ADD COLUMN label TEXT NOT NULL DEFAULT '';
        ALTER TABLE chunk_rows ADD COLUMN embedding $blob;
"""
