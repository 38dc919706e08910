"""The names ``memoryd serve`` answers to: a request whose ``Host`` header names anything else is
refused before it reaches a route.

A web page on another site can make the owner's browser resolve its own name to 127.0.0.1
(DNS rebinding) and then talk to the server as a same-origin page. It cannot change the name
in the ``Host`` header, so answering only the names the server is served under — loopback
names by default, plus the address it listens on and any the owner adds with
``serve.allowed_hosts`` — shuts that door (the MCP HTTP transport does the same).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.http.asgi import send_json

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# Any address: the owner asked for every name (behind a proxy that checks names itself).
ANY_HOST = "*"


def allowed_hosts(listen_host: str, configured: Iterable[str]) -> frozenset[str]:
    """Loopback names, the address listened on (unless it is every address) and the owner's
    own names, lower-cased."""
    names = {*LOOPBACK_NAMES, *(name.strip().lower() for name in configured if name.strip())}
    if listen_host not in ("0.0.0.0", "::", ""):
        names.add(listen_host.lower())
    return frozenset(names)


def host_name(header: str) -> str:
    """The name in a ``Host`` header, without its port or IPv6 brackets, lower-cased."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class RequireHost:
    """ASGI middleware: 421 for a request whose ``Host`` is not one of ``names``."""

    def __init__(self, app: ASGIApp, *, names: frozenset[str]) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or ANY_HOST in self.names:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        given = host_name(headers.get(b"host", b"").decode("latin-1"))
        if given not in self.names:
            shown = given[:100] or "(none)"
            await send_json(
                send,
                421,
                {
                    "error": f"this server does not answer to the host name {shown!r}; add it "
                    "with `memoryd config set serve.allowed_hosts NAME` if you serve it "
                    "under that name"
                },
            )
            return
        await self.app(scope, receive, send)
