"""The request body limits: a JSON request is refused over 1 MB and an upload over 50 MB (413),
by its declared length or while it streams in."""

from __future__ import annotations

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .asgi import send_json

# Why these: a JSON request is a turn, a batch of 50 proposals or a query; 1 MB is far above
# any of them. An upload is a document, bounded like a file on disk.
MAX_JSON_BYTES = 1_000_000
MAX_UPLOAD_BYTES = 50_000_000
UPLOAD_PATH = "/v1/kb/upload"


class BodyLimit:
    """ASGI middleware: refuse bodies over the limit with 413, by header or while streaming."""

    def __init__(self, app: ASGIApp, *, json_limit: int, upload_limit: int) -> None:
        self.app = app
        self.json_limit = json_limit
        self.upload_limit = upload_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        uploads = (UPLOAD_PATH, "/documents/upload")
        limit = self.upload_limit if scope["path"] in uploads else self.json_limit
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").decode() or "0"
        if declared.isdigit() and int(declared) > limit:
            await send_json(send, 413, {"error": f"request body over {limit} bytes"})
            return
        seen = 0
        refused = False

        async def limited() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
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


class _BodyTooLarge(StarletteHTTPException):
    """Raised while the body streams in; FastAPI passes HTTP exceptions through to the 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes")
