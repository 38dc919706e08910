"""A synced folder looked at: every file with its stat, and the rule that leaves each out (the
I/O half of :mod:`memoryd.kb.sync.plan`). Hidden and ignored folders are not entered; symbolic
links are never followed (a link out of the folder or into memoryd's home is refused by
:func:`memoryd.kb.folder_rules.refuse_reason`, and a link inside it points at a file that is
synced as itself)."""

from __future__ import annotations

import os
from pathlib import Path

from memoryd.kb.convert import READABLE_SUFFIXES
from memoryd.kb.folder_rules import refuse_reason
from memoryd.kb.sync.model import SyncSource
from memoryd.kb.sync.plan import Seen
from memoryd.kb.sync.rules import IGNORE_FILES, FolderRules, ignore_lines
from memoryd.trust.credential_screening import find_credential, redact_credentials

LINK_INSIDE = "a symbolic link (what it points to inside the folder is synced as itself)"
# A file whose name holds a key or token: recorded under its name with the credential removed.
CREDENTIAL_NAME = (
    "its name carries a password or token, and memoryd never stores credentials; rename the "
    "file to sync it"
)
# An ignore file larger than this is not a list of patterns.
MAX_IGNORE_FILE_BYTES = 256_000


def folder_rules(source: SyncSource, root: Path) -> FolderRules:
    """The source's rules: its own patterns after those of the folder's ignore files."""
    patterns: list[str] = []
    for name in IGNORE_FILES:
        path = root / name
        try:
            readable = path.is_file() and not path.is_symlink()
            if readable and path.stat().st_size <= MAX_IGNORE_FILE_BYTES:
                patterns.extend(ignore_lines(path.read_text("utf-8", errors="replace")))
        except OSError:
            continue
    patterns.extend(source.ignore)
    return FolderRules(tuple(patterns), source.include_hidden, source.max_bytes, READABLE_SUFFIXES)


def scan_folder(root: Path, rules: FolderRules, home: Path) -> list[Seen]:
    """Every file under ``root`` with its stat or the rule that skips it, and every folder not
    entered (its path ending in '/'), sorted by path."""
    seen: list[Seen] = []
    pending = [""]
    while pending:
        relative_dir = pending.pop()
        directory = root / relative_dir if relative_dir else root
        try:
            entries = list(os.scandir(directory))
        except OSError as error:
            seen.append(Seen(relative_dir + "/", skip=f"cannot be listed ({error.strerror})"))
            continue
        for entry in entries:
            relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
            try:
                if entry.is_symlink():
                    is_dir = entry.is_dir(follow_symlinks=True)
                    link = refuse_reason(Path(entry.path), root, home) or LINK_INSIDE
                    seen.append(Seen(relative + ("/" if is_dir else ""), skip=link))
                elif entry.is_dir(follow_symlinks=False):
                    left_out = rules.folder_reason(relative) or refuse_reason(
                        Path(entry.path), root, home
                    )
                    if left_out is None:
                        pending.append(relative)
                    else:
                        seen.append(Seen(relative + "/", skip=left_out))
                elif entry.is_file(follow_symlinks=False):
                    stat = entry.stat(follow_symlinks=False)
                    reason = rules.file_reason(relative, stat.st_size)
                    seen.append(Seen(relative, stat.st_size, stat.st_mtime_ns, reason))
            except OSError:
                continue  # gone between the listing and the stat: the next look sees it
    seen = [_screened(item) for item in seen]
    seen.sort(key=lambda item: item.path)
    return seen


def _screened(item: Seen) -> Seen:
    """``item``, or, when its path carries a credential, the path with it removed and left out:
    the file's row must not store what its name holds."""
    if find_credential(item.path) is None:
        return item
    return Seen(redact_credentials(item.path), item.size, item.mtime_ns, CREDENTIAL_NAME)


def stat_file(path: Path) -> Seen | None:
    """One file's stat (a file source), or None when it is not there."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return Seen(path.name, stat.st_size, stat.st_mtime_ns)
