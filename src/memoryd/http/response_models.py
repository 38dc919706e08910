"""Typed response models of the HTTP API: the JSON shapes the routes return (each route's
``response_model``), documented in the OpenAPI document.

Each model is made from the shape's ``TypedDict`` (see json_shapes.py), declared beside the
record whose ``to_json`` builds it (only the health check's is here), so a key added to a record's
shape is in its model and in the OpenAPI document with no second edit."""

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
from memoryd.evaluation.model import EvalCaseJson
from memoryd.evaluation.run import EvalRunJson
from memoryd.extraction.chat_import import ChatImportJson
from memoryd.json_shapes import CliOnly, Default, Described
from memoryd.kb.model import DocumentJson
from memoryd.kb.results import IngestJson, KbReadJson, KbSearchJson
from memoryd.kb.sync.model import SyncSourceJson
from memoryd.kb.sync.passes import SyncPassJson
from memoryd.memory.forget_policy import ForgetJson
from memoryd.memory.model import AuditJson, MemoryJson, ShowJson
from memoryd.recall.context_policy import ContextJson

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


# ------------------------------------------------------------ the one shape built here


class HealthJson(TypedDict):
    # Liveness.
    status: Literal["ok"]
    version: str


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
