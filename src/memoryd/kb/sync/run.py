"""Synced sources kept current (SPEC §6): register a folder, file or URL, and run passes that
bring its documents in line with it — new files ingested, changed ones re-ingested (unchanged
chunks keep their vectors), deleted or moved-out ones' documents removed, renamed ones kept as
one document.

Crash safety comes from the order of the writes, each its own transaction: a pass first saves
the rows of the files it will read as ``queued``, then ingests each file (its document and chunks
in one transaction, keyword-searchable from that commit; the vectors follow from the worker's
job), then marks its row ``current``. A pass killed anywhere leaves queued rows that the next
pass reads again, and an ingest of bytes already stored is skipped by their hash, so nothing is
lost and nothing doubled. A removed file's document and its row go in one transaction; so do a
renamed file's new path and its document's new source.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from memoryd.clock import Clock
from memoryd.errors import InvalidInputError, SyncSourceNotFoundError
from memoryd.ids import IdGenerator, resolve_prefix
from memoryd.kb.convert import READABLE_SUFFIXES
from memoryd.kb.folder_rules import refuse_reason
from memoryd.kb.model import DEFAULT_COLLECTION, check_collection
from memoryd.kb.service import KnowledgeBase
from memoryd.kb.sync.model import (
    DEFAULT_MAX_BYTES,
    DEFAULT_RESCAN_SECONDS,
    DEFAULT_URL_SECONDS,
    MIN_INTERVAL_SECONDS,
    FileState,
    FileStatus,
    SourceKind,
    SyncFile,
    SyncSource,
)
from memoryd.kb.sync.passes import PassListener, PassReport, SourcePass, source_paths
from memoryd.kb.sync.rules import check_patterns
from memoryd.kb.urls import check_url, is_url
from memoryd.storage.protocols import Store
from memoryd.trust.credential_screening import find_credential

# PassReport is named from here by the surfaces and the sync loop.
__all__ = ["FolderSync", "PassListener", "PassReport"]

log = logging.getLogger("memoryd")


@dataclass(eq=False)
class FolderSync:
    """The owner's synced sources and the passes that keep them current."""

    store: Store
    kb: KnowledgeBase
    _: KW_ONLY
    clock: Clock
    ids: IdGenerator
    home: Path
    _locks: dict[str, threading.Lock] = field(default_factory=dict, init=False, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _pass: SourcePass = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pass = SourcePass(self)

    # ------------------------------------------------------------------ sources

    def add(
        self,
        location: str,
        *,
        collection: str = DEFAULT_COLLECTION,
        ignore: Sequence[str] = (),
        include_hidden: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
        every_seconds: int | None = None,
        now: datetime | None = None,
    ) -> SyncSource:
        """Register a folder, a file or an http(s) URL (refreshed every ``every_seconds``;
        folders and files are rescanned that often besides their notifications). A location
        already registered is updated with these settings."""
        at = now or self.clock()
        kind, where = self._locate(location)
        collection = check_collection(collection)
        patterns = check_patterns(ignore)
        if max_bytes <= 0:
            raise InvalidInputError("the size cap must be a positive number of bytes")
        default = DEFAULT_URL_SECONDS if kind is SourceKind.URL else DEFAULT_RESCAN_SECONDS
        every = default if every_seconds is None else int(every_seconds)
        if every < MIN_INTERVAL_SECONDS:
            raise InvalidInputError(
                f"the refresh interval is at least {MIN_INTERVAL_SECONDS} seconds"
            )
        existing = self.store.sync.source_by_location(where)
        source = SyncSource(
            id=existing.id if existing else self.ids.new_id(at),
            location=where,
            kind=kind,
            collection=collection,
            created_at=existing.created_at if existing else at,
            ignore=patterns,
            include_hidden=include_hidden,
            max_bytes=max_bytes,
            every_seconds=every,
            last_looked_at=existing.last_looked_at if existing else None,
        )
        with self.store.transaction():
            self.store.sync.save_source(source)
        return source

    def _locate(self, location: str) -> tuple[SourceKind, str]:
        text = location.strip()
        if not text or "\x00" in text:
            raise InvalidInputError("name a folder, a file or an http(s) URL to sync")
        if is_url(text):
            if find_credential(text) is not None:
                # Registering it would store the credential it carries.
                raise InvalidInputError(
                    "the URL carries a password or token, and memoryd never stores credentials"
                )
            check_url(text)
            return SourceKind.URL, text
        if find_credential(text) is not None:
            # The folder or file's path is stored with the source, and shown by kb sync list.
            raise InvalidInputError(
                "the path carries a password or token, and memoryd never stores credentials; "
                "rename it to sync it"
            )
        resolved = _resolved(text)
        if resolved is None or not resolved.exists():
            shown = text if len(text) <= 200 else text[:200] + "…"
            raise InvalidInputError(f"{shown} does not exist; name a folder, a file or a URL")
        path = Path(text).expanduser().absolute()
        reason = refuse_reason(path, path.parent if path.is_file() else path, self.home)
        if reason is not None:
            raise InvalidInputError(f"refusing to sync {path}: {reason}")
        path = resolved
        if path.is_dir():
            return SourceKind.FOLDER, str(path)
        if path.is_file():
            if path.suffix.lower() not in READABLE_SUFFIXES:
                raise InvalidInputError(
                    f"{path.name} is not a type memoryd reads ({path.suffix or 'no extension'})"
                )
            return SourceKind.FILE, str(path)
        raise InvalidInputError(f"{path} is neither a folder nor a regular file")

    def sources(self) -> list[SyncSource]:
        """Every synced source, oldest first."""
        return self.store.sync.sources()

    def source(self, reference: str) -> SyncSource:
        """A source by its id, a unique start of its id, or its location."""
        text = reference.strip()
        by_location = self.store.sync.source_by_location(text)
        if by_location is None and text and not is_url(text):
            resolved = _resolved(text)
            if resolved is not None:
                by_location = self.store.sync.source_by_location(str(resolved))
        if by_location is not None:
            return by_location
        sources = {s.id: s for s in self.sources()}
        whole = resolve_prefix(
            text,
            ("synced source", "synced sources"),
            get=sources.get,
            starting=lambda prefix, limit: [i for i in sorted(sources) if i.startswith(prefix)][
                :limit
            ],
            label=lambda source: source.location,
            not_found=SyncSourceNotFoundError,
        )
        return sources[whole]

    def remove(self, reference: str, *, delete_documents: bool = False) -> SyncSource:
        """Stop syncing a source; its documents stay searchable unless ``delete_documents``."""
        source = self.source(reference)
        with self._lock(source.id), self.store.transaction():
            if delete_documents:
                for row in self.store.sync.files(source.id):
                    if row.document_id and self.store.kb.get_document(row.document_id):
                        self.store.kb.delete_document(row.document_id)
            self.store.sync.delete_source(source.id)
        if delete_documents:
            self.store.erase_traces(documents=True)
        return source

    def readmit(self, reference: str, path: str, *, now: datetime | None = None) -> SyncFile:
        """The owner asks for an erased (or skipped-by-failure) file again: queued, so the
        next pass reads it."""
        source = self.source(reference)
        relative = self._relative(source, path)
        row = self.store.sync.get_file(source.id, relative)
        if row is None:
            raise InvalidInputError(
                f"{relative!r} is not a file of the synced source {source.location}"
            )
        queued = replace(
            row, state=FileState.QUEUED, reason=None, document_id=None, content_hash=None,
            updated_at=now or self.clock(),
        )  # fmt: skip
        with self.store.transaction():
            self.store.sync.save_file(queued)
        return queued

    def _relative(self, source: SyncSource, path: str) -> str:
        if source.kind is not SourceKind.FOLDER:
            return source_paths(source)[1]
        given = Path(path)
        if path.startswith("~"):
            expanded = _resolved(path)
            if expanded is None:
                raise InvalidInputError(f"{path[:200]} names no file inside {source.location}")
            given = expanded
        if given.is_absolute():
            try:
                return given.absolute().relative_to(source.location).as_posix()
            except ValueError:
                raise InvalidInputError(f"{path} is not inside {source.location}") from None
        return given.as_posix()

    # ------------------------------------------------------------------- status

    def files(self, source_id: str) -> list[FileStatus]:
        """A source's files with their states as the owner sees them."""
        rows = self.store.sync.files(source_id)
        ids = [r.document_id for r in rows if r.document_id and r.state is FileState.CURRENT]
        documents = self.store.kb.documents_by_id(ids)
        counts = self.store.kb.vector_counts(list(documents))
        statuses = []
        for row in rows:
            label = self._pass.live.get((source_id, row.path), row.state.value)
            document = documents.get(row.document_id or "")
            if document is not None and label == FileState.CURRENT.value:
                counted = replace(document, embedded_chunks=counts.get(document.id, 0))
                label = counted.embedding_label or label
            statuses.append(FileStatus(row, label))
        return statuses

    def state_counts(self) -> dict[str, dict[str, int]]:
        """How many files each source has in each stored state."""
        return self.store.sync.state_counts()

    # ------------------------------------------------------------------- passes

    def due(self, now: datetime) -> list[SyncSource]:
        """The sources whose rescan (or refresh) interval has passed."""
        return [
            s
            for s in self.sources()
            if s.last_looked_at is None
            or now - s.last_looked_at >= timedelta(seconds=s.every_seconds)
        ]

    def run_pass(
        self,
        source: SyncSource,
        *,
        now: datetime | None = None,
        wait: bool = False,
        progress: PassListener | None = None,
    ) -> PassReport:
        """Bring one source's documents in line with it now. ``wait``: embed each document's
        chunks before going on (else the worker's jobs do, and the documents are keyword-
        searchable meanwhile). A source that cannot be looked at is reported, not raised."""
        started = time.perf_counter()
        at = now or self.clock()
        with self._lock(source.id):
            current = self.store.sync.get_source(source.id)
            if current is None:  # removed meanwhile
                return PassReport(source, error="the source was removed")
            try:
                if current.kind is SourceKind.URL:
                    report = self._pass.url_pass(current, at, wait, progress)
                else:
                    report = self._pass.path_pass(current, at, wait, progress)
            except OSError as error:
                report = PassReport(current, error=f"cannot look at {current.location}: {error}")
            looked = replace(current, last_looked_at=at, last_error=report.error)
            with self.store.transaction():
                if self.store.sync.get_source(source.id) is not None:
                    self.store.sync.save_source(looked)
        return replace(report, source=looked, seconds=time.perf_counter() - started)

    def _lock(self, source_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(source_id, threading.Lock())


def _resolved(text: str) -> Path | None:
    """The absolute path the owner's text names, links followed; None when it cannot name
    one (an unknown "~user", a name too long for the file system, a link loop)."""
    try:
        path = Path(text).expanduser().absolute().resolve()
        path.exists()  # a name too long raises here, not in resolve
    except (OSError, RuntimeError, ValueError):
        return None
    return path
