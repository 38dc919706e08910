"""The bearer token: generated at ``memoryd init``, stored 0600 beside the store's home;
``MEMORYD_TOKEN`` overrides it. :func:`bearer_refusal` is the one check of an ``Authorization``
header, and :class:`RequireBearer` the one middleware that applies it, for the HTTP API and the
MCP endpoint alike; each surface words its own refusal."""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.config.keys import SettingsError
from memoryd.http.asgi import send_json
from memoryd.storage.file_modes import private_home

TOKEN_FILE = "token"
MISSING = 401
WRONG = 403

# A refusal as a surface words it: the JSON body and the extra headers for a status.
Refusal = tuple[dict[str, Any], list[tuple[bytes, bytes]]]


def token_path(home: Path) -> Path:
    """Where the token lives."""
    return home / TOKEN_FILE


def ensure_token(home: Path) -> Path:
    """Create the token file (0600, never world- or group-readable) unless it exists."""
    path = token_path(home)
    private_home(home)
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
        try:
            value = path.read_text(encoding="ascii").strip()
        except UnicodeDecodeError:
            # A header carries ASCII only: no client could send such a token.
            raise SettingsError(
                f"the token file {path} holds characters a bearer token cannot carry (ASCII "
                "only); delete it and run `memoryd init` for a new one, or set MEMORYD_TOKEN"
            ) from None
        return value or None
    return None


def token_matches(expected: str, given: str) -> bool:
    """Constant-time comparison."""
    return hmac.compare_digest(expected.encode(), given.encode())


def bearer_refusal(authorization: str, token: str) -> int | None:
    """None when the ``Authorization`` header carries ``token`` as a bearer token; 401 when it
    carries no bearer token at all; 403 when it carries another one."""
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return MISSING
    if not token_matches(token, given.strip()):
        return WRONG
    return None


class RequireBearer:
    """ASGI middleware: the protected paths need the bearer token before any body is read or
    parsed, so a stranger never makes the server parse anything."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        protects: Callable[[str], bool],
        refusal: Callable[[int], Refusal],
    ) -> None:
        self.app = app
        self.token = token
        self.protects = protects
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a protected HTTP request without the token; pass everything else on."""
        if scope["type"] == "http" and self.protects(scope.get("path", "")):
            headers = dict(scope.get("headers") or [])
            header = headers.get(b"authorization", b"").decode("latin-1")
            status = bearer_refusal(header, self.token)
            if status is not None:
                body, extra_headers = self.refusal(status)
                await send_json(send, status, body, extra_headers)
                return
        await self.app(scope, receive, send)
