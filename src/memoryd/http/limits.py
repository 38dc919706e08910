"""The request body limits: a JSON request is refused over 1 MB and an upload over 50 MB (413),
by its declared length or while it streams in; a body still arriving 30 s after the request
began (an upload: 300 s) is refused with 408 and its connection closed, so a client sending a
byte a second holds nothing for long."""

from __future__ import annotations

import time
from dataclasses import KW_ONLY, dataclass

import anyio
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.http.asgi import send_json

# Why these: a JSON request is a turn, a batch of 50 proposals or a query; 1 MB is far above
# any of them. An upload is a document, bounded like a file on disk.
MAX_JSON_BYTES = 1_000_000
MAX_UPLOAD_BYTES = 50_000_000
UPLOAD_PATH = "/v1/kb/upload"
# A conversation export is an upload too (its conversations.json, or the export's .zip).
IMPORT_CHATS_PATH = "/v1/import-chats"
# Why these: a turn or a query arrives in milliseconds; 30 s is for a slow link, not a slow
# sender. An upload of 50 MB at the slowest link worth serving (~200 kB/s) takes ~250 s.
CHAT_PATH = "/v1/chat/completions"
JSON_BODY_SECONDS = 30.0
UPLOAD_BODY_SECONDS = 300.0


@dataclass(eq=False)
class BodyLimit:
    """ASGI middleware: refuse bodies over the limit with 413, by header or while streaming."""

    app: ASGIApp
    _: KW_ONLY
    json_limit: int
    upload_limit: int
    json_seconds: float = JSON_BODY_SECONDS
    upload_seconds: float = UPLOAD_BODY_SECONDS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # A chat request carries the whole conversation, images included: an upload's size.
        uploads = (UPLOAD_PATH, IMPORT_CHATS_PATH, "/documents/upload", CHAT_PATH)
        upload = scope["path"] in uploads
        limit = self.upload_limit if upload else self.json_limit
        deadline = time.monotonic() + (self.upload_seconds if upload else self.json_seconds)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").decode() or "0"
        if declared.isdigit() and int(declared) > limit:
            await send_json(send, 413, {"error": f"request body over {limit} bytes"})
            return
        seen = 0
        refused = False
        complete = False
        late = False

        async def limited() -> Message:
            nonlocal seen, refused, complete, late
            if complete:
                # The body is in: what is left to hear is the client hanging up.
                return await receive()
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                late = True
                raise _BodyTooSlow() from None
            if message["type"] == "http.request":
                complete = not message.get("more_body", False)
                seen += len(message.get("body", b""))
                if seen > limit:
                    refused = True
                    raise _BodyTooLarge(limit)
            return message

        try:
            await self.app(scope, limited, send)
        except _BodyTooLarge:
            if refused:
                await send_json(send, 413, {"error": f"request body over {limit} bytes"})
        except _BodyTooSlow:
            if late:
                seconds = self.upload_seconds if upload else self.json_seconds
                await send_json(
                    send,
                    408,
                    {
                        "error": f"the request body did not arrive within {seconds:g} s; send it "
                        "in one go"
                    },
                    [(b"connection", b"close")],
                )


class _BodyTooLarge(StarletteHTTPException):
    """Raised while the body streams in; FastAPI passes HTTP exceptions through to the 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes")


class _BodyTooSlow(StarletteHTTPException):
    """Raised when the body is still arriving at its deadline."""

    def __init__(self) -> None:
        super().__init__(408, "the request body did not arrive in time")
