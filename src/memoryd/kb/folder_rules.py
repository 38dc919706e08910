"""Which files found in a folder may be read into the knowledge base: the one rule every folder
walk applies (a one-off ingest and a synced folder alike).

A folder can hold links to anything the server may read: ``token.txt -> ~/.local/share/memoryd/
token`` would hand the API token to whoever reads the knowledge base. So a file is read only
when its real path (every symlink followed) stays inside the folder being ingested, and never
when it lies in memoryd's own home (the token, the store, the settings), whatever path led
there — a folder that *is* the home, or holds it, included.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


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
    if root is not None and not _inside(real, _real(root)):
        return (
            f"it is a symbolic link to {real}, outside the folder {root}; memoryd follows no "
            "link out of an ingested folder (ingest that file by its own path if you mean it)"
        )
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
