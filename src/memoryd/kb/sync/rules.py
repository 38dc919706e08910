"""Which files of a synced folder are read (pure): ``.gitignore``-style patterns, hidden files
and folders, a size cap, and the types memoryd reads. A file a rule leaves out is listed as
skipped with the rule's reason, never failed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath

import pathspec

# The ignore files read from the folder's top, in this order, besides the owner's patterns.
IGNORE_FILES = (".gitignore", ".memorydignore")


@dataclass(frozen=True)
class FolderRules:
    """The owner's rules for one folder: ``ignore`` patterns (``.gitignore`` syntax, relative
    to the folder), whether hidden entries are read, the size cap and the readable suffixes."""

    ignore: tuple[str, ...]
    include_hidden: bool
    max_bytes: int
    suffixes: frozenset[str]

    @cached_property
    def _spec(self) -> pathspec.GitIgnoreSpec:
        return pathspec.GitIgnoreSpec.from_lines(self.ignore)

    def folder_reason(self, relative: str) -> str | None:
        """Why a sub-folder (path relative to the folder, '/'-separated) is not entered."""
        name = PurePosixPath(relative).name
        if not self.include_hidden and name.startswith("."):
            return "a hidden folder"
        if self._spec.match_file(relative + "/"):
            return "matches an ignore pattern"
        return None

    def file_reason(self, relative: str, size: int) -> str | None:
        """Why a file (path relative to the folder) is not read, or None when it is."""
        path = PurePosixPath(relative)
        if not self.include_hidden and path.name.startswith("."):
            return "a hidden file"
        if self._spec.match_file(relative):
            return "matches an ignore pattern"
        suffix = path.suffix.lower()
        if suffix not in self.suffixes:
            return f"not a type memoryd reads ({suffix or 'no extension'})"
        if size > self.max_bytes:
            return f"{_size(size)}, over this folder's cap of {_size(self.max_bytes)}"
        return None


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count:,} bytes"


def ignore_lines(text: str) -> list[str]:
    """The patterns of an ignore file (comments and blank lines are pathspec's to drop)."""
    return text.splitlines()


def check_patterns(patterns: Sequence[str]) -> tuple[str, ...]:
    """The owner's patterns, stripped; a clear error for one pathspec cannot read."""
    from memoryd.errors import InvalidInputError

    cleaned = tuple(p.strip() for p in patterns if p.strip())
    for pattern in cleaned:
        try:
            pathspec.GitIgnoreSpec.from_lines([pattern])
        except (ValueError, TypeError) as error:
            raise InvalidInputError(
                f"cannot read the ignore pattern {pattern!r} ({error}); use .gitignore syntax, "
                "e.g. 'drafts/' or '*.tmp'"
            ) from None
    return cleaned
