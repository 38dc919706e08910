"""Is an SQLite store file damaged? Checked before memoryd writes a byte to it.

Two faults are looked for when a store is opened: a write-ahead log cut short (its size is not
a whole number of frames, so committed transactions at its end are gone; SQLite itself would
silently drop them and fold the rest into the file on close), and damaged pages
(``PRAGMA quick_check``, on a read-only connection, so nothing — not even a checkpoint on
close — touches the file). The page check reads the whole file, so it runs at open only for
files up to :data:`QUICK_CHECK_BYTES`; bigger stores are checked by ``serve`` once at start
and, for any command, when SQLite reports damage while it runs (:func:`diagnose`).
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import sqlean as sqlite3

from ..errors import StoreUnavailableError

__all__ = [
    "QUICK_CHECK_BYTES",
    "StoreDamagedError",
    "damage_found",
    "diagnose",
    "holds_sqlite",
    "raise_if_damaged",
    "refuse_damaged_file",
    "wal_damage",
]

# quick_check reads every page: ~4.5 ms per MiB on a busy 2-core machine (a 10,000-memory
# store is 30 MiB: 134 ms), so at open it runs only on small stores (up to ~600 memories).
QUICK_CHECK_BYTES = 2 * 1024 * 1024
_WAL_MAGIC = (0x377F0682, 0x377F0683)
_WAL_HEADER = 32
_FRAME_HEADER = 24
# SQLite appends a frame as two writes (header, then page): a size seen between them is not
# damage. A cut-short log keeps its odd size; a live one moves on within milliseconds.
_WAL_SETTLE_SECONDS = (0.05, 0.1, 0.2)


class StoreDamagedError(StoreUnavailableError):
    """The store file is damaged; memoryd refuses to use it and leaves it as it is."""

    def __init__(self, path: Path, finding: str) -> None:
        super().__init__(
            f"store {path} is damaged: {finding}. memoryd will not open it and has not "
            "changed it; restore the last good backup with `memoryd restore BACKUP --force` "
            "(stop memoryd first; the damaged file is kept beside it as *.damaged-…), or "
            "copy the file away to inspect it"
        )
        self.path = path
        self.finding = finding


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
        return (
            f"its write-ahead log {wal} is truncated ({size} bytes is not a whole number of "
            f"{frame}-byte frames; the last transactions in it are cut off)"
        )
    return None


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
