"""The JSON HTTP API: a thin adapter over :class:`MemoryService` (SPEC §7).

Every route but ``/v1/health`` needs ``Authorization: Bearer <token>`` (401 without it, 403 for a
wrong one). Bodies are size-limited before they are read; errors come back as
``{"error": "…"}`` with a 4xx status that says whose fault it is, and never a stack trace.
"""

from __future__ import annotations

from importlib.metadata import version

from fastapi import APIRouter, FastAPI

from memoryd.http import kb_routes, memory_routes, reading_routes, writing_routes
from memoryd.http import response_models as out
from memoryd.http import schemas as s
from memoryd.http.auth import MISSING, Refusal, RequireBearer
from memoryd.http.depends import Service
from memoryd.http.error_responses import install_error_handlers
from memoryd.http.hosts import RequireHost
from memoryd.http.lanes import IngestLane
from memoryd.http.limits import MAX_JSON_BYTES, MAX_UPLOAD_BYTES, BodyLimit
from memoryd.http.proxy import ChatProxy
from memoryd.http.proxy_routes import install_proxy, proxy_guard
from memoryd.http.sync_routes import sync_api
from memoryd.proxy.policy import PROXY_PATHS
from memoryd.results import ConsolidationJson
from memoryd.service import MemoryService

OPEN_PATHS = frozenset({"/v1/health"})

# The service itself: liveness, and the daily job run now. The other resources have their
# own routers (memory_routes, writing_routes, reading_routes, kb_routes, sync_routes).
service_router = APIRouter(tags=["service"])


@service_router.get("/v1/health", response_model=out.HealthOut)
def health() -> out.HealthJson:
    """Liveness; needs no token and says nothing about the store."""
    return {"status": "ok", "version": version("memoryd")}


@service_router.post("/v1/consolidate", response_model=out.ConsolidationOut)
def consolidate(service: Service, body: s.ConsolidateRequest) -> ConsolidationJson:
    """Run (or with dry_run, plan) the daily consolidation now."""
    return service.jobs.consolidate(dry_run=body.dry_run).to_json()


def create_app(
    service: MemoryService,
    token: str,
    *,
    json_limit: int = MAX_JSON_BYTES,
    upload_limit: int = MAX_UPLOAD_BYTES,
    web: bool = True,
    proxy: ChatProxy | None = None,
    hosts: frozenset[str] | None = None,
    ingest_lane: int = 2,
) -> FastAPI:
    """The API over ``service``; every owner and model route needs ``token``. With ``web``,
    the owner's pages too (a login form trades the token for a session cookie); with
    ``proxy``, the OpenAI-compatible chat proxy (its refusals in OpenAI's shape). With
    ``hosts``, a request naming another host is refused first (see hosts.py). At most
    ``ingest_lane`` ingests run at once (see lanes.py)."""
    app = FastAPI(
        title="memoryd",
        version=version("memoryd"),
        description="Long-term memory and knowledge layer of a self-hosted AI assistant.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    # Added last, runs first: the token is checked before the body is even limited.
    app.add_middleware(IngestLane, width=ingest_lane)
    app.add_middleware(BodyLimit, json_limit=json_limit, upload_limit=upload_limit)
    app.add_middleware(RequireBearer, token=token, protects=_needs_token, refusal=_api_refusal)
    app.add_middleware(proxy_guard, token=token)
    if proxy is not None:
        install_proxy(app, proxy)
    install_error_handlers(app)

    app.include_router(service_router)
    app.include_router(memory_routes.router)
    app.include_router(writing_routes.router)
    app.include_router(reading_routes.router)
    app.include_router(kb_routes.router)
    app.include_router(sync_api)
    if web:
        from memoryd.http.web import install_web

        install_web(app, token)
    if hosts is not None:  # added last, so it runs first: a foreign name gets nothing else
        app.add_middleware(RequireHost, names=hosts)
    return app


def _needs_token(path: str) -> bool:
    # The chat proxy's routes have their own check, refusing in OpenAI's shape.
    return path.startswith("/v1/") and path not in OPEN_PATHS and path not in PROXY_PATHS


def _api_refusal(status: int) -> Refusal:
    if status == MISSING:
        hint = "missing bearer token: send Authorization: Bearer <token>"
        return {"error": hint}, [(b"www-authenticate", b"Bearer")]
    return {"error": "wrong token"}, []
