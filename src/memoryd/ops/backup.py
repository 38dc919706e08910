"""``memoryd backup`` and ``memoryd restore``: consistent online copies of a store.

An SQLite store is copied with SQLite's backup API in one step, from its own connection, so
the copy is one consistent state even while memoryd keeps writing. A PostgreSQL store is
exported (with vectors) inside one REPEATABLE READ snapshot. Restoring checks the backup
before anything is replaced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from memoryd.config.settings import Settings
from memoryd.errors import InvalidInputError, StoreDamagedError, StoreUnavailableError
from memoryd.ops.portability import Summary, export_store
from memoryd.storage.file_modes import STORE_SUFFIXES, open_private, private_home
from memoryd.storage.full_disk import full_disk_reported
from memoryd.storage.protocols import Store
from memoryd.storage.sqlite import SqliteStore, empty_file


class ExportImporter(Protocol):
    """Imports an export's lines into a store (``StoreAdmin`` is one)."""

    def import_from(self, lines: Iterable[str]) -> Summary: ...


class RestoreTarget(Protocol):
    """The opened store an export is restored into (``MemoryService`` is one; it reaches this
    module through ``StoreAdmin``, so this module names only what it uses)."""

    @property
    def admin(self) -> ExportImporter: ...

    def close(self) -> None: ...


SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class BackupResult:
    """Where a backup went (or came from) and what it holds."""

    path: Path
    kind: str  # "sqlite" or "export"
    memories: int
    documents: int
    sha256: str | None = None
    # A damaged store that a restore replaced, moved here rather than deleted.
    kept_damaged: Path | None = None

    def describe(self) -> str:
        """One line for the CLI."""
        checksum = f", sha256 {self.sha256}" if self.sha256 else ""
        kept = f"; the damaged store is kept as {self.kept_damaged}" if self.kept_damaged else ""
        return f"{self.memories} memories, {self.documents} documents{checksum}{kept}"

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "path": str(self.path),
            "kind": self.kind,
            "memories": self.memories,
            "documents": self.documents,
            "sha256": self.sha256,
            "kept_damaged": str(self.kept_damaged) if self.kept_damaged else None,
        }


def make_backup(store: Store, target: Path) -> BackupResult:
    """Write a consistent copy of ``store`` to ``target`` (never over an existing file)."""
    if target.exists():
        raise InvalidInputError(f"{target} exists; choose a new file name for the backup")
    if not target.parent.is_dir():
        raise InvalidInputError(f"directory {target.parent} does not exist")
    partial = target.with_name(target.name + ".partial")
    try:
        with full_disk_reported(target):
            copied = store.copy_to_file(partial)
            if copied is not None:
                result = BackupResult(target, "sqlite", copied.memories, copied.documents)
            else:
                with os.fdopen(open_private(partial), "w", encoding="utf-8") as handle:
                    summary = export_store(store, handle, with_vectors=True)
                result = BackupResult(
                    target, "export", summary.counts.get("memory", 0),
                    summary.counts.get("document", 0), summary.sha256,
                )  # fmt: skip
            os.replace(partial, target)
        return result
    finally:
        partial.unlink(missing_ok=True)


def restore_backup(
    backup: Path,
    settings: Settings,
    *,
    force: bool,
    open_service: Callable[[Settings], RestoreTarget],
) -> BackupResult:
    """Put a backup back: an SQLite copy replaces the store file; an export is imported into
    the store ``open_service`` opens (creating it if needed)."""
    with backup.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        return _restore_sqlite(backup, settings, force=force)
    with store_removed_if_failed(settings):
        service = open_service(settings)
        try:
            with backup.open("r", encoding="utf-8") as handle:
                summary: Summary = service.admin.import_from(handle)
        finally:
            service.close()
    return BackupResult(
        backup, "export", summary.counts.get("memory", 0), summary.counts.get("document", 0),
        summary.sha256,
    )  # fmt: skip


@contextmanager
def store_removed_if_failed(settings: Settings) -> Iterator[None]:
    """For a command that creates the SQLite store it fills (an import, a restore of an
    export): when it fails, the files it made are removed, so a failed command leaves no
    empty store behind. A store that was there before is never touched."""
    made = not settings.is_postgres and not Path(settings.db).exists()
    try:
        yield
    except BaseException:
        if made:
            for suffix in STORE_SUFFIXES:
                Path(f"{settings.db}{suffix}").unlink(missing_ok=True)
        raise


def _restore_sqlite(backup: Path, settings: Settings, *, force: bool) -> BackupResult:
    if settings.is_postgres:
        raise InvalidInputError(
            "an SQLite backup restores into an SQLite store; to fill a PostgreSQL store use "
            "`memoryd migrate-store BACKUP URL`"
        )
    copy = SqliteStore(backup, create=False)
    try:
        problems = copy.integrity_errors()
        if problems:
            raise StoreUnavailableError(f"the backup is damaged: {problems[0]}; nothing changed")
        if copy.embedding_signature() is None:
            raise StoreUnavailableError("the backup has no embedding signature; not a store")
        result = BackupResult(backup, "sqlite", copy.memories.count(), len(copy.kb.documents()))
    finally:
        copy.close()
    target = Path(settings.db)
    kept: Path | None = None
    if target.exists() and not empty_file(target):
        try:
            current = SqliteStore(target, create=False)
        except StoreDamagedError as damage:
            if not force:
                raise InvalidInputError(
                    f"{target} is damaged ({damage.finding}); pass --force to replace it with "
                    "the backup (stop memoryd first; the damaged file is kept beside it)"
                ) from None
            kept = _keep_damaged(target)
        else:
            try:
                holds_data = current.memories.count() > 0 or bool(current.kb.documents(limit=1))
            finally:
                current.close()
            if holds_data and not force:
                raise InvalidInputError(
                    f"{target} holds memories; pass --force to replace it with the backup "
                    "(stop memoryd first)"
                )
    if not target.parent.exists():
        private_home(target.parent)  # a new home (or store folder) is the owner's alone
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as staging:
        staging_path = Path(staging.name)
    try:
        with full_disk_reported(target):
            shutil.copyfile(backup, staging_path)
        for suffix in ("-wal", "-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)
        os.replace(staging_path, target)
    finally:
        staging_path.unlink(missing_ok=True)
    return replace(result, kept_damaged=kept) if kept else result


def _keep_damaged(target: Path) -> Path:
    """Move a damaged store and its write-ahead log aside (never delete them): what was in
    them may still be read out by hand."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = target.with_name(f"{target.name}.damaged-{stamp}")
    for suffix in ("", "-wal"):
        source = Path(f"{target}{suffix}")
        if source.exists():
            os.replace(source, Path(f"{aside}{suffix}"))
    return aside
