"""The memories' front door (``service.memories``): writing, the owner's review and reading.

Built from its parts, each handed in: the writer, the owner's review, forget, the store it
reads through, the clock and the recall stamps it waits for before a read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memoryd.clock import Clock
from memoryd.errors import MemoryNotFoundError
from memoryd.forward import Forward
from memoryd.ids import resolve_prefix
from memoryd.memory.forget import Forgetting
from memoryd.memory.forget_policy import ForgetResult
from memoryd.memory.lookups import require_memory
from memoryd.memory.model import (
    Kind,
    Memory,
    Proposal,
    Provenance,
    ShowResult,
    Source,
    Status,
)
from memoryd.memory.proposal_policy import parse_batch, parse_batch_text
from memoryd.memory.review import OwnerReview
from memoryd.memory.writes import MemoryWriter
from memoryd.results import WriteResult
from memoryd.storage.protocols import Store


class Memories:
    """Remember, propose, review and read memories; every write in one transaction."""

    def __init__(
        self,
        *,
        store: Store,
        writer: MemoryWriter,
        review: OwnerReview,
        forgetting: Forgetting,
        clock: Clock,
        settle: Callable[[], None],
    ) -> None:
        self._store, self._clock = store, clock
        self._writer, self._review, self._forgetting = writer, review, forgetting
        # Reads wait for the retrieval stamps of earlier recalls, so they see them.
        self._settle = settle

    # --------------------------------------------------------------------- writes
    remember = Forward("_writer", MemoryWriter.remember)
    edit = Forward("_writer", MemoryWriter.edit)
    purge = Forward("_writer", MemoryWriter.purge)
    add_alias = Forward("_writer", MemoryWriter.add_alias)

    def propose(
        self,
        batch: str | dict[str, Any] | Sequence[Proposal],
        *,
        source: Source,
        source_ref: str | None = None,
        extractor_model: str | None = None,
        prompt_version: str | None = None,
        now: datetime | None = None,
        tainted_by: str | None = None,
    ) -> list[WriteResult]:
        """Validate a batch (all or nothing), then let the promotion policy decide each item.
        The whole batch is written in one transaction. ``tainted_by`` says why the source text
        is suspect; then nothing from it activates alone."""
        if isinstance(batch, str):
            proposals = parse_batch_text(batch)
        elif isinstance(batch, dict):
            proposals = parse_batch(batch)
        else:
            proposals = tuple(batch)
        provenance = Provenance(source, source_ref, extractor_model, prompt_version)
        return self._writer.propose(proposals, provenance, now or self._clock(), tainted_by)

    def forget(
        self,
        *,
        entity: str | None = None,
        query: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> ForgetResult:
        """Owner action: erase everything about ``entity`` or matching ``query`` (one of the
        two). Lists every memory in any status (active, pending, archived, superseded,
        rejected) and every knowledge-base chunk that names the entity (tagged with it or one
        of its aliases, or holding one as whole words) or matches the query (every content
        word, and a cosine of at least :data:`memoryd.memory.forget_policy.QUERY_MIN_COSINE`);
        then, unless ``dry_run``, purges those memories (tombstones kept) and removes the
        documents those chunks belong to, whole, in one transaction, and records the request
        with its counts (no content) in the store and in each tombstone's audit entry."""
        self._settle()
        return self._forgetting.forget(entity, query, dry_run, now)

    # --------------------------------------------------------------------- review
    confirm = Forward("_review", OwnerReview.confirm)
    reject = Forward("_review", OwnerReview.reject)
    archive = Forward("_review", OwnerReview.archive)
    split = Forward("_review", OwnerReview.split)
    reconfirm = Forward("_review", OwnerReview.reconfirm)
    review_queue = Forward("_review", OwnerReview.review_queue)
    review_items = Forward("_review", OwnerReview.review_items)

    def reconfirmation_queue(self) -> list[Memory]:
        """Active facts whose confidence consolidation lowered and nobody reconfirmed since:
        the owner reconfirms, edits or archives them."""
        self._settle()
        return self._review.reconfirmation_queue()

    # -------------------------------------------------------------------- reading

    def resolve_id(self, memory_id: str) -> str:
        """The whole id of the memory ``memory_id`` names: its id, or a unique start of it of
        at least 4 characters (as git takes commits). MemoryNotFoundError when none,
        AmbiguousIdError (listing them) when several. For the owner's command line; the
        HTTP API and the model's tools take whole ids only."""
        memories = self._store.memories
        return resolve_prefix(
            memory_id,
            ("memory", "memories"),
            get=memories.get,
            starting=memories.ids_starting,
            label=lambda memory: "[purged]" if memory.purged_at else memory.content,
            not_found=MemoryNotFoundError,
        )

    def get(self, memory_id: str) -> Memory:
        """One memory, or MemoryNotFoundError."""
        self._settle()
        return require_memory(self._store, memory_id)

    def show(self, memory_id: str) -> ShowResult:
        """A memory with its supersede chain (oldest first) and the audit trail of the chain."""
        self._settle()
        return self._review.show(memory_id)

    # Last in the class: below it, ``list`` names this method, not the builtin.
    def list(
        self, *, status: Status | None = None, kind: Kind | None = None, limit: int | None = None
    ) -> list[Memory]:
        """Memories, newest first."""
        self._settle()
        return self._store.memories.query(status=status, kind=kind, limit=limit)
