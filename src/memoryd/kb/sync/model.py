"""Synced sources and the state of each of their files (plain records, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, NotRequired, TypedDict

from memoryd.json_shapes import Default, Described


class SourceKind(StrEnum):
    """What a synced source is."""

    FOLDER = "folder"
    FILE = "file"
    URL = "url"


class FileState(StrEnum):
    """Where one file of a synced source stands. ``queued``: seen, not yet read (new, changed
    or asked again); ``current``: its document holds what the file holds; ``failed``: it could
    not be read (the reason says why); ``skipped``: a rule leaves it out; ``erased``: the owner
    removed its document (forget, kb delete), so sync does not bring it back until asked.
    While this process reads a file its state shows as ``converting`` and while vectors are
    missing as ``embedding n/m``: those are live, never stored."""

    QUEUED = "queued"
    CURRENT = "current"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERASED = "erased"


# Why 300 s: the notifications carry the changes; the rescan is the check (a network share, a
# full event queue, changes made while no server ran), and a stat of 2,000 files every five
# minutes costs nothing measurable.
DEFAULT_RESCAN_SECONDS = 300
# A URL is fetched again once a day unless the owner says otherwise.
DEFAULT_URL_SECONDS = 86_400
MIN_INTERVAL_SECONDS = 10
# Why 10 MB: notes and reports are far smaller; a folder's larger files are mostly media,
# exports and archives the owner did not mean to index (each is listed as skipped, by size).
DEFAULT_MAX_BYTES = 10_000_000


class SyncFileJson(TypedDict):
    # A file of a synced source (``status`` is the state as shown, added by FileStatus).
    path: str
    state: str
    status: NotRequired[
        Annotated[str, Described('the state as shown: "converting", "embedding 3/7", …')]
    ]
    reason: str | None
    document_id: str | None
    size: int
    updated_at: str


class SyncSourceJson(TypedDict):
    # A synced source (with its files' states where the HTTP API lists them).
    id: str
    location: str
    kind: str
    collection: str
    ignore: list[str]
    include_hidden: bool
    max_bytes: int
    every_seconds: int
    created_at: str
    last_looked_at: str | None
    last_error: str | None
    files: NotRequired[Annotated[list[SyncFileJson], Default(factory=list)]]


@dataclass(frozen=True)
class SyncSource:
    """A registered folder, file or URL and how it is synced."""

    id: str
    location: str
    kind: SourceKind
    collection: str
    created_at: datetime
    ignore: tuple[str, ...] = ()
    # Hidden files and folders (".git", ".obsidian") are skipped unless this is set.
    include_hidden: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    every_seconds: int = DEFAULT_RESCAN_SECONDS
    last_looked_at: datetime | None = None
    last_error: str | None = None

    @property
    def looked_label(self) -> str:
        """When a pass last looked at it, to the second, or "not yet"."""
        if self.last_looked_at is None:
            return "not yet"
        return self.last_looked_at.isoformat(timespec="seconds")

    def to_json(self) -> SyncSourceJson:
        """JSON shape for the CLI and API."""
        return {
            "id": self.id,
            "location": self.location,
            "kind": self.kind.value,
            "collection": self.collection,
            "ignore": list(self.ignore),
            "include_hidden": self.include_hidden,
            "max_bytes": self.max_bytes,
            "every_seconds": self.every_seconds,
            "created_at": self.created_at.isoformat(),
            "last_looked_at": self.last_looked_at.isoformat() if self.last_looked_at else None,
            "last_error": self.last_error,
        }


@dataclass(frozen=True)
class SyncFile:
    """One file of a synced source (``path`` relative to a folder; the file's or URL's own
    location for the other kinds), with what was last read from it."""

    source_id: str
    path: str
    state: FileState
    updated_at: datetime
    reason: str | None = None
    document_id: str | None = None
    content_hash: str | None = None
    size: int = 0
    mtime_ns: int = 0

    def to_json(self) -> SyncFileJson:
        """JSON shape for the CLI and API."""
        return {
            "path": self.path,
            "state": self.state.value,
            "reason": self.reason,
            "document_id": self.document_id,
            "size": self.size,
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True)
class FileStatus:
    """A file of a synced source as the owner sees it: its state, live when this process is
    reading it ("converting") or its vectors are missing ("embedding n/m")."""

    file: SyncFile
    label: str

    def to_json(self) -> SyncFileJson:
        """JSON shape for the CLI and API."""
        return {**self.file.to_json(), "status": self.label}


def counts_label(files: Sequence[FileStatus]) -> str:
    """ "2 current, 1 embedding, 3 skipped": how many files are in each shown state."""
    counts: dict[str, int] = {}
    for status in files:
        state = status.label.split(" ")[0]
        counts[state] = counts.get(state, 0) + 1
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no files"
