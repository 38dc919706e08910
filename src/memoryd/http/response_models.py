"""Typed response models of the HTTP API: the JSON shapes the routes return (each route's
``response_model``), documented in the OpenAPI document.

Each model is made from the shape's ``TypedDict`` (see json_shapes.py): the records' shapes are
declared beside the records whose ``to_json`` builds them, the few others here."""

from __future__ import annotations

import operator
from functools import reduce
from types import UnionType
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    TypedDict,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from pydantic import BaseModel, Field, create_model

from memoryd import results
from memoryd.json_shapes import CliOnly, Default, Described
from memoryd.kb.model import DocumentJson
from memoryd.kb.sync.model import SyncSourceJson
from memoryd.memory.model import AuditJson, MemoryJson, ShowJson

_MODELS: dict[type, type[BaseModel]] = {}


def response_model(shape: type) -> type[BaseModel]:
    """The pydantic model of a JSON shape, named for it (``MemoryJson`` → ``MemoryOut``): its
    keys in order, less the CLI-only ones, with their defaults and descriptions."""
    made = _MODELS.get(shape)
    if made is not None:
        return made
    fields: dict[str, Any] = {}
    for key, hint in get_type_hints(shape, include_extras=True).items():
        if get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        marks: list[Any] = []
        if get_origin(hint) is Annotated:
            hint, *marks = get_args(hint)
        if any(isinstance(mark, CliOnly) for mark in marks):
            continue
        arguments: dict[str, Any] = {}
        for mark in marks:
            if isinstance(mark, Default):
                arguments.update(mark.field_arguments())
            elif isinstance(mark, Described):
                arguments["description"] = mark.text
        fields[key] = (_typed(hint), Field(**arguments))
    name = shape.__name__.removesuffix("Json") + "Out"
    made = create_model(name, __doc__=shape.__doc__, **fields)
    _MODELS[shape] = made
    return made


def _typed(hint: Any) -> Any:
    """``hint`` with every shape in it replaced by its model."""
    if is_typeddict(hint):
        return response_model(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        return reduce(operator.or_, [_typed(arg) for arg in args])
    if origin is list:
        return list[_typed(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[args[0], _typed(args[1])]  # type: ignore[misc,valid-type]
    return hint


# ------------------------------------------------------------ shapes built outside the records


class ChatImportJson(TypedDict):
    # An imported chat export (extraction/chat_import.py's report).
    format: Literal["chatgpt", "claude"]
    conversations: int
    conversations_queued: int
    turns_queued: int
    skipped_already_imported: int
    skipped_empty_or_unsupported: int
    first_at: str | None
    last_at: str | None
    dry_run: bool


class ContextItemJson(TypedDict):
    """A lesson, a memory or a document chunk of the pack (chunks carry their fenced text)."""

    type: Literal["lesson", "memory", "chunk"]
    id: str
    score: float | None
    content: str
    importance: Annotated[str | None, Default(None)]
    memory_kind: Annotated[str | None, Default(None)]
    doc: Annotated[str | None, Default(None)]
    chunk: Annotated[int | None, Default(None)]
    title: Annotated[str | None, Default(None)]
    source: Annotated[str | None, Default(None)]
    pages: Annotated[list[int] | None, Default(None)]
    cite: Annotated[str | None, Default(None)]
    explain: Annotated[dict[str, Any] | None, Default(None)]


class ContextDropJson(TypedDict):
    # An item the pack left out, and why.
    type: Literal["lesson", "memory", "chunk"]
    id: str
    reason: str


class ContextJson(TypedDict):
    # The context pack (recall/context_policy.py).
    text: str
    tokens: int
    budget: int
    items: list[ContextItemJson]
    dropped: list[ContextDropJson]
    legs: dict[str, str]
    silence: str | None


class ForgetRequestJson(TypedDict):
    # What the owner asked to forget.
    entity: str | None
    query: str | None


class ForgottenMemoryJson(TypedDict):
    # A memory forget erases (or would).
    id: str
    status: str
    kind: str
    preview: str
    why: str


class ForgottenChunkJson(TypedDict):
    # A document chunk forget erases (or would).
    document_id: str
    chunk: int
    preview: str
    why: str


class ForgottenDocumentJson(TypedDict):
    # A document forget erases (or would).
    id: str
    title: str
    chunks: int
    matching_chunks: list[int]


class ForgetJson(TypedDict):
    # The forget plan, or what it erased (memory/forget_policy.py).
    request: ForgetRequestJson
    summary: str
    names: list[str]
    dry_run: bool
    erased: bool
    request_id: str | None
    at: str
    memories: list[ForgottenMemoryJson]
    chunks: list[ForgottenChunkJson]
    documents: list[ForgottenDocumentJson]


class IngestJson(TypedDict):
    # What one ingest did (kb/results.py).
    source: str
    outcome: Literal["ok", "skipped", "queued", "failed"]
    reason: str | None
    document: DocumentJson | None
    seconds: float
    searchable_seconds: Annotated[
        float | None,
        Default(None),
        Described("seconds until the chunks were written (keyword-searchable)"),
    ]


class KbHitJson(TypedDict):
    # A passage search_kb found.
    doc: str
    chunk: int
    title: str
    breadcrumb: str
    pages: Annotated[list[int] | None, Default(None)]
    cite: Annotated[str | None, Default(None)]
    source: str
    collection: str
    score: float
    content: str
    explain: Annotated[dict[str, Any] | None, Default(None)]


class KbSearchJson(TypedDict):
    # search_kb's answer.
    query: str
    pinned_collections: list[str]
    results: list[KbHitJson]


class KbReadJson(TypedDict):
    # read_kb's answer.
    doc: str
    title: str
    chunks: list[int]
    pages: Annotated[list[int] | None, Default(None)]
    cite: Annotated[str | None, Default(None)]
    tokens: int
    next_chunk: int | None
    content: str


class SyncPassJson(TypedDict):
    # What one pass over a synced source did (kb/sync/passes.py).
    source: SyncSourceJson
    added: int
    updated: int
    unchanged: int
    renamed: int
    removed: int
    skipped: int
    failed: int
    erased: int
    seconds: float
    error: str | None


class HealthJson(TypedDict):
    # Liveness.
    status: Literal["ok"]
    version: str


class EvalCaseJson(TypedDict):
    # An evaluation case (evaluation/model.py).
    id: str
    question: str
    expected: list[str]
    noise: list[str]
    created_at: str


class EvalScoreJson(TypedDict):
    # A case's score.
    id: str
    question: str
    expected: list[str]
    noise: list[str]
    recall_at_k: float | None
    found_in_top_k: list[str]
    block_recall: float | None
    found_in_block: list[str]
    noise_in_block: list[str]
    inactive: list[str]


class EvalOverallJson(TypedDict):
    # The scores over every case.
    cases: int
    recall_at_k: float | None
    block_recall: float | None
    noise_in_block: int
    noise_total: int


class EvalReportJson(TypedDict):
    # One scoring of the evaluation set.
    label: str
    note: str
    k: int
    overall: EvalOverallJson
    cases: list[EvalScoreJson]


class EvalRunJson(TypedDict):
    # The current settings' report and, with overrides, the candidate's.
    baseline: EvalReportJson
    candidate: EvalReportJson | None


def list_of(model: type[BaseModel]) -> Any:
    """A route's ``response_model`` for a list of ``model``."""
    return list[model]  # type: ignore[valid-type]


# ------------------------------------------------------------------ the models the routes name

MemoryOut = response_model(MemoryJson)
AuditOut = response_model(AuditJson)
ShowOut = response_model(ShowJson)
WriteOut = response_model(results.WriteJson)
SplitOut = response_model(results.SplitJson)
ReviewItemOut = response_model(results.ReviewItemJson)
ObservationOut = response_model(results.ObservationJson)
ChatImportOut = response_model(ChatImportJson)
RecallOut = response_model(results.RecallJson)
ContextOut = response_model(ContextJson)
SearchItemOut = response_model(results.SearchItemJson)
ConsolidationOut = response_model(results.ConsolidationJson)
ForgetOut = response_model(ForgetJson)
DocumentOut = response_model(DocumentJson)
IngestOut = response_model(IngestJson)
KbSearchOut = response_model(KbSearchJson)
KbReadOut = response_model(KbReadJson)
HealthOut = response_model(HealthJson)
SyncSourceOut = response_model(SyncSourceJson)
SyncPassOut = response_model(SyncPassJson)
EvalCaseOut = response_model(EvalCaseJson)
EvalRunOut = response_model(EvalRunJson)
