"""The JSON HTTP API: a thin adapter over :class:`MemoryService` (SPEC §7).

Every route but ``/v1/health`` needs ``Authorization: Bearer <token>`` (401 without it, 403 for a
wrong one). Bodies are size-limited before they are read; errors come back as
``{"error": "…"}`` with a 4xx status that says whose fault it is, and never a stack trace.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib.metadata import version
from typing import Any

from fastapi import Depends, FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..clock import parse_instant
from ..errors import (
    ConsolidationBusyError,
    DocumentNotFoundError,
    EmbeddingUnavailableError,
    InvalidInputError,
    InvalidOperationError,
    MemorydError,
    MemoryNotFoundError,
    StoreUnavailableError,
)
from ..extraction import MissionDigest
from ..kb.model import parse_source_type
from ..model import Importance, Source, Status, kind_from_user, parse_kind
from ..service import MemoryService
from ..tools import parse_chunk_range
from . import schemas as s
from .auth import token_matches

log = logging.getLogger(__name__)

# Why these: a JSON request is a turn, a batch of 50 proposals or a query; 1 MB is far above
# any of them. An upload is a document, bounded like a file on disk.
MAX_JSON_BYTES = 1_000_000
MAX_UPLOAD_BYTES = 50_000_000
UPLOAD_PATH = "/v1/kb/upload"
OPEN_PATHS = frozenset({"/v1/health"})


class AuthError(Exception):
    """Missing (401) or wrong (403) credentials."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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
            await _send_json(send, 413, {"error": f"request body over {limit} bytes"})
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
                await _send_json(send, 413, {"error": f"request body over {limit} bytes"})


class _BodyTooLarge(StarletteHTTPException):
    """Raised while the body streams in; FastAPI passes HTTP exceptions through to the 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes")


class RequireBearer:
    """ASGI middleware: API routes check the token before any body is read or parsed, so a
    stranger never makes the server parse anything (401 without a token, 403 for a wrong one).
    """

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/v1/") and path not in OPEN_PATHS:
            headers = dict(scope.get("headers") or [])
            header = headers.get(b"authorization", b"").decode("latin-1")
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer" or not given.strip():
                await _send_json(
                    send,
                    401,
                    {"error": "missing bearer token: send Authorization: Bearer <token>"},
                    [(b"www-authenticate", b"Bearer")],
                )
                return
            if not token_matches(self.token, given.strip()):
                await _send_json(send, 403, {"error": "wrong token"})
                return
        await self.app(scope, receive, send)


async def _send_json(
    send: Send,
    status: int,
    body: dict[str, Any],
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(extra_headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def create_app(
    service: MemoryService,
    token: str,
    *,
    json_limit: int = MAX_JSON_BYTES,
    upload_limit: int = MAX_UPLOAD_BYTES,
    web: bool = True,
) -> FastAPI:
    """The API over ``service``; every owner and model route needs ``token``. With ``web``,
    the owner's pages too (a login form trades the token for a session cookie)."""
    app = FastAPI(
        title="memoryd",
        version=version("memoryd"),
        description="Long-term memory and knowledge layer of a self-hosted AI assistant.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    app.state.token = token
    # Added last, runs first: the token is checked before the body is even limited.
    app.add_middleware(BodyLimit, json_limit=json_limit, upload_limit=upload_limit)
    app.add_middleware(RequireBearer, token=token)
    _install_error_handlers(app)

    def authorized(request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if not header or scheme.lower() != "bearer" or not given.strip():
            raise AuthError(401, "missing bearer token: send Authorization: Bearer <token>")
        if not token_matches(request.app.state.token, given.strip()):
            raise AuthError(403, "wrong token")

    guard = [Depends(authorized)]

    @app.get("/v1/health", response_model=s.HealthOut, tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness; needs no token and says nothing about the store."""
        return {"status": "ok", "version": version("memoryd")}

    # ------------------------------------------------------------- memories

    @app.get(
        "/v1/memories", response_model=list[s.MemoryOut], dependencies=guard, tags=["memories"]
    )
    def list_memories(
        status: str | None = None, kind: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Memories, newest first, filtered by status and kind."""
        if not 1 <= limit <= 10_000:
            raise InvalidInputError("limit must be between 1 and 10000")
        chosen = _status(status) if status else None
        return [
            m.to_json()
            for m in service.list_memories(status=chosen, kind=kind_from_user(kind), limit=limit)
        ]

    @app.post("/v1/memories", response_model=s.WriteOut, dependencies=guard, tags=["memories"])
    def remember(body: s.RememberRequest) -> dict[str, Any]:
        """An owner action: remember this (active at once unless refused)."""
        result = service.remember(
            body.content,
            kind=parse_kind(body.kind),
            subject=body.subject,
            predicate=body.predicate,
            object=body.object,
            entities=body.entities,
            importance=Importance(body.importance) if body.importance else None,
            changes_behavior=body.changes_behavior,
            occurred_at=_instant(body.occurred_at, "occurred_at"),
            now=_instant(body.now, "now"),
        )
        return result.to_json()

    @app.get(
        "/v1/memories/{memory_id}", response_model=s.ShowOut, dependencies=guard, tags=["memories"]
    )
    def show(memory_id: str) -> dict[str, Any]:
        """A memory with its supersede chain (oldest first) and audit trail."""
        return service.show(memory_id).to_json()

    def owner_action(name: str, call: Callable[..., Any]) -> None:
        def action(memory_id: str, body: s.OwnerActionRequest | None = None) -> dict[str, Any]:
            memory = call(memory_id, now=_instant(body.now if body else None, "now"))
            return dict(memory.to_json())

        action.__name__ = name
        action.__doc__ = f"Owner action: {name} the memory."
        app.post(
            f"/v1/memories/{{memory_id}}/{name}",
            response_model=s.MemoryOut,
            dependencies=guard,
            tags=["review"],
        )(action)

    owner_action("confirm", service.confirm)
    owner_action("reject", service.reject)
    owner_action("archive", service.archive)
    owner_action("purge", service.purge)
    owner_action("reconfirm", service.reconfirm)

    @app.post(
        "/v1/memories/{memory_id}/edit",
        response_model=s.MemoryOut,
        dependencies=guard,
        tags=["review"],
    )
    def edit(memory_id: str, body: s.EditRequest) -> dict[str, Any]:
        """Owner action: supersede the memory with corrected text."""
        memory = service.edit(
            memory_id, body.content, object=body.object, now=_instant(body.now, "now")
        )
        return memory.to_json()

    @app.get(
        "/v1/review", response_model=list[s.ReviewItemOut], dependencies=guard, tags=["review"]
    )
    def review() -> list[dict[str, Any]]:
        """Pending memories, oldest first, each with the fact it would replace."""
        return [item.to_json() for item in service.review_queue()]

    @app.get(
        "/v1/reconfirmation", response_model=list[s.MemoryOut], dependencies=guard, tags=["review"]
    )
    def reconfirmation() -> list[dict[str, Any]]:
        """Facts consolidation marked as a year unconfirmed."""
        return [m.to_json() for m in service.reconfirmation_queue()]

    # ------------------------------------------------------------ writing in

    @app.post("/v1/propose", response_model=list[s.WriteOut], dependencies=guard, tags=["writing"])
    def propose(body: s.ProposeRequest) -> list[dict[str, Any]]:
        """A batch under the proposal contract; the promotion policy decides each item."""
        results = service.propose(
            {"memories": body.memories},
            source=Source(body.source),
            source_ref=body.source_ref,
            now=_instant(body.now, "now"),
        )
        return [r.to_json() for r in results]

    @app.post("/v1/observe", response_model=s.ObservationOut, dependencies=guard, tags=["writing"])
    def observe(body: s.ObserveRequest) -> dict[str, Any]:
        """After a turn: queue it for background extraction."""
        return service.observe_turn(
            body.user, body.summary, now=_instant(body.now, "now")
        ).to_json()

    @app.post(
        "/v1/compaction", response_model=s.ObservationOut, dependencies=guard, tags=["writing"]
    )
    def compaction(body: s.CompactionRequest) -> dict[str, Any]:
        """Before the conversation is compacted: queue the turns for extraction."""
        turns = [{"role": t.role, "content": t.content} for t in body.turns]
        return service.before_compaction(turns, now=_instant(body.now, "now")).to_json()

    @app.post("/v1/mission", response_model=s.ObservationOut, dependencies=guard, tags=["writing"])
    def mission(body: s.MissionRequest) -> dict[str, Any]:
        """A finished mission's digest: queue it for extraction."""
        digest = MissionDigest(body.title, body.goal, body.outcome)
        return service.mission_finished(digest, now=_instant(body.now, "now")).to_json()

    # --------------------------------------------------------------- reading

    @app.post("/v1/recall", response_model=s.RecallOut, dependencies=guard, tags=["reading"])
    def recall(body: s.RecallRequest) -> dict[str, Any]:
        """The fenced, token-budgeted memory block for a message."""
        return service.recall(
            body.message, budget=body.budget, now=_instant(body.now, "now")
        ).to_json()

    @app.post(
        "/v1/search", response_model=list[s.SearchItemOut], dependencies=guard, tags=["reading"]
    )
    def search(body: s.SearchRequest) -> list[dict[str, Any]]:
        """search_memory: a ranked list."""
        found = service.search_memory(
            body.query,
            kind=kind_from_user(body.kind),
            since=_instant(body.since, "since"),
            until=_instant(body.until, "until"),
            limit=body.limit,
            now=_instant(body.now, "now"),
        )
        return found.to_json()

    @app.post(
        "/v1/consolidate", response_model=s.ConsolidationOut, dependencies=guard, tags=["service"]
    )
    def consolidate(body: s.ConsolidateRequest) -> dict[str, Any]:
        """Run (or with dry_run, plan) the daily consolidation now."""
        report = service.consolidate(now=_instant(body.now, "now"), dry_run=body.dry_run)
        return report.to_json()

    # --------------------------------------------------------------------- kb

    @app.post(
        "/v1/kb/ingest",
        response_model=list[s.IngestOut],
        dependencies=guard,
        tags=["knowledge base"],
    )
    def kb_ingest(body: s.KbIngestRequest) -> list[dict[str, Any]]:
        """Ingest files or folders on the server's disk, or http(s) URLs."""
        results = service.kb.ingest(
            body.sources,
            collection=body.collection,
            source_type=parse_source_type(body.source_type) if body.source_type else None,
        )
        return [r.to_json() for r in results]

    @app.post(UPLOAD_PATH, response_model=s.IngestOut, dependencies=guard, tags=["knowledge base"])
    def kb_upload(
        file: UploadFile = File(...),  # noqa: B008 - FastAPI's declaration style
        collection: str = Form("default"),
        source_type: str = Form("curated"),
    ) -> dict[str, Any]:
        """Upload a document (multipart form: file, collection, source_type)."""
        data = file.file.read()
        result = service.kb.ingest_bytes(
            data,
            file.filename or "upload",
            collection=collection,
            source_type=parse_source_type(source_type),
            content_type=file.content_type,
        )
        return result.to_json()

    @app.post(
        "/v1/kb/search", response_model=s.KbSearchOut, dependencies=guard, tags=["knowledge base"]
    )
    def kb_search(body: s.KbSearchRequest) -> dict[str, Any]:
        """search_kb: fenced passages, best first."""
        found = service.kb.search(
            body.query, pinned_collections=body.pinned_collections, limit=body.limit
        )
        return found.to_json(body.explain)

    @app.post(
        "/v1/kb/read", response_model=s.KbReadOut, dependencies=guard, tags=["knowledge base"]
    )
    def kb_read(body: s.KbReadRequest) -> dict[str, Any]:
        """read_kb: a document, a section, a chunk range or a page range, fenced and
        bounded."""
        span = parse_chunk_range(body.chunks) if body.chunks else None
        pages = parse_chunk_range(body.pages, what="pages") if body.pages else None
        return service.kb.read(
            body.doc, section=body.section, chunks=span, pages=pages, max_tokens=body.max_tokens
        ).to_json()

    @app.get(
        "/v1/kb/documents",
        response_model=list[s.DocumentOut],
        dependencies=guard,
        tags=["knowledge base"],
    )
    def kb_list(collection: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
        """Documents with status and errors, newest first."""
        if not 1 <= limit <= 100_000:
            raise InvalidInputError("limit must be between 1 and 100000")
        return [d.to_json() for d in service.kb.list_documents(collection=collection, limit=limit)]

    @app.get(
        "/v1/kb/documents/{document_id}",
        response_model=s.DocumentOut,
        dependencies=guard,
        tags=["knowledge base"],
    )
    def kb_get(document_id: str) -> dict[str, Any]:
        """One document."""
        return service.kb.get(document_id).to_json()

    @app.patch(
        "/v1/kb/documents/{document_id}",
        response_model=s.DocumentOut,
        dependencies=guard,
        tags=["knowledge base"],
    )
    def kb_rename(document_id: str, body: s.KbRenameRequest) -> dict[str, Any]:
        """The owner's title for a document."""
        return service.kb.rename(document_id, body.title).to_json()

    @app.delete(
        "/v1/kb/documents/{document_id}",
        response_model=s.DocumentOut,
        dependencies=guard,
        tags=["knowledge base"],
    )
    def kb_delete(document_id: str) -> dict[str, Any]:
        """Remove a document and its chunks."""
        return service.kb.delete(document_id).to_json()

    @app.post(
        "/v1/kb/documents/{document_id}/reingest",
        response_model=s.IngestOut,
        dependencies=guard,
        tags=["knowledge base"],
    )
    def kb_reingest(document_id: str) -> dict[str, Any]:
        """Read a document's file or URL again."""
        return service.kb.reingest(document_id).to_json()

    # ------------------------------------------------------------ model tools

    @app.get("/v1/tools", dependencies=guard, tags=["model tools"])
    def tools(style: str = "anthropic") -> list[dict[str, Any]]:
        """The model's tool definitions (JSON Schema), Anthropic or OpenAI style."""
        return service.tool_definitions(style)

    @app.post("/v1/tools/call", dependencies=guard, tags=["model tools"])
    def call_tool(body: s.ToolCallRequest) -> dict[str, Any]:
        """Run a model's tool call as the model (never as the owner)."""
        return service.call_tool(
            body.name, body.arguments, pinned_collections=body.pinned_collections
        )

    if web:
        from .web import install_web

        install_web(app, service, token)
    return app


def _instant(value: str | None, what: str) -> datetime | None:
    return parse_instant(value, what=what) if value else None


def _status(value: str) -> Status:
    try:
        return Status(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown status {value!r}; use pending, active, rejected or archived"
        ) from None


_STATUS_BY_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (MemoryNotFoundError, 404),
    (DocumentNotFoundError, 404),
    (ConsolidationBusyError, 409),
    (InvalidOperationError, 409),
    (InvalidInputError, 400),
    (StoreUnavailableError, 503),
    (EmbeddingUnavailableError, 503),
    (MemorydError, 400),
)


def _install_error_handlers(app: FastAPI) -> None:
    async def memoryd_error(request: Request, error: Exception) -> JSONResponse:
        status = next(code for kind, code in _STATUS_BY_ERROR if isinstance(error, kind))
        return JSONResponse({"error": str(error)}, status_code=status)

    async def auth_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, AuthError)
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else {}
        return JSONResponse({"error": str(error)}, status_code=error.status, headers=headers)

    async def validation_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        problems = error.errors()
        if any(p.get("type") == "json_invalid" for p in problems):
            return JSONResponse({"error": "the body is not valid JSON"}, status_code=400)
        details = [
            {
                "field": ".".join(str(part) for part in p.get("loc", ())[1:]) or "body",
                "problem": str(p.get("msg", "invalid")),
            }
            for p in problems
        ]
        summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details[:5])
        return JSONResponse(
            {"error": f"invalid request: {summary}", "details": details}, status_code=422
        )

    async def http_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, StarletteHTTPException)
        return JSONResponse({"error": str(error.detail)}, status_code=error.status_code)

    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": "internal error; the server log has the details"}, status_code=500
        )

    handlers: list[
        tuple[type[Exception], Callable[[Request, Exception], Awaitable[JSONResponse]]]
    ] = [
        (MemorydError, memoryd_error),
        (AuthError, auth_error),
        (RequestValidationError, validation_error),
        (StarletteHTTPException, http_error),
        (Exception, unexpected),
    ]
    for kind, handler in handlers:
        app.add_exception_handler(kind, handler)
