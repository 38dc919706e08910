"""One pass over a synced source: scan it, plan against the stored rows, then each step in its
own transaction (queued rows first, renames and removals, marks, each file read and settled),
so a pass killed anywhere loses nothing and doubles nothing (``run.py`` says why)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol, TypedDict

from memoryd.kb.convert import READABLE_SUFFIXES
from memoryd.kb.folder_rules import refuse_reason
from memoryd.kb.results import IngestResult
from memoryd.kb.service import KnowledgeBase
from memoryd.kb.sync.model import FileState, SourceKind, SyncFile, SyncSource, SyncSourceJson
from memoryd.kb.sync.plan import Seen, plan_renames, plan_scan
from memoryd.kb.sync.rules import FolderRules
from memoryd.kb.sync.scan import folder_rules, scan_folder, stat_file
from memoryd.storage.protocols import Store


class SyncPassJson(TypedDict):
    # What one pass over a synced source did.
    source: SyncSourceJson
    added: int
    updated: int
    unchanged: int
    renamed: int
    removed: int
    skipped: int
    failed: int
    erased: int
    seconds: float
    error: str | None


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

    def to_json(self) -> SyncPassJson:
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


def source_paths(source: SyncSource) -> tuple[Path, str]:
    """The folder a source's files are relative to, and (for a file source) the file's name."""
    path = Path(source.location)
    if source.kind is SourceKind.FILE:
        return path.parent, path.name
    return path, ""


class PassParts(Protocol):
    """What a pass reads through, looked up at each use (the owner may repoint them)."""

    store: Store
    kb: KnowledgeBase
    home: Path


class SourcePass:
    """The steps of a pass over one source; :class:`memoryd.kb.sync.run.FolderSync` holds the
    source's lock around it and records when it looked."""

    def __init__(self, parts: PassParts) -> None:
        self._parts = parts
        # (source id, path) → "converting" while this process reads the file.
        self.live: dict[tuple[str, str], str] = {}

    @property
    def store(self) -> Store:
        """The store the source's rows and documents live in."""
        return self._parts.store

    @property
    def kb(self) -> KnowledgeBase:
        """The knowledge base that ingests each file."""
        return self._parts.kb

    @property
    def home(self) -> Path:
        """memoryd's home, which no pass reads from."""
        return self._parts.home

    def _scan(self, source: SyncSource) -> list[Seen]:
        root, name = source_paths(source)
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

    def path_pass(
        self, source: SyncSource, at: datetime, wait: bool, progress: PassListener | None
    ) -> PassReport:
        """A folder or file source brought in line with what is on disk."""
        root, _ = source_paths(source)
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
        return self._ingest(source, row, str(root / row.path), at, wait, progress)

    def _ingest(
        self,
        source: SyncSource,
        row: SyncFile,
        location: str,
        at: datetime,
        wait: bool,
        progress: PassListener | None,
    ) -> str:
        """Ingest the file or URL at ``location`` for ``row`` (shown as converting while it
        runs) and settle the row with what came of it (see :meth:`_settle`)."""
        key = (source.id, row.path)
        self.live[key] = "converting"
        try:
            result = self.kb.ingest([location], collection=source.collection, now=at, wait=wait)[0]
        finally:
            self.live.pop(key, None)
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

    def url_pass(
        self, source: SyncSource, at: datetime, wait: bool, progress: PassListener | None
    ) -> PassReport:
        """A URL source fetched again and its document brought in line with it."""
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
        outcome = self._ingest(source, row, source.location, at, wait, progress)
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
