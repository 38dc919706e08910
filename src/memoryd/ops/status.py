"""``memoryd status``: one look at a home — the store, the embedder, the LLM routes and whether
they answered lately, a running server, the memory and job counts, the last consolidation —
read from the settings, the store and the server record, never loading a model and never
calling an endpoint.

"Answered recently" comes from the job table: an extraction job that finished within the last
24 hours means the ``extract`` route answered; a queued job that carries an error is one the
route is failing right now. The other routes run inside consolidation and ingest, which keep no
per-call record, so they borrow extract's verdict only when they are the same model at the
same endpoint, and otherwise say that nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memoryd.config.settings import OPERATIONS, Settings, masked_location
from memoryd.errors import MemorydError
from memoryd.jobs.model import Job, JobStatus
from memoryd.memory.model import Kind, Status
from memoryd.ops.endpoint_health_policy import JOBS_READ, extraction_health
from memoryd.ops.server_record import read_record
from memoryd.storage.protocols import EmbeddingSignature, Store


def gather_status(settings: Settings, now: datetime) -> dict[str, Any]:
    """Everything ``memoryd status`` shows, as JSON-ready data. A store that cannot be opened
    is reported, not raised; so are settings that cannot be built into routes."""
    from memoryd.wiring import open_store

    report: dict[str, Any] = {
        "home": str(settings.home),
        "settings_file": str(settings.file) if settings.file and settings.file.is_file() else None,
        "server": read_record(settings.home).to_json(),
    }
    store_part: dict[str, Any] = {
        "location": masked_location(settings.db),
        "backend": "postgresql" if settings.is_postgres else "sqlite",
    }
    signature: EmbeddingSignature | None = None
    jobs: list[Job] = []
    try:
        store = open_store(settings, create=False)
    except MemorydError as error:
        store_part.update(ok=False, error=str(error))
    else:
        try:
            signature = store.embedding_signature()
            jobs = store.jobs.recent(JOBS_READ)
            store_part.update(ok=True, size_bytes=_size_on_disk(settings))
            report["memories"] = _memory_counts(store)
            report["jobs"] = _job_counts(store.jobs.counts())
            last = store.get_meta("last_consolidation_at")
            report["last_consolidation_at"] = last or None
            report["synced"] = synced_summary(store)
        finally:
            store.close()
    report["store"] = store_part
    report["embedder"] = _embedder_part(settings, signature)
    report["llm"] = _llm_part(settings, jobs, now)
    return report


def synced_summary(store: Store) -> list[dict[str, Any]]:
    """Each synced source with how many of its files are in each state and when it was last
    looked at."""
    counts = store.sync.state_counts()
    return [
        {
            "id": source.id,
            "location": source.location,
            "kind": source.kind.value,
            "files": counts.get(source.id, {}),
            "last_looked_at": source.last_looked_at.isoformat(timespec="seconds")
            if source.last_looked_at
            else None,
            "last_error": source.last_error,
        }
        for source in store.sync.sources()
    ]


def _size_on_disk(settings: Settings) -> int | None:
    """The SQLite file with its write-ahead log, or ``pg_database_size`` of the database."""
    if not settings.is_postgres:
        base = Path(settings.db)
        paths = [base, base.with_name(base.name + "-wal"), base.with_name(base.name + "-shm")]
        return sum(path.stat().st_size for path in paths if path.exists())
    import psycopg

    try:
        with psycopg.connect(settings.db, connect_timeout=5) as connection:
            row = connection.execute("SELECT pg_database_size(current_database())").fetchone()
    except psycopg.Error:
        return None
    return int(row[0]) if row else None


def _memory_counts(store: Store) -> dict[str, int]:
    memories = store.memories
    return {
        "active": memories.count(status=Status.ACTIVE),
        "pending": memories.count(status=Status.PENDING),
        "reconfirm_due": _reconfirm_due(store),
    }


def _reconfirm_due(store: Store) -> int:
    """The reconfirmation queue's length: active facts the semantic decay superseded and the
    owner has not reconfirmed since (the rule of ``OwnerReview.reconfirmation_queue``)."""
    from memoryd.consolidation.policy import Stage

    candidates = [
        memory.id
        for memory in store.memories.query(status=Status.ACTIVE, kind=Kind.FACT)
        if memory.supersedes is not None and memory.last_confirmed_at < memory.created_at
    ]
    if not candidates:
        return 0
    decayed = {
        entry.memory_id
        for entry in store.audit.for_memories(candidates)
        if entry.rule == Stage.DECAY_SEMANTIC.value
    }
    return len(decayed)


def _job_counts(counts: dict[str, int]) -> dict[str, int]:
    return {status.value: counts.get(status.value, 0) for status in JobStatus}


def _embedder_part(settings: Settings, signature: EmbeddingSignature | None) -> dict[str, Any]:
    from memoryd.providers.embedder import LOCAL_DIMENSION, LOCAL_MODEL_ID
    from memoryd.providers.remote_embedder import embed_settings_of

    part: dict[str, Any] = {}
    try:
        endpoint = embed_settings_of(settings)
    except MemorydError as error:
        return {"ok": False, "error": str(error)}
    if endpoint is None:
        part.update(model=LOCAL_MODEL_ID, base_url=None, dimension=LOCAL_DIMENSION)
    else:
        part.update(model=endpoint.model, base_url=endpoint.base_url, dimension=endpoint.dimensions)
    if signature is not None:
        part["dimension"] = signature.dimension
        part["store_model"] = signature.model
        part["matches_store"] = signature.model == part["model"]
    part["ok"] = part.get("matches_store", True)
    return part


def _llm_part(settings: Settings, jobs: Sequence[Job], now: datetime) -> dict[str, Any]:
    from memoryd.providers.llm import routes_of

    try:
        routes = routes_of(settings)
    except MemorydError as error:
        return {"error": str(error)}
    extract = routes.get("extract")
    health = extraction_health(jobs, now)
    part: dict[str, Any] = {}
    for operation in OPERATIONS:
        route = routes.get(operation)
        if route is None:
            part[operation] = {"on": False}
            continue
        shown: dict[str, Any] = {
            "on": True,
            "provider": route.provider.value,
            "model": route.model,
            "base_url": route.base_url,
        }
        same = extract is not None and (route.provider, route.model, route.base_url) == (
            extract.provider,
            extract.model,
            extract.base_url,
        )
        if operation == "extract":
            shown["health"] = health
        elif same:
            shown["health"] = {**health, "note": "the same model and endpoint as extract"}
        else:
            shown["health"] = {"answered_recently": None, "note": "not recorded"}
        part[operation] = shown
    return part
