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
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memoryd.clock import Clock
from memoryd.errors import InvalidInputError, SyncSourceNotFoundError
from memoryd.ids import IdGenerator, resolve_prefix
from memoryd.kb.convert import READABLE_SUFFIXES
from memoryd.kb.folder_rules import refuse_reason
from memoryd.kb.model import DEFAULT_COLLECTION, check_collection
from memoryd.kb.results import IngestResult
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
from memoryd.kb.sync.plan import Seen, plan_renames, plan_scan
from memoryd.kb.sync.rules import FolderRules, check_patterns
from memoryd.kb.sync.scan import folder_rules, scan_folder, stat_file
from memoryd.kb.urls import check_url, is_url
from memoryd.storage.protocols import Store
from memoryd.trust.credential_screening import find_credential

log = logging.getLogger("memoryd")


@dataclass(frozen=True)
class PassReport:
    """What one pass over a source did."""

    source: SyncSource
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    renamed: int = 0
    removed: int = 0
    skipped: int = 0
    failed: int = 0
    erased: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def summary(self) -> str:
        """ "3 added, 1 updated, 1 removed, 120 unchanged" (the counts that are not zero)."""
        parts = [
            f"{count} {name}"
            for name, count in (
                ("added", self.added), ("updated", self.updated), ("renamed", self.renamed),
                ("removed", self.removed), ("failed", self.failed), ("erased", self.erased),
                ("skipped", self.skipped), ("unchanged", self.unchanged),
            )
            if count
        ]  # fmt: skip
        return ", ".join(parts) or "nothing to do"

    def to_json(self) -> dict[str, Any]:
        """JSON shape for the CLI and API."""
        return {
            "source": self.source.to_json(),
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "renamed": self.renamed,
            "removed": self.removed,
            "skipped": self.skipped,
            "failed": self.failed,
            "erased": self.erased,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }


PassListener = Callable[[str, IngestResult | None], None]


class FolderSync:
    """The owner's synced sources and the passes that keep them current."""

    def __init__(
        self, store: Store, kb: KnowledgeBase, *, clock: Clock, ids: IdGenerator, home: Path
    ) -> None:
        self.store = store
        self.kb = kb
        self.home = home
        self._clock = clock
        self._ids = ids
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        # (source id, path) → "converting" while this process reads the file.
        self._live: dict[tuple[str, str], str] = {}

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
        at = now or self._clock()
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
            id=existing.id if existing else self._ids.new_id(at),
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
            exists=lambda i: i in sources,
            starting=lambda prefix, limit: [i for i in sorted(sources) if i.startswith(prefix)][
                :limit
            ],
            labels=lambda ids: {i: sources[i].location for i in ids},
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
            updated_at=now or self._clock(),
        )  # fmt: skip
        with self.store.transaction():
            self.store.sync.save_file(queued)
        return queued

    def _relative(self, source: SyncSource, path: str) -> str:
        if source.kind is not SourceKind.FOLDER:
            return self._paths(source)[1]
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
            label = self._live.get((source_id, row.path), row.state.value)
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
        at = now or self._clock()
        with self._lock(source.id):
            current = self.store.sync.get_source(source.id)
            if current is None:  # removed meanwhile
                return PassReport(source, error="the source was removed")
            try:
                if current.kind is SourceKind.URL:
                    report = self._url_pass(current, at, wait, progress)
                else:
                    report = self._path_pass(current, at, wait, progress)
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

    def _paths(self, source: SyncSource) -> tuple[Path, str]:
        """The folder files are relative to, and (for a file source) the file's name."""
        path = Path(source.location)
        if source.kind is SourceKind.FILE:
            return path.parent, path.name
        return path, ""

    def _scan(self, source: SyncSource) -> list[Seen]:
        root, name = self._paths(source)
        if source.kind is SourceKind.FOLDER:
            if not root.is_dir():
                raise FileNotFoundError(f"the folder {root} is gone")
            return scan_folder(root, folder_rules(source, root), self.home)
        seen = stat_file(root / name)
        if seen is None:
            return []
        rules = FolderRules((), True, source.max_bytes, READABLE_SUFFIXES)
        link = refuse_reason(root / name, root, self.home)
        return [replace(seen, skip=link or rules.file_reason(name, seen.size))]

    def _path_pass(
        self, source: SyncSource, at: datetime, wait: bool, progress: PassListener | None
    ) -> PassReport:
        root, _ = self._paths(source)
        seen = self._scan(source)
        rows = self.store.sync.files(source.id)
        linked = [r.document_id for r in rows if r.document_id]
        live = set(self.store.kb.documents_by_id(linked))
        plan = plan_scan(seen, rows, live, source.id, at)
        stored = {r.path: r for r in rows}
        with self.store.transaction():
            for row in plan.to_read:
                self.store.sync.save_file(row)
        digests = {row.path: _digest(root / row.path) for row in plan.to_read}
        renames = plan_renames(
            {p: d for p, d in digests.items() if d is not None}, plan.gone, stored
        )
        counts = dict.fromkeys(("added", "updated", "unchanged", "renamed", "removed", "failed"), 0)
        for new_path, old in renames.items():
            if self._rename(root, old, new_path, at):
                counts["renamed"] += 1
        renamed_from = {old.path for old in renames.values()}
        for row in plan.gone:
            if row.path not in renamed_from:
                counts["removed"] += self._remove(row)
        with self.store.transaction():
            for row in plan.marks:
                self.store.sync.save_file(row)
        for row in plan.to_read:
            if row.path in renames:
                continue
            outcome = self._read(source, root, row, digests.get(row.path), at, wait, progress)
            if outcome in counts:
                counts[outcome] += 1
        erased = sum(m.state is FileState.ERASED for m in plan.marks)
        skipped = sum(m.state is FileState.SKIPPED for m in plan.marks)
        return PassReport(
            source, counts["added"], counts["updated"], plan.unchanged + counts["unchanged"],
            counts["renamed"],
            counts["removed"], skipped, counts["failed"], erased,
        )  # fmt: skip

    def _read(
        self,
        source: SyncSource,
        root: Path,
        row: SyncFile,
        digest: str | None,
        at: datetime,
        wait: bool,
        progress: PassListener | None,
    ) -> str:
        """Ingest one queued file and record what came of it: 'added', 'updated',
        'unchanged', 'failed', 'gone' or 'erased'."""
        if digest is None:  # deleted since the scan: the next pass removes its row
            return "gone"
        if row.document_id and self.store.kb.get_document(row.document_id) is None:
            # Erased by the owner between the scan and now.
            self._save(replace(row, state=FileState.ERASED, document_id=None, updated_at=at))
            return "erased"
        if digest == row.content_hash and row.document_id:
            self._save(replace(row, state=FileState.CURRENT, updated_at=at))
            return "unchanged"
        key = (source.id, row.path)
        self._live[key] = "converting"
        try:
            result = self.kb.ingest(
                [str(root / row.path)], collection=source.collection, now=at, wait=wait
            )[0]
        finally:
            self._live.pop(key, None)
        if progress is not None:
            progress(row.path, result)
        return self._settle(row, result, at)

    def _settle(self, row: SyncFile, result: IngestResult, at: datetime) -> str:
        document = result.document
        if result.outcome == "failed" or document is None:
            self._save(replace(row, state=FileState.FAILED, reason=result.reason, updated_at=at))
            return "failed"
        state = FileState.QUEUED if result.outcome == "queued" else FileState.CURRENT
        settled = replace(
            row, state=state, reason=result.reason if state is FileState.QUEUED else None,
            document_id=document.id, content_hash=document.content_hash, updated_at=at,
        )  # fmt: skip
        with self.store.transaction():
            stored = self.store.sync.get_file(row.source_id, row.path)
            if stored is not None and stored.state is FileState.ERASED:
                return "erased"
            self.store.sync.save_file(settled)
        if result.outcome == "skipped":
            return "unchanged"
        return "updated" if row.document_id else "added"

    def _rename(self, root: Path, old: SyncFile, path: str, at: datetime) -> bool:
        """The gone row's document now comes from ``path``: its source follows, one
        transaction; False when the document is no longer there."""
        new_uri = str(root / path)
        with self.store.transaction():
            document = self.store.kb.get_document(old.document_id or "")
            if document is None:
                return False
            taken = self.store.kb.document_by_uri(new_uri)
            if taken is not None and taken.id != document.id:
                return False  # the new path was ingested on its own: read it as new
            self.store.kb.save_document(replace(document, source_uri=new_uri, updated_at=at))
            self.store.sync.delete_file(old.source_id, old.path)
            stat = _stat(root / path)
            self.store.sync.save_file(
                replace(old, path=path, size=stat[0], mtime_ns=stat[1], updated_at=at)
            )
        return True

    def _remove(self, row: SyncFile) -> int:
        """The gone file's row and its document, together; 1 when a document went."""
        removed = 0
        with self.store.transaction():
            if row.document_id is not None and row.state is not FileState.ERASED:
                others = [
                    f for f in self.store.sync.files_of_document(row.document_id)
                    if (f.source_id, f.path) != (row.source_id, row.path)
                ]  # fmt: skip
                if not others and self.store.kb.get_document(row.document_id) is not None:
                    self.store.kb.delete_document(row.document_id)
                    removed = 1
            self.store.sync.delete_file(row.source_id, row.path)
        return removed

    def _url_pass(
        self, source: SyncSource, at: datetime, wait: bool, progress: PassListener | None
    ) -> PassReport:
        row = self.store.sync.get_file(source.id, source.location) or SyncFile(
            source.id, source.location, FileState.QUEUED, at
        )
        if row.document_id and self.store.kb.get_document(row.document_id) is None:
            if row.state is not FileState.ERASED:
                self._save(replace(row, state=FileState.ERASED, document_id=None, updated_at=at))
            return PassReport(source, erased=1)
        if row.state is FileState.ERASED:
            return PassReport(source, unchanged=1)
        self._save(replace(row, state=FileState.QUEUED, updated_at=at))
        key = (source.id, row.path)
        self._live[key] = "converting"
        try:
            result = self.kb.ingest([source.location], collection=source.collection, now=at,
                                    wait=wait)[0]  # fmt: skip
        finally:
            self._live.pop(key, None)
        if progress is not None:
            progress(row.path, result)
        outcome = self._settle(row, result, at)
        return PassReport(
            source,
            added=outcome == "added",
            updated=outcome == "updated",
            unchanged=outcome == "unchanged",
            failed=outcome == "failed",
        )

    def _save(self, row: SyncFile) -> None:
        with self.store.transaction():
            self.store.sync.save_file(row)


def _resolved(text: str) -> Path | None:
    """The absolute path the owner's text names, links followed; None when it cannot name
    one (an unknown "~user", a name too long for the file system, a link loop)."""
    try:
        path = Path(text).expanduser().absolute().resolve()
        path.exists()  # a name too long raises here, not in resolve
    except (OSError, RuntimeError, ValueError):
        return None
    return path


def _digest(path: Path) -> str | None:
    """The SHA-256 of a file's bytes (the hash an ingest stores), None when it is gone."""
    import hashlib

    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _stat(path: Path) -> tuple[int, int]:
    try:
        found = os.stat(path)
    except OSError:
        return 0, 0
    return found.st_size, found.st_mtime_ns
