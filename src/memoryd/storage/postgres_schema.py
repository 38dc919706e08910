"""Named, ordered PostgreSQL migrations; each runs in its own transaction and is recorded.

The vector columns and their HNSW indexes are added when the embedding dimension is known
(``initialize_embeddings``), as in the SQLite backend.
"""

from __future__ import annotations

from memoryd.storage import schema_tables as tables

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_memories",
        tables.filled(
            "postgres",
            tables.META,
            "\n        CREATE TABLE memories (\n            seq BIGSERIAL UNIQUE,",
        )
        + tables.filled("postgres", tables.MEMORY_COLUMNS)
        + """,
            indexed_text TEXT NOT NULL DEFAULT '',
            fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', indexed_text)) STORED
        );"""
        + tables.filled("postgres", tables.MEMORY_INDEXES)
        + """
        CREATE INDEX memories_events_by_time ON memories(status, kind, occurred_at);
        CREATE INDEX memories_fts ON memories USING GIN (fts);"""
        + tables.filled("postgres", tables.AUDIT_LOG)
        + """
        -- Memories per status, kept by triggers (recall asks on every message).
        CREATE TABLE memory_counts (
            status TEXT PRIMARY KEY,
            n BIGINT NOT NULL
        );
        INSERT INTO memory_counts(status, n)
            VALUES ('pending', 0), ('active', 0), ('rejected', 0), ('archived', 0);
        CREATE FUNCTION memory_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                UPDATE memory_counts SET n = n + 1 WHERE status = NEW.status;
            ELSIF TG_OP = 'DELETE' THEN
                UPDATE memory_counts SET n = n - 1 WHERE status = OLD.status;
            ELSIF OLD.status <> NEW.status THEN
                UPDATE memory_counts SET n = n - 1 WHERE status = OLD.status;
                UPDATE memory_counts SET n = n + 1 WHERE status = NEW.status;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memory_counts_follow AFTER INSERT OR DELETE OR UPDATE OF status
            ON memories FOR EACH ROW EXECUTE FUNCTION memory_counts_follow();"""
        + tables.filled("postgres", tables.ENTITIES)
        + """
        CREATE TABLE entity_aliases (
            seq BIGSERIAL UNIQUE,
            key TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE
        );"""
        + tables.filled(
            "postgres", tables.MEMORY_ENTITIES, tables.STANDING_LESSONS, tables.JOBS, tables.LOCKS
        ),
    ),
    (
        "0002_knowledge_base",
        tables.filled("postgres", tables.DOCUMENTS)
        + """
        CREATE TABLE chunks (
            seq BIGSERIAL UNIQUE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,"""
        + tables.filled("postgres", tables.CHUNK_COLUMNS)
        + """
            fts TSVECTOR GENERATED ALWAYS AS (
                setweight(to_tsvector('english', breadcrumb), 'B')
                || to_tsvector('english', text)
            ) STORED,
            PRIMARY KEY (document_id, position)
        );
        CREATE INDEX chunks_fts ON chunks USING GIN (fts);
        """,
    ),
    (
        "0003_fact_predicates_searchable",
        tables.FACT_PREDICATES_NOTE
        + """
        UPDATE memories SET indexed_text = indexed_text || E'\\n' || predicate
            WHERE predicate IS NOT NULL AND purged_at IS NULL;
        """,
    ),
    ("0004_chunk_pages", tables.CHUNK_PAGES),
    (
        "0005_next_vectors",
        """
        -- The vector `memoryd reembed` computes for another model, NULL otherwise. No
        -- dimension: the target's is recorded in meta while the set is filled; the switch
        -- gives the column that replaces `embedding` its dimension and HNSW index.
        ALTER TABLE memories ADD COLUMN embedding_next vector;
        ALTER TABLE chunks ADD COLUMN embedding_next vector;
        """,
    ),
    ("0006_fact_slot_vocabulary", tables.FACT_SLOT_VOCABULARY),
    ("0007_eval_cases", tables.filled("postgres", tables.EVAL_CASES)),
    ("0008_imported_chats", tables.filled("postgres", tables.IMPORTED_CHATS)),
    ("0009_memory_cues", tables.filled("postgres", tables.MEMORY_CUES)),
    (
        "0010_kb_rows",
        tables.CHUNK_ROWS
        + """
            fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
            PRIMARY KEY (document_id, position, row_index),
            FOREIGN KEY (document_id, position) REFERENCES chunks(document_id, position)
                ON DELETE CASCADE
        );
        CREATE INDEX chunk_rows_fts ON chunk_rows USING GIN (fts);
        """,
    ),
    ("0011_document_redactions", tables.DOCUMENT_REDACTIONS),
    ("0012_synced_sources", tables.filled("postgres", tables.SYNCED_SOURCES)),
    ("0020_kb_row_vectors", tables.filled("postgres", tables.KB_ROW_VECTORS)),
)


def vector_columns_sql(dimension: int) -> list[str]:
    """Vector columns and HNSW (cosine) indexes, once the dimension is known."""
    size = int(dimension)
    return [
        f"ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding vector({size})",
        "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON memories "
        "USING hnsw (embedding vector_cosine_ops)",
        f"ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding vector({size})",
        "CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks "
        "USING hnsw (embedding vector_cosine_ops)",
    ]
