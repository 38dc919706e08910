"""The embedded SQLite backend: one file, WAL, FTS5 for BM25, sqlite-vec for vectors.

The store's parts live one module per store: sqlite_connection (the connection and how SQLite
holds values), sqlite_memories (memories, entities), sqlite_search (recall's legs),
sqlite_jobs and sqlite_kb; the rows they share with PostgreSQL live in the *_rows modules.
"""

from __future__ import annotations

import struct
import sys
import time
from pathlib import Path
from typing import Any

import sqlean as sqlite3

from memoryd.errors import StoreDamagedError, StoreUnavailableError
from memoryd.storage.audit_rows import AuditRows
from memoryd.storage.chat_import_rows import ImportedChatRows
from memoryd.storage.eval_rows import EvalRows
from memoryd.storage.file_modes import create_private_file, tighten
from memoryd.storage.meta_rows import RECORD_SIGNATURE, MetaAndLeases
from memoryd.storage.protocols import EmbeddingSignature, FileCopy
from memoryd.storage.row_keys import READ_ONLY_KEYS, RowKeys
from memoryd.storage.sqlite_connection import SQLITE_ROWS, SqliteConnection
from memoryd.storage.sqlite_jobs import SqliteJobQueue
from memoryd.storage.sqlite_kb import SqliteKnowledgeStore
from memoryd.storage.sqlite_memories import SqliteEntityIndex, SqliteMemoryRecords
from memoryd.storage.sqlite_next import SqliteNextVectors
from memoryd.storage.sqlite_schema import MIGRATIONS, chunk_vector_sql, vector_index_sql
from memoryd.storage.sqlite_search import SqliteTextSearch, SqliteVectorSearch
from memoryd.storage.sync_rows import SyncRows

__all__ = ["SqliteStore", "diagnose", "empty_file", "refuse_damaged_file"]


class SqliteStore(MetaAndLeases[SqliteConnection]):
    """A memoryd store in one SQLite file. ``keys`` are the domain's keys for subjects and
    entity names (``memory/keys.py``); without them the store reads, counts and copies, and
    refuses a write that needs a key."""

    def __init__(self, path: Path, *, create: bool, keys: RowKeys = READ_ONLY_KEYS) -> None:
        self.path = path
        if str(path) != ":memory:" and not create and (not path.exists() or empty_file(path)):
            empty = " (the file is empty)" if path.exists() else ""
            raise StoreUnavailableError(
                f"no memoryd store at {path}{empty}; run `memoryd init` first, or point --db / "
                "MEMORYD_DB at an existing store"
            )
        if holds_sqlite(path):
            # Before any connection: SQLite would fold a cut-short log into the file on close.
            raise_if_damaged(path, pages=path.stat().st_size <= QUICK_CHECK_BYTES)
        on_disk = str(path) != ":memory:" and path.parent.is_dir() and not path.is_dir()
        if on_disk:
            # Owner-only from the first byte; SQLite gives -wal and -shm the file's mode.
            create_private_file(path)
        self._db = SqliteConnection(path)
        self._dialect = SQLITE_ROWS
        self._vectors_ready: bool | None = None
        self._migrate()
        if on_disk:  # a memoryd store: another program's file is never touched
            tighten(path, None)
        self.entities = SqliteEntityIndex(self._db, keys)
        self.memories = SqliteMemoryRecords(self._db, self, self.entities, keys)
        self.audit = AuditRows(self._db, SQLITE_ROWS)
        self.vectors = SqliteVectorSearch(self._db, self)
        self.text = SqliteTextSearch(self._db)
        self.jobs = SqliteJobQueue(self._db)
        self.imported_chats = ImportedChatRows(self._db, SQLITE_ROWS)
        self.kb = SqliteKnowledgeStore(self._db, self)
        self.next_vectors = SqliteNextVectors(self._db, self.vectors.forget_bit_copy)
        self.evals = EvalRows(self._db, SQLITE_ROWS)
        self.sync = SyncRows(self._db, SQLITE_ROWS)

    def transaction(self) -> Any:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception."""
        return self._db.transaction()

    def snapshot(self) -> Any:
        """One read transaction for this thread: its reads see one committed state while
        other threads and processes keep writing."""
        return self._db.snapshot()

    def copy_to_file(self, target: Path) -> FileCopy:
        """A consistent online copy of the whole file (SQLite's backup API, in one step),
        opened and checked whole before its rows are counted."""
        create_private_file(target)
        destination = sqlite3.connect(str(target))
        source = sqlite3.connect(str(self.path))
        try:
            source.backup(destination)
        finally:
            source.close()
            destination.close()
        copy = SqliteStore(target, create=False)
        try:
            problems = copy.integrity_errors()
            if problems:
                raise StoreUnavailableError(f"the backup copy is damaged: {problems[0]}")
            return FileCopy(copy.memories.count(), len(copy.kb.documents()))
        finally:
            copy.close()

    def initialize_embeddings(self, signature: EmbeddingSignature) -> None:
        """Record the signature and create the vec0 table, atomically."""
        with self.transaction():
            self._db.execute(RECORD_SIGNATURE, (signature.model, str(signature.dimension)))
            self._db.execute(vector_index_sql(signature.dimension))
            self._db.execute(chunk_vector_sql(signature.dimension))
        self._vectors_ready = True

    def has_vectors(self) -> bool:
        """Whether the vector table exists yet."""
        if self._vectors_ready is None:
            row = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'memory_bits'"
            ).fetchone()
            self._vectors_ready = row is not None
        return self._vectors_ready

    def erase_traces(self, *, documents: bool = False) -> None:
        """After a purge: fold the write-ahead log (which still holds old page images) into
        the main file, where secure_delete has zeroed them, and truncate it (the same for
        removed documents: ``documents`` changes nothing here)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_errors(self) -> list[str]:
        """SQLite's own integrity check plus the FTS index's, as messages (empty when sound)."""
        try:
            problems = [
                str(row[0])
                for row in self._db.execute("PRAGMA integrity_check").fetchall()
                if row[0] != "ok"
            ]
        except sqlite3.DatabaseError as error:
            # Damage where the check itself reads (which pages depends on the file's layout).
            return [f"the file cannot be checked: {error}"]
        for table in ("memory_fts", "chunk_fts"):
            try:
                self._db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as error:
                problems.append(f"full-text index {table}: {error}")
        return problems

    def close(self) -> None:
        """Close the writer and the readers."""
        self._db.close()

    def _migrate(self) -> None:
        raw = self._db.raw
        try:
            tables = {
                row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as error:
            damage = diagnose(self.path, error) if holds_sqlite(self.path) else None
            self._db.close()
            if damage is not None:
                raise damage from None
            raise StoreUnavailableError(
                f"cannot open store {self.path}: {error}; it is not a memoryd store"
            ) from None
        if tables and "schema_migrations" not in tables:
            raise StoreUnavailableError(
                f"{self.path} is an SQLite database but not a memoryd store; "
                "choose another path with --db or MEMORYD_DB"
            )
        # Only now that the file is known to be ours (or new) may its settings change.
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = ON")
        # Purge must leave no trace of erased text in freed pages.
        raw.execute("PRAGMA secure_delete = ON")
        with self._db.lock:
            raw.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            applied = {row[0] for row in raw.execute("SELECT name FROM schema_migrations")}
            for name, sql in MIGRATIONS:
                if name in applied:
                    continue
                raw.execute("BEGIN IMMEDIATE")
                try:
                    for statement in _statements(sql):
                        raw.execute(statement)
                    raw.execute("INSERT INTO schema_migrations(name) VALUES (?)", (name,))
                except BaseException:
                    raw.execute("ROLLBACK")
                    raise
                raw.execute("COMMIT")
            # Stores made before the knowledge base existed get its vector table now.
            dimension = raw.execute(
                "SELECT value FROM meta WHERE key = 'embedding_dimension'"
            ).fetchone()
            if dimension is not None:
                raw.execute(chunk_vector_sql(int(dimension[0])))


# A damaged file, checked before memoryd writes a byte to it.
#
# Is an SQLite store file damaged? Checked before memoryd writes a byte to it.
#
# Two faults are looked for when a store is opened: a write-ahead log cut short (its size is not
# a whole number of frames, so committed transactions at its end are gone; SQLite itself would
# silently drop them and fold the rest into the file on close), and damaged pages
# (``PRAGMA quick_check``, on a read-only connection, so nothing — not even a checkpoint on
# close — touches the file). The page check reads the whole file, so it runs at open only for
# files up to :data:`QUICK_CHECK_BYTES`; bigger stores are checked by ``serve`` once at start
# and, for any command, when SQLite reports damage while it runs (:func:`diagnose`).

# quick_check reads every page: ~4.5 ms per MiB on a busy 2-core machine (a 10,000-memory
# store is 30 MiB: 134 ms), so at open it runs only on small stores (up to ~600 memories).
QUICK_CHECK_BYTES = 2 * 1024 * 1024
_WAL_MAGIC = (0x377F0682, 0x377F0683)
_WAL_HEADER = 32
_FRAME_HEADER = 24
# A wal-index header (WalIndexHdr) is 48 bytes, kept twice at the start of the -shm file.
_INDEX_HEADER = 48
# SQLite appends a frame as two writes (header, then page): a size seen between them is not
# damage. A cut-short log keeps its odd size; a live one moves on within milliseconds.
_WAL_SETTLE_SECONDS = (0.05, 0.1, 0.2)


def wal_damage(path: Path) -> str | None:
    """What is wrong with the store's write-ahead log, or None when it is whole (or absent)."""
    wal = Path(f"{path}-wal")
    for pause in (0.0, *_WAL_SETTLE_SECONDS):
        time.sleep(pause)
        problem = _wal_problem(wal)
        if problem is None:
            return None
    return problem


def _wal_problem(wal: Path) -> str | None:
    try:
        with wal.open("rb") as handle:
            header = handle.read(_WAL_HEADER)
            size = handle.seek(0, 2)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"its write-ahead log {wal} cannot be read ({error.strerror})"
    if size == 0:
        return None
    if size < _WAL_HEADER:
        return f"its write-ahead log {wal} is truncated ({size} bytes, shorter than its header)"
    magic, _version, page_size = struct.unpack(">III", header[:12])
    if magic not in _WAL_MAGIC:
        return f"its write-ahead log {wal} is not an SQLite write-ahead log"
    frame = _FRAME_HEADER + page_size
    if (size - _WAL_HEADER) % frame:
        committed = _committed_frames(wal, header)
        if committed is not None and committed <= (size - _WAL_HEADER) // frame:
            # A process killed while appending (between a frame's header and its page, or in
            # the page's write) leaves a torn frame past the committed end, which SQLite
            # ignores: the wal-index says every committed frame is whole.
            return None
        return (
            f"its write-ahead log {wal} is truncated ({size} bytes is not a whole number of "
            f"{frame}-byte frames; the last transactions in it are cut off)"
        )
    return None


def _committed_frames(wal: Path, wal_header: bytes) -> int | None:
    """How many frames of ``wal`` are committed, as its wal-index (``-shm``) records it: None
    when there is no index, or its header is not whole, initialised and about this log."""
    try:
        with Path(f"{str(wal)[: -len('-wal')]}-shm").open("rb") as handle:
            index = handle.read(2 * _INDEX_HEADER)
    except OSError:
        return None
    first, second = index[:_INDEX_HEADER], index[_INDEX_HEADER:]
    if len(index) < 2 * _INDEX_HEADER or first != second or first[12] != 1:
        return None
    # The index keeps the log's salts as they are in its header (a byte copy) and its own
    # numbers in the machine's byte order.
    if first[32:40] != wal_header[16:24]:
        return None
    return int.from_bytes(first[16:20], sys.byteorder)


def damage_found(path: Path) -> list[str]:
    """``PRAGMA quick_check``'s findings for the file (empty when sound), read-only."""
    try:
        reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.DatabaseError as error:
        return [f"it cannot be read ({error})"]
    try:
        rows = reader.execute("PRAGMA quick_check(20)").fetchall()
        return [f"quick_check: {row[0]}" for row in rows if row[0] != "ok"]
    except sqlite3.DatabaseError as error:
        return [f"quick_check: {error}"]
    finally:
        reader.close()


def raise_if_damaged(path: Path, *, pages: bool) -> None:
    """Refuse a damaged store: its write-ahead log always, its pages when ``pages``."""
    problem = wal_damage(path)
    if problem is not None:
        raise StoreDamagedError(path, problem)
    if pages:
        findings = damage_found(path)
        if findings:
            raise StoreDamagedError(path, "; ".join(findings[:3]))


def empty_file(path: Path) -> bool:
    """A file of no bytes with no write-ahead log beside it: no store yet (a command other
    than ``init`` must not write one into it)."""
    try:
        wal = path.with_name(path.name + "-wal")
        return (
            path.is_file()
            and path.stat().st_size == 0
            and not (wal.exists() and wal.stat().st_size > 0)
        )
    except OSError:
        return False


def holds_sqlite(path: Path) -> bool:
    """Whether ``path`` is an existing file that starts as an SQLite database does."""
    if str(path) == ":memory:":
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def refuse_damaged_file(path: Path) -> None:
    """For a long-running process (``serve``, ``mcp``) about to open the store: check the
    whole file once, whatever its size, before any connection touches it."""
    if holds_sqlite(path):
        raise_if_damaged(path, pages=True)


def diagnose(path: Path, error: BaseException) -> StoreDamagedError | None:
    """After SQLite reported ``error`` while memoryd ran: the damage it points at, or None
    when the file checks out (the error was something else)."""
    if "malformed" not in str(error) and "not a database" not in str(error):
        return None
    problem = wal_damage(path)
    if problem is not None:
        return StoreDamagedError(path, problem)
    findings = damage_found(path)
    if findings:
        return StoreDamagedError(path, "; ".join(findings[:3]))
    return StoreDamagedError(path, f"SQLite reported: {error}")


def _statements(sql: str) -> list[str]:
    """Split a migration script on statement boundaries (sqlite3.complete_statement)."""
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
