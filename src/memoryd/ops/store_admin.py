"""The store as a whole, for the surfaces: where it is, its health, its job queue, and copies of
it (export, import, backup). The CLI, HTTP and MCP reach the store only through here and the
rest of the service."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from memoryd.errors import StoreMismatchError
from memoryd.jobs.model import Job
from memoryd.ops.endpoint_health_policy import JOBS_READ, extraction_health, failing_notices
from memoryd.storage.protocols import EmbeddingSignature

if TYPE_CHECKING:
    from memoryd.clock import Clock
    from memoryd.memory.ledger import Ledger
    from memoryd.ops.backup import BackupResult
    from memoryd.ops.portability import Summary as ExportSummary
    from memoryd.ops.reembed import ReembedPlan
    from memoryd.providers.embedder import Embedder
    from memoryd.providers.llm import Gateway
    from memoryd.providers.tokenizer import TokenCodec
    from memoryd.storage.protocols import Store


class StoreAdmin:
    """Store-level operations: the store, the embedder that fills it, the LLM routes whose
    health the status line reports, the tokenizer a re-embed plan counts with, the clock, and
    the ledger an imported store is re-slotted through."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        gateway: Gateway,
        tokenizer: TokenCodec,
        clock: Clock,
        ledger: Ledger,
    ) -> None:
        self.store, self.embedder, self.gateway = store, embedder, gateway
        self.tokenizer, self.clock, self.ledger = tokenizer, clock, ledger

    def store_location(self) -> str | None:
        """Where the store lives: the SQLite file, or the PostgreSQL URL without its password."""
        location = getattr(self.store, "path", None)
        return None if location is None else str(location)

    def embedding_signature(self) -> EmbeddingSignature | None:
        """The embedding model and dimension the store was created with, if recorded."""
        return self.store.embedding_signature()

    def memory_count(self) -> int:
        """How many memories the store holds, in every status."""
        return self.store.memories.count()

    def job_counts(self) -> dict[str, int]:
        """The background job queue: how many jobs are in each state."""
        return self.store.jobs.counts()

    def recent_jobs(self, limit: int) -> list[Job]:
        """The newest ``limit`` background jobs, newest first."""
        return self.store.jobs.recent(limit)

    def export_to(self, out: TextIO, *, with_vectors: bool = False) -> ExportSummary:
        """Write everything in the store to ``out`` as JSON Lines (see :mod:`portability`)."""
        from memoryd.ops.portability import export_store

        return export_store(self.store, out, with_vectors=with_vectors)

    def import_from(self, lines: Iterable[str]) -> ExportSummary:
        """Load an export into this (empty) store in one transaction, embedding what has no
        vector."""
        from memoryd.memory.slot_vocabulary import reslot_if_needed
        from memoryd.ops.portability import import_store

        summary = import_store(self.store, lines, self.embedder)
        # An export from before canonical slots is re-slotted now, as an old store would be.
        reslot_if_needed(self.store, self.ledger, self.clock())
        return summary

    def backup_to(self, target: Path) -> BackupResult:
        """Write a consistent copy of the store to ``target`` (see :mod:`backup`)."""
        from memoryd.ops.backup import make_backup

        return make_backup(self.store, target)

    def failing_endpoints(self) -> list[str]:
        """The model endpoints failing now, for a status line: the extract route when its jobs
        fail (from the job table, as ``memoryd status`` reads it) and the embeddings endpoint
        while it fails (what this process's embedder saw last)."""
        from memoryd.providers.remote_embedder import OpenAICompatibleEmbedder

        route = self.gateway.routes.get("extract")
        extract = (route.model, route.base_url) if route is not None else None
        health = extraction_health(self.store.jobs.recent(JOBS_READ), self.clock())
        embedder = self.embedder
        embeddings = None
        if isinstance(embedder, OpenAICompatibleEmbedder) and embedder.failing is not None:
            embeddings = (embedder.settings.model, embedder.settings.base_url, *embedder.failing)
        return failing_notices(extract, health, embeddings)

    def plan_reembed(self, embedder: Embedder, *, batch_size: int) -> ReembedPlan:
        """What moving the store to ``embedder``'s vectors would take (nothing changes)."""
        from memoryd.ops.reembed_admin import ReembedAdmin

        return ReembedAdmin(self.store, self.tokenizer).plan(embedder, batch_size=batch_size)


def check_embedding_signature(store: Store, embedder: Embedder) -> None:
    """Record the embedder's model and dimension in a new store; refuse a store whose
    vectors came from another embedder. Either way the store then refuses vector work from
    this process if a re-embed switches it to another model while the process runs."""
    found = store.embedding_signature()
    if found is None:
        signature = EmbeddingSignature(embedder.model, embedder.dimension)
        store.initialize_embeddings(signature)
        store.expect_signature(signature)
        return
    if found.model == embedder.model:
        # An endpoint's embedder takes the recorded dimension instead of asking for it.
        expect = getattr(embedder, "expect", None)
        if callable(expect):
            expect(found.dimension)
        if embedder.dimension == found.dimension:
            store.expect_signature(found)
            return
    raise StoreMismatchError(
        f"this store holds {found.dimension}-dimension vectors from {found.model!r}, but "
        f"memoryd is configured with {embedder.model!r}; use the embedder the store was "
        "built with (MEMORYD_EMBED_MODEL, or [embed] in memoryd.toml), or move the store's "
        f"vectors to {embedder.model!r} with `memoryd reembed`"
    )
