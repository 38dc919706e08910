"""The bearer token: generated at ``memoryd init``, stored 0600 beside the store's home;
``MEMORYD_TOKEN`` overrides it."""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

TOKEN_FILE = "token"


def token_path(home: Path) -> Path:
    """Where the token lives."""
    return home / TOKEN_FILE


def ensure_token(home: Path) -> Path:
    """Create the token file (0600, never world- or group-readable) unless it exists."""
    path = token_path(home)
    home.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(secrets.token_urlsafe(32) + "\n")
    return path


def load_token(home: Path, environ: Mapping[str, str] | None = None) -> str | None:
    """``MEMORYD_TOKEN``, else the token file, else None."""
    env = os.environ if environ is None else environ
    if env.get("MEMORYD_TOKEN", "").strip():
        return env["MEMORYD_TOKEN"].strip()
    path = token_path(home)
    if path.is_file():
        value = path.read_text(encoding="ascii").strip()
        return value or None
    return None


def token_matches(expected: str, given: str) -> bool:
    """Constant-time comparison."""
    return hmac.compare_digest(expected.encode(), given.encode())
