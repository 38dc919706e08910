"""What one sync pass does (pure): from the files a scan saw and the rows stored for them, which
files to read, which documents to remove, which files were renamed, and which rows change state.

Unchanged files cost a stat, not a read: a file is read (and hashed) only when its size or
modification time differs from the stored row, or when its row is still queued (a pass that
died before reading it). A document whose row points at it but that is gone from the store was
removed by the owner (forget, kb delete): its file turns ``erased`` and is not read again until
the owner asks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memoryd.kb.sync.model import FileState, SyncFile

ERASED_REASON = (
    "its document was removed by the owner (forget or kb delete); sync leaves it out until "
    "`memoryd kb sync readmit` asks for it again"
)


@dataclass(frozen=True)
class Seen:
    """A file (or a pruned folder, its path ending in '/') a scan found, with its stat, and the
    rule that leaves it out (None: it is read)."""

    path: str
    size: int = 0
    mtime_ns: int = 0
    skip: str | None = None


@dataclass(frozen=True)
class ScanPlan:
    """The rows to write before any file is read, the files to read, and the rows whose file
    is gone."""

    # New, changed, or still queued: read them (their rows are saved as queued first).
    to_read: tuple[SyncFile, ...]
    # Rows written as they are: skipped files, erased documents, files touched but unchanged.
    marks: tuple[SyncFile, ...]
    # Rows of files no longer there (or now left out by a rule): their documents go, before
    # the marks are written.
    gone: tuple[SyncFile, ...]
    unchanged: int


def plan_scan(
    seen: Sequence[Seen],
    rows: Sequence[SyncFile],
    live_documents: Collection[str],
    source_id: str,
    at: datetime,
) -> ScanPlan:
    """Compare a scan with the stored rows. ``live_documents``: the ids among the rows'
    documents that are still stored."""
    stored = {row.path: row for row in rows}
    to_read: list[SyncFile] = []
    marks: list[SyncFile] = []
    unchanged = 0
    found: set[str] = set()
    for item in seen:
        found.add(item.path)
        row = stored.get(item.path)
        if item.skip is not None:
            # A row that still holds a document is also gone (below): removed, then marked.
            if row is None or row.state is not FileState.SKIPPED or row.reason != item.skip:
                marks.append(SyncFile(source_id, item.path, FileState.SKIPPED, at, item.skip,
                                      size=item.size, mtime_ns=item.mtime_ns))  # fmt: skip
            continue
        if row is None:
            to_read.append(SyncFile(source_id, item.path, FileState.QUEUED, at,
                                    size=item.size, mtime_ns=item.mtime_ns))  # fmt: skip
            continue
        same_stat = row.size == item.size and row.mtime_ns == item.mtime_ns
        vanished = row.document_id is not None and row.document_id not in live_documents
        if row.state is FileState.ERASED:
            unchanged += 1
        elif vanished and row.state is not FileState.QUEUED:
            marks.append(replace(row, state=FileState.ERASED, reason=ERASED_REASON,
                                 document_id=None, updated_at=at))  # fmt: skip
        elif row.state is FileState.QUEUED or not same_stat:
            to_read.append(replace(row, state=FileState.QUEUED, reason=None, size=item.size,
                                   mtime_ns=item.mtime_ns, updated_at=at))  # fmt: skip
        elif row.state is FileState.SKIPPED:
            # The rule that skipped it no longer does (the owner changed the patterns).
            to_read.append(replace(row, state=FileState.QUEUED, reason=None, updated_at=at))
        else:
            unchanged += 1
    skipped_now = {item.path for item in seen if item.skip is not None}
    gone = tuple(
        row
        for row in rows
        if row.path not in found
        or (row.path in skipped_now and row.document_id is not None
            and row.state is not FileState.SKIPPED)
    )  # fmt: skip
    return ScanPlan(tuple(to_read), tuple(marks), gone, unchanged)


def plan_renames(
    read: Mapping[str, str], gone: Sequence[SyncFile], stored: Mapping[str, SyncFile]
) -> dict[str, SyncFile]:
    """Files that are another file renamed: for each new path (no stored row) whose content
    hash (``read``: path → hash) is that of a gone file still holding its document, the gone
    row it continues (each gone row continues at most one path)."""
    by_hash: dict[str, list[SyncFile]] = {}
    for row in gone:
        if row.content_hash and row.document_id and row.state is FileState.CURRENT:
            by_hash.setdefault(row.content_hash, []).append(row)
    renames: dict[str, SyncFile] = {}
    for path, digest in sorted(read.items()):
        candidates = by_hash.get(digest)
        if path not in stored and candidates:
            renames[path] = candidates.pop(0)
    return renames
