"""Named, ordered PostgreSQL migrations; each runs in its own transaction and is recorded.

The vector columns and their HNSW indexes are added when the embedding dimension is known
(``initialize_embeddings``), as in the SQLite backend.
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_memories",
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE memories (
            seq BIGSERIAL UNIQUE,
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('fact', 'event', 'lesson', 'inference')),
            status TEXT NOT NULL
                CHECK (status IN ('pending', 'active', 'rejected', 'archived')),
            content TEXT NOT NULL,
            subject TEXT,
            predicate TEXT,
            object TEXT,
            slot TEXT,
            entities JSONB NOT NULL DEFAULT '[]',
            confidence DOUBLE PRECISION NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
            importance TEXT CHECK (importance IN ('low', 'medium', 'high', 'critical')),
            changes_behavior BOOLEAN NOT NULL DEFAULT FALSE,
            occurred_at TIMESTAMPTZ,
            source TEXT NOT NULL,
            source_ref TEXT,
            extractor_model TEXT,
            prompt_version TEXT,
            created_at TIMESTAMPTZ NOT NULL,
            last_confirmed_at TIMESTAMPTZ NOT NULL,
            last_retrieved_at TIMESTAMPTZ,
            retrieval_hits INTEGER NOT NULL DEFAULT 0,
            supersedes TEXT REFERENCES memories(id) DEFERRABLE INITIALLY DEFERRED,
            superseded_by TEXT REFERENCES memories(id) DEFERRABLE INITIALLY DEFERRED,
            purged_at TIMESTAMPTZ,
            indexed_text TEXT NOT NULL DEFAULT '',
            fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', indexed_text)) STORED
        );
        CREATE UNIQUE INDEX memories_one_active_per_slot
            ON memories(slot) WHERE status = 'active' AND slot IS NOT NULL;
        CREATE INDEX memories_by_status_kind ON memories(status, kind, id);
        CREATE INDEX memories_by_slot ON memories(slot, status);
        CREATE INDEX memories_events_by_time ON memories(status, kind, occurred_at);
        CREATE INDEX memories_fts ON memories USING GIN (fts);
        CREATE TABLE audit_log (
            id BIGSERIAL PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories(id),
            at TIMESTAMPTZ NOT NULL,
            actor TEXT NOT NULL,
            rule TEXT,
            action TEXT NOT NULL,
            from_status TEXT,
            to_status TEXT NOT NULL,
            reason TEXT NOT NULL
        );
        CREATE INDEX audit_by_memory ON audit_log(memory_id, id);
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
            ON memories FOR EACH ROW EXECUTE FUNCTION memory_counts_follow();
        CREATE TABLE entities (
            id BIGSERIAL PRIMARY KEY,
            name TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE
        );
        CREATE TABLE entity_aliases (
            seq BIGSERIAL UNIQUE,
            key TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE
        );
        CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL REFERENCES memories(id),
            entity_id BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, entity_id)
        );
        CREATE INDEX memory_entities_by_entity ON memory_entities(entity_id, memory_id);
        CREATE INDEX memories_standing_lessons ON memories(importance, id)
            WHERE status = 'active' AND kind = 'lesson';
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            payload JSONB NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TIMESTAMPTZ NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            claimed_at TIMESTAMPTZ,
            finished_at TIMESTAMPTZ,
            last_error TEXT,
            result JSONB
        );
        CREATE INDEX jobs_due ON jobs(status, next_attempt_at);
        CREATE TABLE locks (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    (
        "0002_knowledge_base",
        """
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
            byte_size BIGINT NOT NULL DEFAULT 0,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL
        );
        CREATE INDEX documents_by_collection ON documents(collection, id);
        CREATE TABLE chunks (
            seq BIGSERIAL UNIQUE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            headings JSONB NOT NULL,
            breadcrumb TEXT NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            overlap_chars INTEGER NOT NULL DEFAULT 0,
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
        """
        -- A fact's predicate joins its indexed text (memoryd.memory.model.indexed_text): questions
        -- use the slot's word ("my job") where the content words it otherwise.
        UPDATE memories SET indexed_text = indexed_text || E'\\n' || predicate
            WHERE predicate IS NOT NULL AND purged_at IS NULL;
        """,
    ),
    (
        "0004_chunk_pages",
        """
        -- Where pages begin in each chunk: JSON [[page, character offset], ...].
        ALTER TABLE chunks ADD COLUMN pages TEXT NOT NULL DEFAULT '[]';
        """,
    ),
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
    (
        "0006_fact_slot_vocabulary",
        """
        -- A fact's canonical subject (memoryd.memory.slot_policy.canonical_subject), so the
        -- predicates a
        -- subject already has are one index probe away; and, when the fact joined another
        -- predicate's slot through that vocabulary, the predicate it joined. Both are filled
        -- by the re-slot that runs once when the store is next opened (slot_scheme in meta).
        ALTER TABLE memories ADD COLUMN same_slot_as TEXT;
        ALTER TABLE memories ADD COLUMN subject_key TEXT;
        CREATE INDEX memories_by_subject_key ON memories(subject_key, status)
            WHERE subject_key IS NOT NULL;
        """,
    ),
    (
        "0007_eval_cases",
        """
        -- The owner's evaluation set (`memoryd eval`): a question, the memory ids recall
        -- should find for it and those it should not show.
        CREATE TABLE eval_cases (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL UNIQUE,
            expected JSONB NOT NULL DEFAULT '[]',
            noise JSONB NOT NULL DEFAULT '[]',
            created_at TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    (
        "0008_imported_chats",
        """
        -- The conversation messages `memoryd import-chats` queued (by the exporting service,
        -- the conversation's id and the owner message's id), so importing again queues nothing.
        CREATE TABLE imported_chats (
            source TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            job_id TEXT NOT NULL,
            imported_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (source, conversation_id, message_id)
        );
        """,
    ),
    (
        "0009_memory_cues",
        """
        -- The words a person would use when asking about a memory later (a JSON list the
        -- extraction model or consolidation writes): indexed with it, never shown as content.
        ALTER TABLE memories ADD COLUMN cues JSONB NOT NULL DEFAULT '[]';
        """,
    ),
    (
        "0010_kb_rows",
        """
        -- Each table row of a chunk, indexed alone with its table's title, its column headers
        -- and its label (memoryd.kb.rows); a row found leads to its chunk. Written with the
        -- chunks: documents stored before this migration get theirs when ingested again.
        CREATE TABLE chunk_rows (
            document_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            row_index INTEGER NOT NULL,
            text TEXT NOT NULL,
            fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
            PRIMARY KEY (document_id, position, row_index),
            FOREIGN KEY (document_id, position) REFERENCES chunks(document_id, position)
                ON DELETE CASCADE
        );
        CREATE INDEX chunk_rows_fts ON chunk_rows USING GIN (fts);
        """,
    ),
    (
        "0011_document_redactions",
        """
        -- How many secrets (keys, tokens, private keys, passwords) were redacted from a
        -- document's text at ingest: the owner sees the count, never the secret.
        ALTER TABLE documents ADD COLUMN redactions INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        "0012_synced_sources",
        """
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
            max_bytes BIGINT NOT NULL,
            every_seconds INTEGER NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            last_looked_at TIMESTAMPTZ,
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
            size BIGINT NOT NULL DEFAULT 0,
            mtime_ns BIGINT NOT NULL DEFAULT 0,
            updated_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (source_id, path)
        );
        CREATE INDEX sync_files_by_document ON sync_files(document_id)
            WHERE document_id IS NOT NULL;
        """,
    ),
    (
        "0020_kb_row_vectors",
        """
        -- Each table row's label text (memoryd.kb.rows.label_text) and its vector (float32
        -- bytes, NULL until the vector fill reaches it): a question near a row's label finds
        -- the row whatever its words. Rows stored before this migration have no label and get
        -- one when their document is ingested again.
        ALTER TABLE chunk_rows ADD COLUMN label TEXT NOT NULL DEFAULT '';
        ALTER TABLE chunk_rows ADD COLUMN embedding BYTEA;
        """,
    ),
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
