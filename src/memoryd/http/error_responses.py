"""How the HTTP API maps the project's errors to statuses, in one place."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memoryd.errors import (
    ConsolidationBusyError,
    DocumentNotFoundError,
    EmbeddingUnavailableError,
    EvalCaseNotFoundError,
    InvalidInputError,
    InvalidOperationError,
    MemorydError,
    MemoryNotFoundError,
    StoreFullError,
    StoreMismatchError,
    StoreNotAnsweringError,
    StoreUnavailableError,
    SyncSourceNotFoundError,
)
from memoryd.storage.full_disk import disk_full_error, is_disk_full

log = logging.getLogger(__name__)

_STATUS_BY_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (MemoryNotFoundError, 404),
    (DocumentNotFoundError, 404),
    (EvalCaseNotFoundError, 404),
    (SyncSourceNotFoundError, 404),
    (ConsolidationBusyError, 409),
    (InvalidOperationError, 409),
    (InvalidInputError, 400),
    (StoreUnavailableError, 503),
    # 507 Insufficient Storage: the write was undone; it succeeds once space is freed.
    (StoreFullError, 507),
    # The store moved to another embedding model under a running server: it must restart.
    (StoreMismatchError, 503),
    (EmbeddingUnavailableError, 503),
    (MemorydError, 400),
)


# What an HTTP caller does next when an id is unknown.
_HTTP_HINTS: tuple[tuple[type[MemorydError], str], ...] = (
    (MemoryNotFoundError, "GET /v1/memories lists the ids"),
    (DocumentNotFoundError, "GET /v1/kb/documents lists the ids"),
    (EvalCaseNotFoundError, "GET /v1/eval/cases lists the ids"),
    (SyncSourceNotFoundError, "GET /v1/kb/sync lists the synced sources"),
)


def http_error_body(error: MemorydError) -> dict[str, object]:
    """``{"error": …}`` with the HTTP caller's next step, and ``fields`` naming the body or
    query fields at fault when the error knows them."""
    message = str(error)
    hint = next((hint for kind, hint in _HTTP_HINTS if isinstance(error, kind)), None)
    body: dict[str, object] = {"error": f"{message}; {hint}" if hint else message}
    if error.fields:
        body["fields"] = list(error.fields)
    return body


def install_error_handlers(app: FastAPI) -> None:
    """Every error as ``{"error": …}`` with a status that says whose fault it is, never a
    stack trace: the project's errors by kind (a database that is not answering as 503 with
    ``Retry-After``), validation as 422, the rest as 500."""

    async def memoryd_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, MemorydError)
        status = next(code for kind, code in _STATUS_BY_ERROR if isinstance(error, kind))
        headers = (
            {"Retry-After": str(error.retry_after)}
            if isinstance(error, StoreNotAnsweringError)
            else None
        )
        return JSONResponse(http_error_body(error), status_code=status, headers=headers)

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
        if error.__cause__ is not None and is_disk_full(error.__cause__):
            # FastAPI's "error parsing the body": an upload spooled to a full disk.
            return _disk_full(request, error.__cause__)
        return JSONResponse({"error": str(error.detail)}, status_code=error.status_code)

    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        if is_disk_full(error):
            return _disk_full(request, error)
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": "internal error; the server log has the details"}, status_code=500
        )

    handlers: list[
        tuple[type[Exception], Callable[[Request, Exception], Awaitable[JSONResponse]]]
    ] = [
        (MemorydError, memoryd_error),
        (RequestValidationError, validation_error),
        (StarletteHTTPException, http_error),
        (Exception, unexpected),
    ]
    for kind, handler in handlers:
        app.add_exception_handler(kind, handler)


def _disk_full(request: Request, error: BaseException) -> JSONResponse:
    """507 for a full disk outside the store (whose writes say so themselves): the file the
    error names, else the temporary directory an upload is spooled to."""
    named = getattr(error, "filename", None)
    full = disk_full_error(Path(str(named) if named else tempfile.gettempdir()))
    log.warning("%s %s: %s", request.method, request.url.path, full)
    return JSONResponse(http_error_body(full), status_code=507)
