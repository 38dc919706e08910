"""Which files found in a folder may be read into the knowledge base: the one rule every folder
walk applies (a one-off ingest and a synced folder alike).

A folder can hold links to anything the server may read: ``token.txt -> ~/.local/share/memoryd/
token`` would hand the API token to whoever reads the knowledge base. So a file is read only
when its real path (every symlink followed) stays inside the folder being ingested, and never
when it lies in memoryd's own home (the token, the store, the settings), whatever path led
there — a folder that *is* the home, or holds it, included — and never when it is one of those
files under another name (a hard link: ``ln ~/.local/share/memoryd/memoryd.toml notes/x.txt``
has no link to follow, only the same inode). The file read is the one judged: it is opened
without following a link and its descriptor checked again, so a file swapped for a link between
the judgement and the read (a race another writer to the folder can win) is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from memoryd.kb.converted import ConversionError, Limits


class FileChangedError(ConversionError):
    """The file is no longer the one judged (swapped for a link, or another name for one of
    memoryd's own files): refused, and not recorded."""


def refuse_reason(
    path: Path, root: Path | None, home: Path | None, *, also: Sequence[Path] = ()
) -> str | None:
    """Why ``path`` must not be ingested, or None when it may be.

    ``root``: the folder the file was found in (None for a file named on its own, which the
    owner chose by name); ``home``: memoryd's home; ``also``: further files never read (the
    store's own files when it lives elsewhere)."""
    try:
        real = Path(os.path.realpath(path))
        if path.is_symlink():
            path.resolve(strict=True)  # a link loop raises here; realpath alone does not
    except RuntimeError as error:
        return f"cannot follow its links: {error}"
    except FileNotFoundError:
        pass  # a link to nothing: judged by where it points, it is read as nothing
    except (OSError, ValueError) as error:
        return f"cannot resolve the path: {error}"
    if home is not None and _inside(real, _real(home)):
        return (
            f"it is inside memoryd's own home ({home}), which holds the API token, the store "
            "and the settings; memoryd never ingests its own files"
        )
    for protected in also:
        base = _real(protected)
        if real in {base, Path(f"{base}-wal"), Path(f"{base}-shm"), Path(f"{base}-journal")}:
            return "it is memoryd's own store; memoryd never ingests its own files"
    same = _hard_link_to(real, home, also)
    if same is not None:
        return (
            f"it is a hard link to {same}, one of memoryd's own files (the API token, the "
            "store or the settings); memoryd never ingests its own files"
        )
    if root is not None and not _inside(real, _real(root)):
        return (
            f"it is a symbolic link to {real}, outside the folder {root}; memoryd follows no "
            "link out of an ingested folder (ingest that file by its own path if you mean it)"
        )
    return None


def _hard_link_to(path: Path, home: Path | None, also: Sequence[Path]) -> Path | None:
    """The file of memoryd's (in its home, or the store's files) that ``path`` is another name
    for, or None. Only a file with more than one name is compared, so the usual file costs
    one ``stat``."""
    try:
        found = path.stat()
    except OSError:
        return None
    if found.st_nlink < 2 or not stat.S_ISREG(found.st_mode):
        return None
    return own_file(found, home, also)


def own_file(found: os.stat_result, home: Path | None, also: Sequence[Path]) -> Path | None:
    """The file of memoryd's (in its home, or the store's files) that ``found`` is, or None."""
    candidates = [Path(f"{base}{end}") for base in also for end in ("", "-wal", "-shm", "-journal")]
    if home is not None:
        for folder, _, names in os.walk(home):
            candidates += [Path(folder) / name for name in names]
    for candidate in candidates:
        try:
            if os.path.samestat(found, candidate.stat()):
                return candidate
        except OSError:
            continue
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def read_file(path: Path, limits: Limits, home: Path | None, *, also: Sequence[Path] = ()) -> bytes:
    """The bytes of the file ``refuse_reason`` judged at ``path`` (its real path), or a clear
    per-file error (missing, a folder, too big, unreadable, a name too long to look up, or no
    longer the file judged)."""
    if "\x00" in str(path):
        raise ConversionError("the path holds a NUL byte; no file can have that name")
    limit = limits.max_bytes
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConversionError(f"no such file: {path}") from None
    except OSError as error:
        if error.errno == errno.ELOOP or os.path.islink(path):
            raise FileChangedError(f"{path} became a link after it was checked") from None
        raise ConversionError(f"cannot read the file: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as handle:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            raise ConversionError(f"{path} is not a regular file")
        if own_file(found, home, also) is not None:
            raise FileChangedError(
                f"{path} is one of memoryd's own files (the API token, the store or the "
                "settings); memoryd never ingests its own files"
            )
        if found.st_size > limit:
            raise ConversionError(
                f"the file is {found.st_size / 1e6:.1f} MB, over the {limit / 1e6:g} MB limit; "
                "split it or raise the limit"
            )
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise ConversionError(f"cannot read the file: {error.strerror}") from None
    if len(data) > limit:
        raise ConversionError(f"the file grew past the {limit / 1e6:g} MB limit while it was read")
    return data
