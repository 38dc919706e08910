"""Which paths a folder ingest or sync may read: never a link out of the folder, never anything
inside memoryd's own home (its store, token and backups are not documents)."""

from __future__ import annotations

from pathlib import Path


def refuse_reason(path: Path, root: Path, home: Path) -> str | None:
    """Why ``path`` (found under the folder ``root``) must not be read, or None when it may.

    A path is refused when, once its symbolic links are followed, it lies outside ``root`` or
    inside memoryd's ``home``; ``root`` itself is refused when it lies inside ``home``."""
    try:
        real = path.resolve(strict=False)
        real_root = root.resolve(strict=False)
        real_home = home.expanduser().resolve(strict=False)
    except (OSError, RuntimeError) as error:  # a link loop, a path too long
        return f"cannot follow its links ({error})"
    if real == real_home or real.is_relative_to(real_home):
        return "inside memoryd's home, which holds the store and its secrets"
    if real != real_root and not real.is_relative_to(real_root):
        return f"a symbolic link out of the folder (to {real})"
    return None
