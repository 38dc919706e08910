"""Each HTTP response shape is written once, beside the record whose ``to_json`` builds it: every
route returns the shape its response model is made from, every such shape is what a record's
``to_json`` is declared to return, and what ``to_json`` builds holds exactly that shape's keys
(the HTTP body is then what the CLI prints, less the CLI-only keys)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime
from types import UnionType
from typing import (
    Annotated,
    Any,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel

import memoryd
from memoryd.evaluation.model import EvalCase
from memoryd.evaluation.policy import CaseScore, EvalReport
from memoryd.evaluation.run import EvalRun
from memoryd.extraction.chat_import import ChatImportReport
from memoryd.http import response_models as out
from memoryd.http.api import create_app
from memoryd.json_shapes import CliOnly
from memoryd.kb.model import Chunk, ChunkKey, Document, DocumentStatus, SourceType
from memoryd.kb.results import IngestResult, KbHit, KbReadResult, KbSearchResult
from memoryd.kb.routing import Route
from memoryd.kb.search import RankedChunk
from memoryd.kb.sync.model import SourceKind, SyncSource
from memoryd.kb.sync.passes import PassReport
from memoryd.memory.forget_policy import (
    ForgetRequest,
    ForgetResult,
    ForgottenChunk,
    ForgottenDocument,
    ForgottenMemory,
)
from memoryd.memory.model import Importance, Kind, Memory, Source, Status
from memoryd.recall.context_policy import ContextPack, PackDrop, PackItem
from memoryd.recall.score_policy import Scored

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MEMORY = Memory(
    "01MEMORY", Kind.FACT, Status.ACTIVE, "I live in Lisbon", Source.TURN, NOW, NOW,
    entities=("Lisbon",), importance=Importance.HIGH,
)  # fmt: skip
LESSON = Memory(
    "01LESSON", Kind.LESSON, Status.ACTIVE, "Answer briefly", Source.OWNER, NOW, NOW,
    importance=Importance.CRITICAL,
)  # fmt: skip
DOCUMENT = Document(
    "01DOC", "/notes/tides.md", "default", SourceType.CURATED, "Tides", DocumentStatus.READY,
    NOW, NOW, chunk_count=4, embedded_chunks=4,
)  # fmt: skip
CHUNK = Chunk("01DOC", 2, ("Tides",), "Tides", "High tide at 6.", 5, pages=((3, 0),))
RANKED = RankedChunk(ChunkKey("01DOC", 2), 0.031, 0.52, 1, 2, 3, 1.0, row_rank=4)
HIT = KbHit(DOCUMENT, CHUNK, RANKED)
SCORED = Scored(MEMORY, 0.04, 0.03, 0.9, 1.0, 3.0, {"vector": 1}, ("vector",), 0.61)
PACK = ContextPack(
    "<memory>…</memory>", 120, 1500, (LESSON,),
    (
        PackItem("memory", MEMORY.id, 0.03, {"vector": 1}, 0.9, 0.04, "- I live in Lisbon",
                 memory=MEMORY, scored=SCORED),
        PackItem("chunk", "01DOC#2", 0.02, {"vector": 2}, 1.0, 0.031, HIT.fenced, hit=HIT,
                 follows="weak word evidence only", cosine=0.5),
    ),
    (PackDrop("chunk", "01DOC#3", "over the token budget"),),
    {"vector": "ok"},
)  # fmt: skip
FORGET = ForgetResult(
    ForgetRequest(entity="Ana"), ("Ana",),
    (ForgottenMemory(MEMORY.id, "active", "fact", "I live in …", "names Ana"),),
    (ForgottenChunk("01DOC", 2, "High tide …", "names Ana"),),
    (ForgottenDocument("01DOC", "Tides", 4, (2,)),), True, NOW, "01REQ",
)  # fmt: skip
CASE = EvalCase("01CASE", "where do I live?", (MEMORY.id,), ("01NOISE",), NOW)
REPORT = EvalReport("current settings", 5, (CaseScore(CASE, (MEMORY.id,), ("01NOISE",)),))
SOURCE = SyncSource("01SRC", "/notes", SourceKind.FOLDER, "default", NOW)
CHATS = ChatImportReport("claude", 3, 2, 5, 1, 0, NOW, NOW, dry_run=True)

# (the record's JSON as the CLI prints it, the model the HTTP route returns it through)
RECORDS: list[tuple[str, Any, Any]] = [
    ("context", PACK.to_json(), out.ContextOut),
    ("context-explained", PACK.__class__(**{**PACK.__dict__, "explained": True}).to_json(),
     out.ContextOut),
    ("forget", FORGET.to_json(), out.ForgetOut),
    ("ingest", IngestResult("/notes/tides.md", "ok", DOCUMENT, None, 0.5, 0.2).to_json(),
     out.IngestOut),
    ("ingest-failed", IngestResult("/x.pdf", "failed", None, "unreadable").to_json(),
     out.IngestOut),
    ("kb-search", KbSearchResult("tides", (HIT,)).to_json(), out.KbSearchOut),
    ("kb-search-explained",
     KbSearchResult("tides", (HIT,), routes=(Route("01DOC", "Tides", ("title",)),)).to_json(True),
     out.KbSearchOut),
    ("kb-read", KbReadResult(DOCUMENT, 1, 2, "text", 9, 3, pages=(3, 4)).to_json(),
     out.KbReadOut),
    ("chat-import", CHATS.to_json(), out.ChatImportOut),
    ("sync-pass", PassReport(SOURCE, added=2, seconds=0.25).to_json(), out.SyncPassOut),
    ("eval-case", CASE.to_json(), out.EvalCaseOut),
    ("eval-run", EvalRun(REPORT, REPORT).to_json(), out.EvalRunOut),
]  # fmt: skip


def _strip(hint: Any) -> tuple[Any, bool, bool]:
    """The hint without NotRequired/Annotated, whether the key is required, whether CLI-only."""
    required = True
    if get_origin(hint) in (NotRequired, Required):
        required = get_origin(hint) is Required
        hint = get_args(hint)[0]
    cli_only = False
    if get_origin(hint) is Annotated:
        hint, *marks = get_args(hint)
        cli_only = any(isinstance(mark, CliOnly) for mark in marks)
    return hint, required, cli_only


def _mismatches(value: Any, hint: Any, where: str = "$") -> list[str]:
    """Where ``value`` strays from ``hint``: a TypedDict's keys (none missing that is required,
    none it does not declare), through lists, dicts and unions of them."""
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not an object"]
        hints = get_type_hints(hint, include_extras=True)
        found = [f"{where}.{key}: not in {hint.__name__}" for key in value if key not in hints]
        for key, declared in hints.items():
            inner, required, _ = _strip(declared)
            if key not in value:
                if required:
                    found.append(f"{where}.{key}: missing ({hint.__name__} requires it)")
                continue
            found += _mismatches(value[key], inner, f"{where}.{key}")
        return found
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        if value is None and type(None) in args:
            return []
        shaped = [arg for arg in args if is_typeddict(arg) or get_origin(arg) is list]
        return _mismatches(value, shaped[0], where) if len(shaped) == 1 else []
    if origin is list and isinstance(value, list):
        return [
            m for i, item in enumerate(value) for m in _mismatches(item, args[0], f"{where}[{i}]")
        ]
    return []


def _cli_only_removed(value: Any, hint: Any) -> Any:
    """``value`` less its CLI-only keys: what the HTTP API returns of it."""
    if is_typeddict(hint) and isinstance(value, dict):
        hints = get_type_hints(hint, include_extras=True)
        kept = {}
        for key, item in value.items():
            inner, _, cli_only = _strip(hints[key])
            if not cli_only:
                kept[key] = _cli_only_removed(item, inner)
        return kept
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType) and value is not None:
        shaped = [arg for arg in args if is_typeddict(arg) or get_origin(arg) is list]
        return _cli_only_removed(value, shaped[0]) if len(shaped) == 1 else value
    if origin is list and isinstance(value, list):
        return [_cli_only_removed(item, args[0]) for item in value]
    return value


def _shape_of(model: Any) -> Any:
    return next(shape for shape, made in out._MODELS.items() if made is model)


@pytest.mark.parametrize(("name", "printed", "model"), RECORDS, ids=[r[0] for r in RECORDS])
def test_to_json_builds_exactly_its_declared_shape(name: str, printed: Any, model: Any) -> None:
    assert _mismatches(printed, _shape_of(model)) == [], name


@pytest.mark.parametrize(("name", "printed", "model"), RECORDS, ids=[r[0] for r in RECORDS])
def test_http_returns_what_the_cli_prints_less_the_cli_only_keys(
    name: str, printed: Any, model: Any
) -> None:
    returned = model.model_validate(printed).model_dump(mode="json")

    # Beyond those, the body holds only the defaults of keys the record left out.
    assert _covers(returned, _cli_only_removed(printed, _shape_of(model))), name
    assert set(returned) == set(model.model_fields), name


def _covers(returned: Any, printed: Any) -> bool:
    """Whether ``returned`` holds every key of ``printed`` with its value, at every depth."""
    if isinstance(printed, dict):
        return isinstance(returned, dict) and all(
            key in returned and _covers(returned[key], value) for key, value in printed.items()
        )
    if isinstance(printed, list):
        return (
            isinstance(returned, list)
            and len(returned) == len(printed)
            and all(_covers(r, p) for r, p in zip(returned, printed, strict=True))
        )
    return bool(returned == printed)


def test_the_checker_sees_a_key_the_shape_does_not_declare() -> None:
    printed = {**CHATS.to_json(), "undeclared": 1}
    missing = {k: v for k, v in FORGET.to_json().items() if k != "summary"}
    nested = FORGET.to_json()
    nested["memories"] = [{**nested["memories"][0], "subject": "Ana"}]  # type: ignore[typeddict-unknown-key]

    assert _mismatches(printed, _shape_of(out.ChatImportOut)) == [
        "$.undeclared: not in ChatImportJson"
    ]
    assert _mismatches(missing, _shape_of(out.ForgetOut)) == [
        "$.summary: missing (ForgetJson requires it)"
    ]
    assert _mismatches(nested, _shape_of(out.ForgetOut)) == [
        "$.memories[0].subject: not in ForgottenMemoryJson"
    ]


def _routes() -> list[APIRoute]:
    """The app's JSON routes (the app is built over no service: its routes are never called)."""
    app = create_app(None, "t" * 32)  # type: ignore[arg-type]
    return [r for r in _api_routes(app.routes) if _documented(r.response_model)]


def _documented(model: Any) -> bool:
    """Whether a route returns through a model (the model tools' routes return free JSON)."""
    inner = get_args(model)[0] if get_origin(model) is list else model
    return isinstance(inner, type) and issubclass(inner, BaseModel)


def _api_routes(routes: Any) -> Any:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        # An included router (FastAPI keeps it whole and resolves its routes when asked).
        elif (included := getattr(route, "original_router", None)) is not None:
            yield from _api_routes(included.routes)


def _returned_shape(route: APIRoute) -> tuple[Any, bool]:
    hint = get_type_hints(route.endpoint)["return"]
    if get_origin(hint) is list:
        return get_args(hint)[0], True
    return hint, False


@pytest.mark.parametrize("route", _routes(), ids=lambda r: f"{sorted(r.methods)[0]} {r.path}")
def test_every_route_returns_the_shape_its_response_model_is_made_from(route: APIRoute) -> None:
    shape, listed = _returned_shape(route)

    assert is_typeddict(shape), f"{route.path} is annotated to return {shape}, not a shape"
    model = out.response_model(shape)
    assert route.response_model == (out.list_of(model) if listed else model)


def _to_json_shapes() -> set[Any]:
    """The shapes the records' ``to_json`` methods are declared to return, across the core
    packages (the surfaces build none of the routes' shapes)."""
    surfaces = {"cli", "http", "mcp", "proxy"}
    shapes: set[Any] = set()
    for info in pkgutil.walk_packages(memoryd.__path__, "memoryd."):
        if info.name.split(".")[1] in surfaces or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            to_json = getattr(cls, "to_json", None)
            if cls.__module__ != module.__name__ or not callable(to_json):
                continue
            returned = get_type_hints(to_json).get("return")
            shapes.add(get_args(returned)[0] if get_origin(returned) is list else returned)
    return shapes


def test_every_routes_shape_is_what_a_record_builds() -> None:
    built = _to_json_shapes()
    routed = {_returned_shape(route)[0] for route in _routes()}

    assert routed - built == {out.HealthJson}
