"""Named, ordered SQLite migrations. Each runs in its own transaction and is recorded."""

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
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('fact', 'event', 'lesson', 'inference')),
            status TEXT NOT NULL
                CHECK (status IN ('pending', 'active', 'rejected', 'archived')),
            content TEXT NOT NULL,
            subject TEXT,
            predicate TEXT,
            object TEXT,
            slot TEXT,
            entities TEXT NOT NULL DEFAULT '[]',
            confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
            importance TEXT CHECK (importance IN ('low', 'medium', 'high', 'critical')),
            changes_behavior INTEGER NOT NULL DEFAULT 0,
            occurred_at TEXT,
            source TEXT NOT NULL,
            source_ref TEXT,
            extractor_model TEXT,
            prompt_version TEXT,
            created_at TEXT NOT NULL,
            last_confirmed_at TEXT NOT NULL,
            last_retrieved_at TEXT,
            retrieval_hits INTEGER NOT NULL DEFAULT 0,
            supersedes TEXT REFERENCES memories(id),
            superseded_by TEXT REFERENCES memories(id),
            purged_at TEXT
        );
        -- The database itself guarantees one active memory per fact slot.
        CREATE UNIQUE INDEX memories_one_active_per_slot
            ON memories(slot) WHERE status = 'active' AND slot IS NOT NULL;
        CREATE INDEX memories_by_status_kind ON memories(status, kind, id);
        CREATE INDEX memories_by_slot ON memories(slot, status);
        CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories(id),
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            rule TEXT,
            action TEXT NOT NULL,
            from_status TEXT,
            to_status TEXT NOT NULL,
            reason TEXT NOT NULL
        );
        CREATE INDEX audit_by_memory ON audit_log(memory_id, id);
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
        """
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE
        );
        CREATE TABLE entity_aliases (
            key TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE
        );
        CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL REFERENCES memories(id),
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, entity_id)
        );
        CREATE INDEX memory_entities_by_entity ON memory_entities(entity_id, memory_id);
        CREATE INDEX memories_events_by_time ON memories(status, kind, occurred_at);
        """,
    ),
    (
        "0003_jobs",
        """
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TEXT NOT NULL,
            created_at TEXT NOT NULL,
            claimed_at TEXT,
            finished_at TEXT,
            last_error TEXT,
            result TEXT
        );
        CREATE INDEX jobs_due ON jobs(status, next_attempt_at);
        """,
    ),
    (
        "0004_recall_indexes",
        """
        -- Standing lessons are read on every recall; keep them one index probe away.
        CREATE INDEX memories_standing_lessons ON memories(importance, id)
            WHERE status = 'active' AND kind = 'lesson';
        """,
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
        -- Named leases: only one holder at a time, and a crashed holder's lease runs out.
        CREATE TABLE locks (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at TEXT NOT NULL
        );
        """,
    ),
    (
        "0007_knowledge_base",
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
            byte_size INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX documents_by_collection ON documents(collection, id);
        CREATE TABLE chunks (
            rowid INTEGER PRIMARY KEY,
            document_id TEXT NOT NULL REFERENCES documents(id),
            position INTEGER NOT NULL,
            headings TEXT NOT NULL,
            breadcrumb TEXT NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            overlap_chars INTEGER NOT NULL DEFAULT 0,
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
        """
        -- A fact's predicate joins its indexed text (memoryd.memory.model.indexed_text): questions
        -- use the slot's word ("my job") where the content words it otherwise.
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
    (
        "0009_chunk_pages",
        """
        -- Where pages begin in each chunk: JSON [[page, character offset], ...].
        ALTER TABLE chunks ADD COLUMN pages TEXT NOT NULL DEFAULT '[]';
        """,
    ),
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
    (
        "0012_fact_slot_vocabulary",
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
        "0013_eval_cases",
        """
        -- The owner's evaluation set (`memoryd eval`): a question, the memory ids recall
        -- should find for it and those it should not show (JSON lists).
        CREATE TABLE eval_cases (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL UNIQUE,
            expected TEXT NOT NULL DEFAULT '[]',
            noise TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL
        );
        """,
    ),
    (
        "0014_imported_chats",
        """
        -- The conversation messages `memoryd import-chats` queued (by the exporting service,
        -- the conversation's id and the owner message's id), so importing again queues nothing.
        CREATE TABLE imported_chats (
            source TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            job_id TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (source, conversation_id, message_id)
        );
        """,
    ),
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
    (
        "0016_memory_cues",
        """
        -- The words a person would use when asking about a memory later (a JSON list the
        -- extraction model or consolidation writes): indexed with it, never shown as content.
        ALTER TABLE memories ADD COLUMN cues TEXT NOT NULL DEFAULT '[]';
        """,
    ),
    (
        "0017_kb_rows",
        """
        -- Each table row of a chunk, indexed alone with its table's title, its column headers
        -- and its label (memoryd.kb.rows); a row found leads to its chunk. Written with the
        -- chunks: documents stored before this migration get theirs when ingested again.
        CREATE TABLE chunk_rows (
            document_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            row_index INTEGER NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (document_id, position, row_index)
        );
        -- rowid = chunk_rows.rowid.
        CREATE VIRTUAL TABLE chunk_row_fts USING fts5(text, tokenize = 'porter unicode61');
        INSERT INTO chunk_row_fts(chunk_row_fts, rank) VALUES ('secure-delete', 1);
        """,
    ),
    (
        "0018_document_redactions",
        """
        -- How many secrets (keys, tokens, private keys, passwords) were redacted from a
        -- document's text at ingest: the owner sees the count, never the secret.
        ALTER TABLE documents ADD COLUMN redactions INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        "0019_synced_sources",
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
            max_bytes INTEGER NOT NULL,
            every_seconds INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            last_looked_at TEXT,
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
            size INTEGER NOT NULL DEFAULT 0,
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL,
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
        ALTER TABLE chunk_rows ADD COLUMN embedding BLOB;
        """,
    ),
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
