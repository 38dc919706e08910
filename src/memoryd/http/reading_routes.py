"""Reading: recall, the context pack and search over the memories; the model's tools; the
owner's evaluation set, which scores recall."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memoryd.evaluation.model import EvalCaseJson
from memoryd.evaluation.policy import parse_overrides
from memoryd.evaluation.run import EvalRunJson
from memoryd.http import response_models as out
from memoryd.http import schemas as s
from memoryd.http.depends import Service, instant, with_field
from memoryd.memory.model import kind_from_user
from memoryd.recall.context_policy import ContextJson
from memoryd.results import RecallJson, SearchItemJson

router = APIRouter()


@router.post("/v1/recall", response_model=out.RecallOut, tags=["reading"])
def recall(service: Service, body: s.RecallRequest) -> RecallJson:
    """The fenced, token-budgeted memory block for a message."""
    return service.retrieval.recall(body.message, budget=body.budget).to_json()


@router.post("/v1/context", response_model=out.ContextOut, tags=["reading"])
def context(service: Service, body: s.ContextRequest) -> ContextJson:
    """The one context pack: standing lessons, then memories and document chunks by
    calibrated score, in one fenced block within the token budget, with what was dropped
    and why."""
    pack = service.retrieval.context(body.message, budget=body.budget, explain=body.explain)
    return pack.to_json()


@router.post("/v1/search", response_model=out.list_of(out.SearchItemOut), tags=["reading"])
def search(service: Service, body: s.SearchRequest) -> list[SearchItemJson]:
    """search_memory: a ranked list."""
    found = service.retrieval.search(
        body.query,
        kind=kind_from_user(body.kind),
        since=instant(body.since, "since"),
        until=instant(body.until, "until"),
        limit=body.limit,
    )
    return found.to_json()


# ------------------------------------------------------------------ evaluation set


@router.get("/v1/eval/cases", response_model=out.list_of(out.EvalCaseOut), tags=["evaluation"])
def eval_cases(service: Service) -> list[EvalCaseJson]:
    """The owner's evaluation cases, oldest first."""
    return [case.to_json() for case in service.eval_cases()]


@router.post("/v1/eval/cases", response_model=out.EvalCaseOut, tags=["evaluation"])
def eval_add(service: Service, body: s.EvalCaseRequest) -> EvalCaseJson:
    """Owner action: recall should find the ``expect`` memories for the question and not
    show the ``noise`` ones (whole ids); an existing question gets them joined."""
    return service.eval_add(body.question, expected=body.expect, noise=body.noise).to_json()


@router.delete("/v1/eval/cases/{case_id}", response_model=out.EvalCaseOut, tags=["evaluation"])
def eval_remove(service: Service, case_id: str) -> EvalCaseJson:
    """Owner action: drop an evaluation case."""
    return service.eval_remove(case_id).to_json()


@router.post("/v1/eval/run", response_model=out.EvalRunOut, tags=["evaluation"])
def eval_run(service: Service, body: s.EvalRunRequest) -> EvalRunJson:
    """Score every case (recall@k, block recall, noise) under the current settings and,
    with ``overrides``, under the candidate settings too. Nothing counts as retrieved."""
    pairs = [f"{key}={value}" for key, value in body.overrides.items()]
    overrides = with_field(lambda: parse_overrides(pairs), "overrides")
    return service.eval_run(k=body.k, overrides=overrides).to_json()


# --------------------------------------------------------------------- model tools


@router.get("/v1/tools", tags=["model tools"])
def tools(service: Service, style: str = "anthropic") -> list[dict[str, Any]]:
    """The model's tool definitions (JSON Schema), Anthropic or OpenAI style."""
    return service.tool_definitions(style)


@router.post("/v1/tools/call", tags=["model tools"])
def call_tool(service: Service, body: s.ToolCallRequest) -> dict[str, Any]:
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
