"""Named, ordered SQLite migrations. Each runs in its own transaction and is recorded."""

from __future__ import annotations

from memoryd.storage import schema_tables as tables

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_memories",
        tables.filled(
            "sqlite", tables.META, "\n        CREATE TABLE memories (", tables.MEMORY_COLUMNS
        )
        + """
        );
        -- The database itself guarantees one active memory per fact slot."""
        + tables.MEMORY_INDEXES
        + tables.filled("sqlite", tables.AUDIT_LOG)
        + """
        -- Full-precision vectors, rowid = memories.rowid: the exact re-ranking after the
        -- binary prefilter, and the source of the prefilter's bits.
        CREATE TABLE memory_embeddings (
            rowid INTEGER PRIMARY KEY,
            embedding BLOB NOT NULL
        );
        -- rowid = memories.rowid; kept in step by the records class, emptied on purge.
        CREATE VIRTUAL TABLE memory_fts USING fts5(content, tokenize = 'porter unicode61');
        -- Deleting (purging) removes terms from the index itself, not just marks them.
        INSERT INTO memory_fts(memory_fts, rank) VALUES ('secure-delete', 1);
        """,
    ),
    (
        "0002_entities_and_recall",
        tables.filled("sqlite", tables.ENTITIES)
        + """
        CREATE TABLE entity_aliases (
            key TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE
        );"""
        + tables.filled("sqlite", tables.MEMORY_ENTITIES)
        + """
        CREATE INDEX memories_events_by_time ON memories(status, kind, occurred_at);
        """,
    ),
    ("0003_jobs", tables.filled("sqlite", tables.JOBS)),
    (
        "0004_recall_indexes",
        """
        -- Standing lessons are read on every recall; keep them one index probe away."""
        + tables.STANDING_LESSONS,
    ),
    (
        "0005_memory_counts",
        """
        -- Memories per status, kept by triggers: recall asks on every message, and SQLite
        -- would otherwise count the rows each time.
        CREATE TABLE memory_counts (
            status TEXT PRIMARY KEY,
            n INTEGER NOT NULL
        );
        INSERT INTO memory_counts(status, n)
            SELECT column1, (SELECT count(*) FROM memories WHERE status = column1)
            FROM (VALUES ('pending'), ('active'), ('rejected'), ('archived'));
        CREATE TRIGGER memory_counts_insert AFTER INSERT ON memories BEGIN
            UPDATE memory_counts SET n = n + 1 WHERE status = NEW.status;
        END;
        CREATE TRIGGER memory_counts_update AFTER UPDATE OF status ON memories
            WHEN OLD.status <> NEW.status BEGIN
            UPDATE memory_counts SET n = n - 1 WHERE status = OLD.status;
            UPDATE memory_counts SET n = n + 1 WHERE status = NEW.status;
        END;
        CREATE TRIGGER memory_counts_delete AFTER DELETE ON memories BEGIN
            UPDATE memory_counts SET n = n - 1 WHERE status = OLD.status;
        END;
        """,
    ),
    (
        "0006_locks",
        """
        -- Named leases: only one holder at a time, and a crashed holder's lease runs out."""
        + tables.filled("sqlite", tables.LOCKS),
    ),
    (
        "0007_knowledge_base",
        tables.filled("sqlite", tables.DOCUMENTS)
        + """
        CREATE TABLE chunks (
            rowid INTEGER PRIMARY KEY,
            document_id TEXT NOT NULL REFERENCES documents(id),"""
        + tables.filled("sqlite", tables.CHUNK_COLUMNS)
        + """
            UNIQUE (document_id, position)
        );
        -- rowid = chunks.rowid; the breadcrumb is searchable with the text.
        CREATE VIRTUAL TABLE chunk_fts USING fts5(
            breadcrumb, text, tokenize = 'porter unicode61'
        );
        """,
    ),
    (
        "0008_fact_predicates_searchable",
        tables.FACT_PREDICATES_NOTE
        + """
        DELETE FROM memory_fts WHERE rowid IN (
            SELECT rowid FROM memories WHERE predicate IS NOT NULL AND purged_at IS NULL
        );
        INSERT INTO memory_fts(rowid, content)
            SELECT m.rowid, m.content
                || coalesce((SELECT char(10) || group_concat(e.value, char(10))
                             FROM json_each(m.entities) AS e), '')
                || char(10) || m.predicate
            FROM memories m WHERE m.predicate IS NOT NULL AND m.purged_at IS NULL;
        """,
    ),
    ("0009_chunk_pages", tables.CHUNK_PAGES),
    (
        "0010_chunks_pending_vectors",
        """
        -- 0 while a chunk waits for its vector (keyword-searchable only), 1 once its
        -- chunk_vectors row exists: "embedding n/m" is then a count over the chunks' index
        -- instead of a vector-table lookup per chunk. Chunks stored so far have their vector.
        ALTER TABLE chunks ADD COLUMN embedded INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX chunks_pending_vectors ON chunks(document_id, position) WHERE embedded = 0;
        """,
    ),
    (
        "0011_next_vectors",
        """
        -- The vector set `memoryd reembed` fills for another model (rowid = memories.rowid,
        -- chunks.rowid), empty otherwise. They always exist so purging a memory or replacing
        -- a document's chunks drops their row here too, whoever writes.
        CREATE TABLE memory_embeddings_next (
            rowid INTEGER PRIMARY KEY,
            embedding BLOB NOT NULL
        );
        CREATE TABLE chunk_vectors_next (
            rowid INTEGER PRIMARY KEY,
            embedding BLOB NOT NULL
        );
        """,
    ),
    ("0012_fact_slot_vocabulary", tables.FACT_SLOT_VOCABULARY),
    ("0013_eval_cases", tables.filled("sqlite", tables.EVAL_CASES)),
    ("0014_imported_chats", tables.filled("sqlite", tables.IMPORTED_CHATS)),
    (
        "0015_chunk_fts_secure_delete",
        """
        -- A removed document's words leave the chunks' full-text index at once (as a purged
        -- memory's leave memory_fts), instead of waiting in its segments for a merge; the
        -- optimize drops what earlier removals left there.
        INSERT INTO chunk_fts(chunk_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO chunk_fts(chunk_fts) VALUES ('optimize');
        """,
    ),
    ("0016_memory_cues", tables.filled("sqlite", tables.MEMORY_CUES)),
    (
        "0017_kb_rows",
        tables.CHUNK_ROWS
        + """
            PRIMARY KEY (document_id, position, row_index)
        );
        -- rowid = chunk_rows.rowid.
        CREATE VIRTUAL TABLE chunk_row_fts USING fts5(text, tokenize = 'porter unicode61');
        INSERT INTO chunk_row_fts(chunk_row_fts, rank) VALUES ('secure-delete', 1);
        """,
    ),
    ("0018_document_redactions", tables.DOCUMENT_REDACTIONS),
    ("0019_synced_sources", tables.filled("sqlite", tables.SYNCED_SOURCES)),
    ("0020_kb_row_vectors", tables.filled("sqlite", tables.KB_ROW_VECTORS)),
)


def chunk_vector_sql(dimension: int) -> str:
    """Chunk vectors: float, cosine, exact KNN (documents are fewer and larger than memories;
    past a few hundred thousand chunks the PostgreSQL backend's HNSW index is the answer)."""
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_vectors USING vec0("
        f"embedding FLOAT[{int(dimension)}] distance_metric=cosine)"
    )


def vector_index_sql(dimension: int) -> str:
    """The sqlite-vec index: one bit per dimension (binary quantisation), partitioned by status
    so a search among rejected or pending memories reads only their rows; kind is metadata.

    Why bits: a float KNN reads every stored vector (about 75 ms per 100k on 2 cores); a Hamming
    KNN over bits is ~10x cheaper, and the exact cosine re-rank of a few hundred candidates
    from ``memory_embeddings`` restores the float order.
    """
    return (
        "CREATE VIRTUAL TABLE memory_bits USING vec0("
        f"status TEXT PARTITION KEY, kind TEXT, bits BIT[{int(dimension)}])"
    )
