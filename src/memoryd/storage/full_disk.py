"""A full disk told apart from other failures: SQLite's "database or disk is full"
(SQLITE_FULL) and the system's ENOSPC or EDQUOT become one :class:`StoreFullError` naming the
disk and its free space, wherever memoryd writes (the store, backups, exports, uploads)."""

from __future__ import annotations

import errno
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd.errors import StoreFullError

# SQLite's primary result code for "database or disk is full" (extended codes keep it in the
# low byte).
SQLITE_FULL = 13
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` says the disk (or the user's quota on it) is full."""
    if isinstance(error, OSError) and error.errno in _NO_SPACE:
        return True
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == SQLITE_FULL:
        return True
    return "database or disk is full" in str(error)


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the disk holding ``path`` (it or its
    nearest existing parent), or None when that cannot be read."""
    for place in (path, *path.parents):
        try:
            return shutil.disk_usage(place).free
        except OSError:
            continue
    return None


# Why 1 MiB: a write transaction starts only with this much free on the store's disk: room for
# a few memories' pages in the write-ahead log and for its index (-shm) to grow. A write that
# would start below it is refused whole and at once, instead of landing or not depending on
# which log pages SQLite happens to hold; a larger one can still run out part-way, and is
# then rolled back.
WRITE_RESERVE_BYTES = 1 << 20


def require_room(path: Path) -> None:
    """Refuse a write to the store at ``path`` while its disk has less than
    :data:`WRITE_RESERVE_BYTES` free."""
    free = free_bytes(path)
    if free is not None and free < WRITE_RESERVE_BYTES:
        raise StoreFullError(path, free)


def disk_full_error(path: Path) -> StoreFullError:
    """The error for a write to ``path`` that found its disk full, with the free space now."""
    return StoreFullError(path, free_bytes(path))


@contextmanager
def full_disk_reported(path: Path) -> Iterator[None]:
    """Inside the block, a write that finds ``path``'s disk full raises :class:`StoreFullError`
    (the caller undoes what it wrote); every other error passes through unchanged."""
    try:
        yield
    except Exception as error:
        if isinstance(error, StoreFullError) or not is_disk_full(error):
            raise
        raise disk_full_error(path) from None


class FullDiskNotice:
    """For background writes (retrieval stamps, the worker's rounds) that fail while the disk
    is full: one error line when the first fails, without a stack trace, and one warning when
    writes succeed again, instead of a log line per failure. Used by one thread at a time."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self._log = log
        self._what = what
        self.failures = 0

    def failed(self, error: StoreFullError) -> None:
        """Count a write lost to the full disk; only the first of a spell is logged."""
        self.failures += 1
        if self.failures == 1:  # an error: the owner must act, and serve shows errors
            self._log.error(
                "%s failed: %s (further failures are not logged until a write succeeds)",
                self._what,
                error,
            )

    def succeeded(self) -> None:
        """A write went through: say so once after a spell of failures."""
        if self.failures:
            self._log.warning(
                "%s succeeds again after %d failed for lack of disk space",
                self._what,
                self.failures,
            )
            self.failures = 0
