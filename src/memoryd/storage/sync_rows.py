"""Synced sources and their files' states: the same SQL on both backends (they differ only in
placeholders and in how a time is stored)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryd.kb.sync.model import FileState, SourceKind, SyncFile, SyncSource
from memoryd.storage.row_dialect import RowDialect, SqlConnection

_SOURCE_COLUMNS = (
    "id, location, kind, collection, ignore_patterns, include_hidden, max_bytes, every_seconds, "
    "created_at, last_looked_at, last_error"
)
_FILE_COLUMNS = (
    "source_id, path, state, reason, document_id, content_hash, size, mtime_ns, updated_at"
)
_SAVE_SOURCE = (
    f"INSERT INTO sync_sources ({_SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET collection = excluded.collection, "
    "ignore_patterns = excluded.ignore_patterns, include_hidden = excluded.include_hidden, "
    "max_bytes = excluded.max_bytes, every_seconds = excluded.every_seconds, "
    "last_looked_at = excluded.last_looked_at, last_error = excluded.last_error"
)
_SAVE_FILE = (
    f"INSERT INTO sync_files ({_FILE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (source_id, path) DO UPDATE SET state = excluded.state, "
    "reason = excluded.reason, document_id = excluded.document_id, "
    "content_hash = excluded.content_hash, size = excluded.size, mtime_ns = excluded.mtime_ns, "
    "updated_at = excluded.updated_at"
)


class SyncRows:
    """Synced sources and their files, read and written alike by both backends; writes go
    inside the caller's transaction."""

    def __init__(self, connection: SqlConnection, dialect: RowDialect) -> None:
        self._db = connection
        self._dialect = dialect

    def save_source(self, source: SyncSource) -> None:
        """Insert a source, or update everything but its location, kind and creation."""
        stored = self._dialect.stored_time
        self._db.execute(
            self._dialect.sql(_SAVE_SOURCE),
            (
                source.id, source.location, source.kind.value, source.collection,
                json.dumps(list(source.ignore)), int(source.include_hidden), source.max_bytes,
                source.every_seconds, stored(source.created_at), stored(source.last_looked_at),
                source.last_error,
            ),
        )  # fmt: skip

    def sources(self) -> list[SyncSource]:
        """Every source, oldest first."""
        sql = f"SELECT {_SOURCE_COLUMNS} FROM sync_sources ORDER BY id"
        return [self._source(row) for row in self._db.execute(sql).fetchall()]

    def get_source(self, source_id: str) -> SyncSource | None:
        """One source by id."""
        sql = self._dialect.sql(f"SELECT {_SOURCE_COLUMNS} FROM sync_sources WHERE id = ?")
        row = self._db.execute(sql, (source_id,)).fetchone()
        return None if row is None else self._source(row)

    def source_by_location(self, location: str) -> SyncSource | None:
        """The source registered for this folder, file or URL."""
        sql = self._dialect.sql(f"SELECT {_SOURCE_COLUMNS} FROM sync_sources WHERE location = ?")
        row = self._db.execute(sql, (location,)).fetchone()
        return None if row is None else self._source(row)

    def delete_source(self, source_id: str) -> None:
        """The source and its files' rows (the documents are the caller's to keep or not)."""
        for table, column in (("sync_files", "source_id"), ("sync_sources", "id")):
            self._db.execute(self._dialect.sql(f"DELETE FROM {table} WHERE {column} = ?"),
                             (source_id,))  # fmt: skip

    def files(self, source_id: str) -> list[SyncFile]:
        """A source's files, by path."""
        sql = self._dialect.sql(
            f"SELECT {_FILE_COLUMNS} FROM sync_files WHERE source_id = ? ORDER BY path"
        )
        return [self._file(row) for row in self._db.execute(sql, (source_id,)).fetchall()]

    def get_file(self, source_id: str, path: str) -> SyncFile | None:
        """One file's row."""
        sql = self._dialect.sql(
            f"SELECT {_FILE_COLUMNS} FROM sync_files WHERE source_id = ? AND path = ?"
        )
        row = self._db.execute(sql, (source_id, path)).fetchone()
        return None if row is None else self._file(row)

    def save_file(self, file: SyncFile) -> None:
        """Insert or update one file's row."""
        self._db.execute(
            self._dialect.sql(_SAVE_FILE),
            (
                file.source_id, file.path, file.state.value, file.reason, file.document_id,
                file.content_hash, file.size, file.mtime_ns,
                self._dialect.stored_time(file.updated_at),
            ),
        )  # fmt: skip

    def delete_file(self, source_id: str, path: str) -> None:
        """One file's row."""
        self._db.execute(
            self._dialect.sql("DELETE FROM sync_files WHERE source_id = ? AND path = ?"),
            (source_id, path),
        )

    def files_of_document(self, document_id: str) -> list[SyncFile]:
        """The file rows that point at a document."""
        sql = self._dialect.sql(f"SELECT {_FILE_COLUMNS} FROM sync_files WHERE document_id = ?")
        return [self._file(row) for row in self._db.execute(sql, (document_id,)).fetchall()]

    def state_counts(self) -> dict[str, dict[str, int]]:
        """How many files each source has in each state."""
        rows = self._db.execute(
            "SELECT source_id, state, count(*) FROM sync_files GROUP BY source_id, state"
        ).fetchall()
        counts: dict[str, dict[str, int]] = {}
        for source_id, state, count in rows:
            counts.setdefault(str(source_id), {})[str(state)] = int(count)
        return counts

    def _source(self, row: Sequence[Any]) -> SyncSource:
        read = self._dialect.read_time
        return SyncSource(
            id=str(row[0]),
            location=str(row[1]),
            kind=SourceKind(row[2]),
            collection=str(row[3]),
            ignore=tuple(json.loads(row[4] or "[]")),
            include_hidden=bool(row[5]),
            max_bytes=int(row[6]),
            every_seconds=int(row[7]),
            created_at=read(row[8]),
            last_looked_at=read(row[9]) if row[9] is not None else None,
            last_error=row[10],
        )

    def _file(self, row: Sequence[Any]) -> SyncFile:
        return SyncFile(
            source_id=str(row[0]),
            path=str(row[1]),
            state=FileState(row[2]),
            reason=row[3],
            document_id=row[4],
            content_hash=row[5],
            size=int(row[6]),
            mtime_ns=int(row[7]),
            updated_at=self._dialect.read_time(row[8]),
        )
