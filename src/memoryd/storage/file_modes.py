"""The owner's files are the owner's alone: memoryd's home is 0700 and every store, write-ahead
log, shared-memory index, backup, export and settings file is 0600, whatever the umask.

Files are created with their mode from the first byte (``os.open`` with an explicit mode, then
``fchmod`` so the umask cannot widen or narrow it); SQLite gives its ``-wal`` and ``-shm`` files
the mode of the database file. An existing store made looser (an older memoryd, a copy, a
``chmod``) is tightened when it is opened, and :func:`loose_files` lets ``doctor`` report it.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path

log = logging.getLogger("memoryd")

HOME_MODE = 0o700
FILE_MODE = 0o600
STORE_SUFFIXES = ("", "-wal", "-shm")


def private_home(home: Path) -> None:
    """Create memoryd's home (and its parents) if missing; make the home itself 0700."""
    home.mkdir(parents=True, exist_ok=True, mode=HOME_MODE)
    if stat.S_IMODE(home.stat().st_mode) != HOME_MODE:
        os.chmod(home, HOME_MODE)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (an existing file is left as is)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, FILE_MODE)
    finally:
        os.close(descriptor)


def open_private(path: Path, mode: str = "w") -> int:
    """A descriptor for writing ``path`` (created or truncated) whose mode is 0600 before any
    byte is written; ``mode`` "a" appends instead of truncating."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    descriptor = os.open(path, flags, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)
    return descriptor


def store_files(path: Path) -> list[Path]:
    """The SQLite store's files that exist: the database, its log and its index."""
    return [
        Path(f"{path}{suffix}") for suffix in STORE_SUFFIXES if Path(f"{path}{suffix}").exists()
    ]


def loose_files(store: Path | None, home: Path | None) -> list[tuple[Path, int]]:
    """Each of memoryd's files (the home, the store's files, the settings and token files)
    that other accounts could read or write, with its current mode."""
    found: list[tuple[Path, int]] = []
    if home is not None and home.is_dir():
        mode = stat.S_IMODE(home.stat().st_mode)
        if mode & 0o077:
            found.append((home, mode))
        for name in ("token", "memoryd.toml"):
            candidate = home / name
            if candidate.is_file():
                found.extend(_loose(candidate))
    if store is not None:
        for file in store_files(store):
            found.extend(_loose(file))
    return found


def _loose(path: Path) -> list[tuple[Path, int]]:
    mode = stat.S_IMODE(path.stat().st_mode)
    return [(path, mode)] if mode & 0o077 else []


def tighten(store: Path | None, home: Path | None) -> list[tuple[Path, int]]:
    """Make every loose file 0600 (the home 0700); say once which ones were loose. Returns
    them with the mode they had. A file owned by another account is left alone and named."""
    loose = loose_files(store, home)
    changed: list[tuple[Path, int]] = []
    for path, mode in loose:
        try:
            os.chmod(path, HOME_MODE if path.is_dir() else FILE_MODE)
        except OSError as error:
            log.warning("memoryd: %s is mode %o and could not be tightened: %s", path, mode, error)
            continue
        changed.append((path, mode))
    if changed:
        named = ", ".join(f"{path} (was {mode:o})" for path, mode in changed)
        # Said on stderr, not through logging: the owner must see it whatever logs are set.
        sys.stderr.write(
            f"memoryd: other accounts could read {named}; made owner-only (0600, home 0700)\n"
        )
    return changed
