"""The JSON HTTP API: a thin adapter over :class:`MemoryService` (SPEC §7).

Every route but ``/v1/health`` needs ``Authorization: Bearer <token>`` (401 without it, 403 for a
wrong one). Bodies are size-limited before they are read; errors come back as
``{"error": "…"}`` with a 4xx status that says whose fault it is, and never a stack trace.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from importlib.metadata import version
from typing import Any

from fastapi import FastAPI, File, Form, UploadFile

from memoryd.clock import parse_instant
from memoryd.errors import InvalidInputError
from memoryd.extraction.extractor import MissionDigest, parse_local_instant
from memoryd.http import schemas as s
from memoryd.http.auth import MISSING, Refusal, RequireBearer
from memoryd.http.error_responses import install_error_handlers
from memoryd.http.hosts import RequireHost
from memoryd.http.lanes import IngestLane
from memoryd.http.limits import (
    IMPORT_CHATS_PATH,
    MAX_JSON_BYTES,
    MAX_UPLOAD_BYTES,
    UPLOAD_PATH,
    BodyLimit,
)
from memoryd.http.proxy import ChatProxy, install_proxy, proxy_guard
from memoryd.http.sync_routes import install_sync_api
from memoryd.kb.model import parse_source_type
from memoryd.memory.model import Importance, Source, Status, kind_from_user, parse_kind
from memoryd.proxy.policy import PROXY_PATHS
from memoryd.service import MemoryService
from memoryd.tools import parse_chunk_range

OPEN_PATHS = frozenset({"/v1/health"})


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

    @app.get("/v1/health", response_model=s.HealthOut, tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness; needs no token and says nothing about the store."""
        return {"status": "ok", "version": version("memoryd")}

    # ------------------------------------------------------------- memories

    @app.get("/v1/memories", response_model=list[s.MemoryOut], tags=["memories"])
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

    @app.post("/v1/memories", response_model=s.WriteOut, tags=["memories"])
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
        )
        return result.to_json()

    @app.get("/v1/memories/{memory_id}", response_model=s.ShowOut, tags=["memories"])
    def show(memory_id: str) -> dict[str, Any]:
        """A memory with its supersede chain (oldest first) and audit trail."""
        return service.show(memory_id).to_json()

    def owner_action(name: str, call: Callable[..., Any]) -> None:
        def action(memory_id: str, body: s.OwnerActionRequest | None = None) -> dict[str, Any]:
            memory = call(memory_id)
            return dict(memory.to_json())

        action.__name__ = name
        action.__doc__ = f"Owner action: {name} the memory."
        app.post(
            f"/v1/memories/{{memory_id}}/{name}",
            response_model=s.MemoryOut,
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
        tags=["review"],
    )
    def edit(memory_id: str, body: s.EditRequest) -> dict[str, Any]:
        """Owner action: supersede the memory with corrected text."""
        memory = service.edit(memory_id, body.content, object=body.object)
        return memory.to_json()

    @app.post(
        "/v1/memories/{memory_id}/split",
        response_model=s.SplitOut,
        tags=["review"],
    )
    def split(memory_id: str, body: s.OwnerActionRequest | None = None) -> dict[str, Any]:
        """Owner action: a fact treated as the same slot as another predicate gets its own
        slot back; the fact it replaced there, if any, is active again."""
        return service.split(memory_id).to_json()

    @app.get("/v1/review", response_model=list[s.ReviewItemOut], tags=["review"])
    def review() -> list[dict[str, Any]]:
        """Pending memories, oldest first, each with the fact it would replace."""
        return [item.to_json() for item in service.review_queue()]

    @app.get("/v1/reconfirmation", response_model=list[s.MemoryOut], tags=["review"])
    def reconfirmation() -> list[dict[str, Any]]:
        """Facts consolidation marked as a year unconfirmed."""
        return [m.to_json() for m in service.reconfirmation_queue()]

    # ------------------------------------------------------------ writing in

    @app.post("/v1/propose", response_model=list[s.WriteOut], tags=["writing"])
    def propose(body: s.ProposeRequest) -> list[dict[str, Any]]:
        """A batch under the proposal contract; the promotion policy decides each item."""
        results = service.propose(
            {"memories": body.memories},
            source=Source(body.source),
            source_ref=body.source_ref,
        )
        return [r.to_json() for r in results]

    @app.post("/v1/observe", response_model=s.ObservationOut, tags=["writing"])
    def observe(body: s.ObserveRequest) -> dict[str, Any]:
        """After a turn: queue it for background extraction."""
        at = _local(body.at, service.zone, "at")
        return service.observe_turn(body.user, body.summary, at=at).to_json()

    @app.post("/v1/compaction", response_model=s.ObservationOut, tags=["writing"])
    def compaction(body: s.CompactionRequest) -> dict[str, Any]:
        """Before the conversation is compacted: queue the turns for extraction."""
        turns = [{"role": t.role, "content": t.content, "at": t.at} for t in body.turns]
        return service.before_compaction(turns).to_json()

    @app.post("/v1/mission", response_model=s.ObservationOut, tags=["writing"])
    def mission(body: s.MissionRequest) -> dict[str, Any]:
        """A finished mission's digest: queue it for extraction."""
        finished_at = _local(body.finished_at, service.zone, "finished_at")
        digest = MissionDigest(body.title, body.goal, body.outcome, finished_at)
        return service.mission_finished(digest).to_json()

    @app.post(IMPORT_CHATS_PATH, response_model=s.ChatImportOut, tags=["writing"])
    def import_chats(
        file: UploadFile = File(...),  # noqa: B008 - FastAPI's declaration style
        format: str = Form("auto"),
        dry_run: bool = Form(False),
    ) -> dict[str, Any]:
        """Upload a ChatGPT or Claude export (multipart form: file — its conversations.json or
        the .zip —, format chatgpt | claude | auto, dry_run): its new turns are queued for
        extraction, each dated by the original message."""
        report = service.import_chat_bytes(file.file.read(), format=format, dry_run=dry_run)
        return report.to_json()

    # --------------------------------------------------------------- reading

    @app.post("/v1/recall", response_model=s.RecallOut, tags=["reading"])
    def recall(body: s.RecallRequest) -> dict[str, Any]:
        """The fenced, token-budgeted memory block for a message."""
        return service.recall(body.message, budget=body.budget).to_json()

    @app.post("/v1/context", response_model=s.ContextOut, tags=["reading"])
    def context(body: s.ContextRequest) -> dict[str, Any]:
        """The one context pack: standing lessons, then memories and document chunks by
        calibrated score, in one fenced block within the token budget, with what was dropped
        and why."""
        return service.context(body.message, budget=body.budget, explain=body.explain).to_json()

    @app.post("/v1/search", response_model=list[s.SearchItemOut], tags=["reading"])
    def search(body: s.SearchRequest) -> list[dict[str, Any]]:
        """search_memory: a ranked list."""
        found = service.search_memory(
            body.query,
            kind=kind_from_user(body.kind),
            since=_instant(body.since, "since"),
            until=_instant(body.until, "until"),
            limit=body.limit,
        )
        return found.to_json()

    # ------------------------------------------------------------- evaluation set

    @app.get("/v1/eval/cases", response_model=list[s.EvalCaseOut], tags=["evaluation"])
    def eval_cases() -> list[dict[str, Any]]:
        """The owner's evaluation cases, oldest first."""
        return [case.to_json() for case in service.eval_cases()]

    @app.post("/v1/eval/cases", response_model=s.EvalCaseOut, tags=["evaluation"])
    def eval_add(body: s.EvalCaseRequest) -> dict[str, Any]:
        """Owner action: recall should find the ``expect`` memories for the question and not
        show the ``noise`` ones (whole ids); an existing question gets them joined."""
        case = service.eval_add(body.question, expected=body.expect, noise=body.noise)
        return case.to_json()

    @app.delete("/v1/eval/cases/{case_id}", response_model=s.EvalCaseOut, tags=["evaluation"])
    def eval_remove(case_id: str) -> dict[str, Any]:
        """Owner action: drop an evaluation case."""
        return service.eval_remove(case_id).to_json()

    @app.post("/v1/eval/run", response_model=s.EvalRunOut, tags=["evaluation"])
    def eval_run(body: s.EvalRunRequest) -> dict[str, Any]:
        """Score every case (recall@k, block recall, noise) under the current settings and,
        with ``overrides``, under the candidate settings too. Nothing counts as retrieved."""
        from memoryd.evaluation.policy import parse_overrides

        pairs = [f"{key}={value}" for key, value in body.overrides.items()]
        result = service.eval_run(
            k=body.k,
            overrides=_with_field(lambda: parse_overrides(pairs), "overrides"),
        )
        return result.to_json()

    @app.post("/v1/consolidate", response_model=s.ConsolidationOut, tags=["service"])
    def consolidate(body: s.ConsolidateRequest) -> dict[str, Any]:
        """Run (or with dry_run, plan) the daily consolidation now."""
        report = service.consolidate(dry_run=body.dry_run)
        return report.to_json()

    @app.post("/v1/forget", response_model=s.ForgetOut, tags=["review"])
    def forget(body: s.ForgetRequest) -> dict[str, Any]:
        """Owner action: erase every memory (any status) and knowledge-base document that
        names ``entity`` or matches ``query``, in one transaction; with ``dry_run``, only
        list them."""
        result = service.forget(
            entity=body.entity,
            query=body.query,
            dry_run=body.dry_run,
        )
        return result.to_json()

    # --------------------------------------------------------------------- kb

    @app.post(
        "/v1/kb/ingest",
        response_model=list[s.IngestOut],
        tags=["knowledge base"],
    )
    def kb_ingest(body: s.KbIngestRequest) -> list[dict[str, Any]]:
        """Ingest files or folders on the server's disk, or http(s) URLs."""
        results = service.kb.ingest(
            body.sources,
            collection=body.collection,
            source_type=parse_source_type(body.source_type) if body.source_type else None,
            wait=False,
        )
        service.worker.wake.set()  # the worker embeds the chunks just written
        return [r.to_json() for r in results]

    @app.post(UPLOAD_PATH, response_model=s.IngestOut, tags=["knowledge base"])
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
            wait=False,
        )
        service.worker.wake.set()  # the worker embeds the chunks just written
        return result.to_json()

    @app.post("/v1/kb/search", response_model=s.KbSearchOut, tags=["knowledge base"])
    def kb_search(body: s.KbSearchRequest) -> dict[str, Any]:
        """search_kb: fenced passages, best first."""
        found = service.kb.search(
            body.query, pinned_collections=body.pinned_collections, limit=body.limit
        )
        return found.to_json(body.explain)

    @app.post("/v1/kb/read", response_model=s.KbReadOut, tags=["knowledge base"])
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
        tags=["knowledge base"],
    )
    def kb_get(document_id: str) -> dict[str, Any]:
        """One document."""
        return service.kb.get(document_id).to_json()

    @app.patch(
        "/v1/kb/documents/{document_id}",
        response_model=s.DocumentOut,
        tags=["knowledge base"],
    )
    def kb_rename(document_id: str, body: s.KbRenameRequest) -> dict[str, Any]:
        """The owner's title for a document."""
        return service.kb.rename(document_id, body.title).to_json()

    @app.delete(
        "/v1/kb/documents/{document_id}",
        response_model=s.DocumentOut,
        tags=["knowledge base"],
    )
    def kb_delete(document_id: str) -> dict[str, Any]:
        """Remove a document and its chunks."""
        return service.kb.delete(document_id).to_json()

    @app.post(
        "/v1/kb/documents/{document_id}/reingest",
        response_model=s.IngestOut,
        tags=["knowledge base"],
    )
    def kb_reingest(document_id: str) -> dict[str, Any]:
        """Read a document's file or URL again."""
        result = service.kb.reingest(document_id, wait=False)
        service.worker.wake.set()  # the worker embeds the chunks that changed
        return result.to_json()

    # ------------------------------------------------------------ model tools

    @app.get("/v1/tools", tags=["model tools"])
    def tools(style: str = "anthropic") -> list[dict[str, Any]]:
        """The model's tool definitions (JSON Schema), Anthropic or OpenAI style."""
        return service.tool_definitions(style)

    @app.post("/v1/tools/call", tags=["model tools"])
    def call_tool(body: s.ToolCallRequest) -> dict[str, Any]:
        """Run a model's tool call as the model (never as the owner); ``session``, ``turn``
        and ``untrusted`` keep the session's taint (a remember after untrusted content waits
        for the owner until the owner's next turn)."""
        return service.call_tool(
            body.name,
            body.arguments,
            pinned_collections=body.pinned_collections,
            session=body.session,
            turn=body.turn,
            untrusted=body.untrusted,
        )

    install_sync_api(app, service)
    if web:
        from memoryd.http.web import install_web

        install_web(app, service, token)
    if hosts is not None:  # added last, so it runs first: a foreign name gets nothing else
        app.add_middleware(RequireHost, names=hosts)
    return app


def _with_field(parse: Callable[[], Any], field: str) -> Any:
    """What ``parse`` returns; its refusal names the body ``field``."""
    try:
        return parse()
    except InvalidInputError as error:
        raise InvalidInputError(str(error), fields=(field,)) from None


def _instant(value: str | None, what: str) -> datetime | None:
    return parse_instant(value, what=what) if value else None


def _local(value: str | None, zone: tzinfo, what: str) -> datetime | None:
    return parse_local_instant(value, zone, what=what) if value else None


def _status(value: str) -> Status:
    try:
        return Status(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown status {value!r}; use pending, active, rejected or archived"
        ) from None


def _needs_token(path: str) -> bool:
    # The chat proxy's routes have their own check, refusing in OpenAI's shape.
    return path.startswith("/v1/") and path not in OPEN_PATHS and path not in PROXY_PATHS


def _api_refusal(status: int) -> Refusal:
    if status == MISSING:
        hint = "missing bearer token: send Authorization: Bearer <token>"
        return {"error": hint}, [(b"www-authenticate", b"Bearer")]
    return {"error": "wrong token"}, []
