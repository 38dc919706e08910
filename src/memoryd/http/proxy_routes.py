"""The chat proxy's routes on the API app, and their bearer check, which refuses in OpenAI's
error shape (a chat client shows it as it is)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from starlette.responses import Response
from starlette.types import ASGIApp

from memoryd.http.auth import MISSING, RequireBearer
from memoryd.http.proxy import ChatProxy
from memoryd.proxy.policy import COMPLETIONS_PATH, MODELS_PATH, PROXY_PATHS, openai_error


def _refusal(status: int) -> tuple[dict[str, Any], list[tuple[bytes, bytes]]]:
    if status == MISSING:
        body = openai_error(
            "missing API key: use the memoryd token as the API key (Authorization: Bearer)",
            "invalid_request_error",
            "missing_api_key",
        )
        return body, [(b"www-authenticate", b"Bearer")]
    body = openai_error(
        "wrong API key: use the memoryd token ($MEMORYD_HOME/token)",
        "invalid_request_error",
        "invalid_api_key",
    )
    return body, []


def is_proxy_path(path: str) -> bool:
    """Whether ``path`` is one of the proxy's routes."""
    return path in PROXY_PATHS


def proxy_guard(app: ASGIApp, token: str) -> ASGIApp:
    """The bearer check for the proxy's routes, refusing in OpenAI's error shape."""
    return RequireBearer(app, token=token, protects=is_proxy_path, refusal=_refusal)


proxy_router = APIRouter(tags=["chat proxy"], include_in_schema=False)


@proxy_router.post(COMPLETIONS_PATH)
async def chat_completions(request: Request) -> Response:
    """OpenAI-compatible chat completions with memory (streamed when asked)."""
    proxy: ChatProxy = request.app.state.proxy
    return await proxy.complete(request)


@proxy_router.get(MODELS_PATH)
async def models(request: Request) -> Response:
    """The upstream's models."""
    proxy: ChatProxy = request.app.state.proxy
    return await proxy.models()


def install_proxy(app: FastAPI, proxy: ChatProxy) -> None:
    """Add the proxy's routes to the API app (when ``proxy.enabled``)."""
    app.state.proxy = proxy
    app.include_router(proxy_router)
