"""Importing conversation histories: read the export, leave out what is already imported, and
queue every new turn for extraction with its original time, in one transaction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from memoryd.errors import ExtractionOffError
from memoryd.extraction.chat_export_policy import (
    ChatExportError,
    ChatFormat,
    ChatTurn,
    ImportPlan,
    parse_export,
    plan_import,
)
from memoryd.extraction.queue import ExtractionQueue
from memoryd.jobs.model import Job
from memoryd.providers.llm import off_notice

if TYPE_CHECKING:
    from memoryd.clock import Clock
    from memoryd.providers.llm import Gateway
    from memoryd.storage.protocols import Store


@dataclass(frozen=True)
class ImportProgress:
    """How far an import is: conversations prepared (their turns screened and made jobs) of
    all to queue, and their turns; the jobs are then written in one transaction."""

    conversations_done: int
    conversations_total: int
    turns_queued: int
    turns_total: int


class ChatImportJson(TypedDict):
    # An imported chat export (ChatImportReport's shape).
    format: ChatFormat
    conversations: int
    conversations_queued: int
    turns_queued: int
    skipped_already_imported: int
    skipped_empty_or_unsupported: int
    first_at: str | None
    last_at: str | None
    dry_run: bool


@dataclass(frozen=True)
class ChatImportReport:
    """What an import did (or, in a dry run, would do)."""

    format: ChatFormat
    conversations: int
    conversations_queued: int
    turns_queued: int
    skipped_imported: int
    skipped_empty: int
    first_at: datetime | None
    last_at: datetime | None
    dry_run: bool

    def to_json(self) -> ChatImportJson:
        """JSON shape for the CLI and API."""
        return {
            "format": self.format,
            "conversations": self.conversations,
            "conversations_queued": self.conversations_queued,
            "turns_queued": self.turns_queued,
            "skipped_already_imported": self.skipped_imported,
            "skipped_empty_or_unsupported": self.skipped_empty,
            "first_at": self.first_at.isoformat() if self.first_at else None,
            "last_at": self.last_at.isoformat() if self.last_at else None,
            "dry_run": self.dry_run,
        }


ProgressListener = Callable[[ImportProgress], None]


class ChatImporter:
    """Queues an export's turns as extraction jobs through the extraction queue."""

    def __init__(
        self, *, store: Store, gateway: Gateway, clock: Clock, queue: ExtractionQueue
    ) -> None:
        self.store, self.gateway, self.clock, self.queue = store, gateway, clock, queue

    def import_chats(
        self,
        path: str | Path,
        *,
        format: str = "auto",
        dry_run: bool = False,
        now: datetime | None = None,
        progress: ProgressListener | None = None,
    ) -> ChatImportReport:
        """Queue every turn of a ChatGPT or Claude export (``conversations.json`` or the
        export's .zip; ``format`` ``chatgpt``, ``claude`` or ``auto``) for extraction, oldest
        first, each dated by the owner's message. Turns already imported are left out, so
        importing again queues nothing; a file that cannot be read stores nothing, and all the
        turns are queued in one transaction. ``dry_run`` counts without queueing."""
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise ChatExportError(f"cannot read {path}: {error.strerror or error}") from None
        return self.import_chat_bytes(
            data, format=format, dry_run=dry_run, now=now, progress=progress
        )

    def import_chat_bytes(
        self,
        data: bytes,
        *,
        format: str = "auto",
        dry_run: bool = False,
        now: datetime | None = None,
        progress: ProgressListener | None = None,
    ) -> ChatImportReport:
        """:meth:`import_chats` over the file's bytes (an upload)."""
        export = parse_export(data, format)
        store = self.store
        plan = plan_import(export, store.imported_chats.imported(export.format))
        if dry_run:
            return _report(plan, True)
        if not self.gateway.configured("extract"):
            raise ExtractionOffError(off_notice("extraction"))
        at = now or self.clock()
        # Why outside the transaction: screening each turn for credentials is most of an
        # import's time (milliseconds a turn), and the store's writer must not wait on it.
        jobs: list[list[tuple[str, Job]]] = []
        prepared = 0
        for done, conversation in enumerate(plan.conversations, start=1):
            jobs.append([(turn.message_id, self._job(turn, at)) for turn in conversation.turns])
            prepared += len(conversation.turns)
            if progress is not None:
                progress(ImportProgress(done, len(plan.conversations), prepared, plan.turn_count))
        with store.transaction():
            # Another import of the same export may have committed meanwhile: SQLite runs one
            # writer at a time, so its ids are seen here; on PostgreSQL two racing imports
            # meet on the key and the later one stores nothing.
            imported = store.imported_chats.imported(export.format)
            for conversation, pairs in zip(plan.conversations, jobs, strict=True):
                new = [(message, job) for message, job in pairs
                       if (conversation.id, message) not in imported]  # fmt: skip
                for _, job in new:
                    store.jobs.enqueue(job)
                store.imported_chats.record(
                    export.format, conversation.id, [(m, job.id) for m, job in new], at
                )
        if plan.turn_count:
            self.queue.on_enqueue()
        return _report(plan, False)

    def _job(self, turn: ChatTurn, at: datetime) -> Job:
        return self.queue.turn_job(turn.owner, turn.reply, at=turn.at, now=at, kind="imported_turn")


def _report(plan: ImportPlan, dry_run: bool) -> ChatImportReport:
    times = [t.at for c in plan.conversations for t in c.turns]
    return ChatImportReport(
        format=plan.format,
        conversations=plan.conversation_count,
        conversations_queued=len(plan.conversations),
        turns_queued=plan.turn_count,
        skipped_imported=plan.already_imported,
        skipped_empty=plan.skipped_empty,
        first_at=min(times, default=None),
        last_at=max(times, default=None),
        dry_run=dry_run,
    )
