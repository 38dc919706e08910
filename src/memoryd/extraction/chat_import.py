"""Importing conversation histories: read the export a conversation at a time, leave out what
is already imported, and queue every new turn for extraction with its original time, in one
transaction.

What is held at once is one conversation and a few numbers for each one read: each new turn,
screened for credentials as it is read, waits in an unnamed temporary file (0600, gone when
closed) until the whole file has been read; the jobs are then made oldest first and written
together, so a file that cannot be read stores nothing."""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple, TypedDict

from memoryd.errors import ExtractionOffError
from memoryd.extraction.chat_export_file import ExportFile
from memoryd.extraction.chat_export_policy import (
    ChatExportError,
    ChatFormat,
    ChatTurn,
    Conversation,
    by_first_turn,
    new_turns,
    read_conversations,
)
from memoryd.extraction.queue import ExtractionQueue
from memoryd.providers.llm import off_notice

if TYPE_CHECKING:
    from memoryd.clock import Clock
    from memoryd.providers.llm import Gateway
    from memoryd.storage.protocols import Store


@dataclass(frozen=True)
class ImportProgress:
    """How far an import is: conversations read, the new turns among them (screened as they
    are read), the share of the file read, and ``done`` once all is read and, unless a dry run,
    the turns are queued in one transaction."""

    conversations: int
    turns: int
    share_read: float
    done: bool


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
        turns are queued in one transaction. ``dry_run`` counts without queueing. The file is
        read a conversation at a time, never whole."""
        with ExitStack() as closing:
            try:
                stream = closing.enter_context(Path(path).open("rb"))
            except OSError as error:
                raise ChatExportError(f"cannot read {path}: {error.strerror or error}") from None
            return self.import_chat_stream(
                stream, format=format, dry_run=dry_run, now=now, progress=progress
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
        """:meth:`import_chats` over the file's bytes."""
        return self.import_chat_stream(
            io.BytesIO(data), format=format, dry_run=dry_run, now=now, progress=progress
        )

    def import_chat_stream(
        self,
        stream: IO[bytes],
        *,
        format: str = "auto",
        dry_run: bool = False,
        now: datetime | None = None,
        progress: ProgressListener | None = None,
    ) -> ChatImportReport:
        """:meth:`import_chats` over the file's binary stream (seekable: an open file, an
        upload spooled to disk), read a conversation at a time."""
        queueing = not dry_run and self.gateway.configured("extract")
        at = now or self.clock()
        with ExportFile(stream) as export, tempfile.TemporaryFile() as spool:
            found, conversations = read_conversations(export.conversations(), format)
            # Why before reading on: a turn imported before is neither screened nor kept.
            imported = self.store.imported_chats.imported(found)
            tally = _Tally(found)
            for index, conversation in enumerate(conversations):
                new = new_turns(conversation, imported)
                tally.add(conversation, new, index, spool.tell())
                if queueing:
                    # Why outside the transaction: screening each turn for credentials is most
                    # of an import's time (milliseconds a turn); the writer must not wait on it.
                    spool.writelines(self._line(turn, at) for turn in new)
                if progress is not None:
                    progress(tally.progress(export.share_read, False))
            if not dry_run and not queueing:
                raise ExtractionOffError(off_notice("extraction"))
            if queueing:
                self._write(tally, spool, at)
        if progress is not None:
            progress(tally.progress(1.0, True))
        return tally.report(dry_run)

    def _line(self, turn: ChatTurn, at: datetime) -> bytes:
        """One turn's message id and screened job payload, a line of JSON."""
        payload = self.queue.turn_payload(turn.owner, turn.reply, at=turn.at, now=at)
        return json.dumps([turn.message_id, payload]).encode() + b"\n"

    def _write(self, tally: _Tally, spool: IO[bytes], at: datetime) -> None:
        """Every spooled turn made a job, oldest conversation first, in one transaction."""
        store = self.store
        with store.transaction():
            # Another import of the same export may have committed meanwhile: SQLite runs one
            # writer at a time, so its ids are seen here; on PostgreSQL two racing imports
            # meet on the key and the later one stores nothing.
            imported = store.imported_chats.imported(tally.format)
            for queued in sorted(tally.queued):
                spool.seek(queued.offset)
                pairs = []
                for _ in range(queued.turns):
                    message_id, payload = json.loads(spool.readline())
                    if (queued.conversation_id, message_id) not in imported:
                        job = self.queue.job_of("imported_turn", payload, at)
                        store.jobs.enqueue(job)
                        pairs.append((message_id, job.id))
                store.imported_chats.record(tally.format, queued.conversation_id, pairs, at)
        if tally.turns:
            self.queue.on_enqueue()


class _Queued(NamedTuple):
    """A conversation with new turns, as it sorts (oldest first turn, then the file's order),
    and where its spooled turns are."""

    first_at: datetime
    position: int
    conversation_id: str
    offset: int
    turns: int


@dataclass
class _Tally:
    """What the conversations read so far come to."""

    format: ChatFormat
    conversations: int = 0
    turns: int = 0
    already: int = 0
    skipped: int = 0
    first_at: datetime | None = None
    last_at: datetime | None = None
    queued: list[_Queued] = field(default_factory=list)

    def add(
        self, conversation: Conversation, new: tuple[ChatTurn, ...], index: int, offset: int
    ) -> None:
        """Count one conversation read, whose new turns are spooled from ``offset``."""
        self.conversations += 1
        self.turns += len(new)
        self.already += len(conversation.turns) - len(new)
        self.skipped += conversation.skipped
        if not new:
            return
        first = by_first_turn(conversation)
        self.queued.append(_Queued(first, index, conversation.id, offset, len(new)))
        first_new, last_new = min(t.at for t in new), max(t.at for t in new)
        self.first_at = first_new if self.first_at is None else min(self.first_at, first_new)
        self.last_at = last_new if self.last_at is None else max(self.last_at, last_new)

    def progress(self, share_read: float, done: bool) -> ImportProgress:
        """How far the import is."""
        return ImportProgress(self.conversations, self.turns, share_read, done)

    def report(self, dry_run: bool) -> ChatImportReport:
        """What the import did (or would do)."""
        return ChatImportReport(
            format=self.format,
            conversations=self.conversations,
            conversations_queued=len(self.queued),
            turns_queued=self.turns,
            skipped_imported=self.already,
            skipped_empty=self.skipped,
            first_at=self.first_at,
            last_at=self.last_at,
            dry_run=dry_run,
        )
