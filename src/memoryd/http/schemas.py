"""Typed request models of the HTTP API (with response_models.py, they make the OpenAPI
document): strict (no unknown field), bounded, and refusing invalid Unicode."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memoryd.words import has_lone_surrogate

Text = Field(min_length=1, max_length=20_000)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _no_lone_surrogates(self) -> Self:
        # JSON can carry "\\ud800", which no encoder, tokenizer or database accepts.
        if has_lone_surrogate(list(self.__dict__.values())):
            raise ValueError("the body holds invalid Unicode (a lone surrogate such as \\ud800)")
        return self


def _well_formed(value: Any) -> Any:
    if has_lone_surrogate(value):
        raise ValueError("holds invalid Unicode (a lone surrogate)")
    return value


# ------------------------------------------------------------------ requests


class RememberRequest(_Strict):
    content: str = Field(min_length=1, max_length=2000)
    kind: Literal["fact", "event", "lesson", "inference"] = "fact"
    subject: str | None = Field(default=None, max_length=200)
    predicate: str | None = Field(default=None, max_length=200)
    object: str | None = Field(default=None, max_length=500)
    entities: list[str] = Field(default_factory=list, max_length=32)
    importance: Literal["low", "medium", "high", "critical"] | None = None
    changes_behavior: bool = False
    occurred_at: str | None = Field(default=None, description="ISO-8601 date or time")


class ProposeRequest(_Strict):
    memories: list[dict[str, Any]] = Field(min_length=1, max_length=50)
    source: Literal[
        "turn",
        "compaction",
        "mission",
        "reflection",
        "remember",
        "owner",
        "document",
        "web",
        "tool",
        "import",
    ] = "turn"
    source_ref: str | None = Field(default=None, max_length=500)

    _memories_well_formed = field_validator("memories")(_well_formed)


class EditRequest(_Strict):
    content: str = Field(min_length=1, max_length=2000)
    object: str | None = Field(default=None, max_length=500)


class OwnerActionRequest(_Strict):
    """No fields: an owner action happens now, by the server's clock (a body never dates one;
    a token holder must not be able to backdate the audit trail)."""


LOCAL_TIME = "ISO-8601; without an offset, the owner's local time (MEMORYD_TZ); default now"


class ObserveRequest(_Strict):
    user: str = Field(min_length=1, max_length=50_000)
    summary: str | None = Field(default=None, max_length=20_000)
    at: str | None = Field(default=None, description=f"when the turn happened: {LOCAL_TIME}")


class Turn(_Strict):
    role: str = Field(min_length=1, max_length=32)
    content: str = Field(min_length=1, max_length=50_000)
    at: str | None = Field(default=None, description=f"when the turn happened: {LOCAL_TIME}")


class CompactionRequest(_Strict):
    turns: list[Turn] = Field(min_length=1, max_length=500)


class MissionRequest(_Strict):
    title: str = Field(min_length=1, max_length=500)
    goal: str = Field(default="", max_length=5000)
    outcome: str = Field(min_length=1, max_length=50_000)
    finished_at: str | None = Field(
        default=None, description=f"when the mission finished: {LOCAL_TIME}"
    )


class RecallRequest(_Strict):
    # A pasted document is a fair message: recall reads its start and end (query_bounds.py);
    # the 1 MB body limit bounds the rest.
    message: str = Field(min_length=1, max_length=1_000_000)
    budget: int | None = Field(default=None, ge=0, le=32_000)


class ContextRequest(RecallRequest):
    explain: bool = False


class SearchRequest(_Strict):
    query: str = Field(min_length=1, max_length=2000)
    kind: Literal["fact", "event", "lesson", "inference"] | None = None
    since: str | None = None
    until: str | None = None
    limit: int = Field(default=10, ge=1, le=200)


class ConsolidateRequest(_Strict):
    dry_run: bool = False


class ForgetRequest(_Strict):
    entity: str | None = Field(default=None, min_length=1, max_length=200)
    query: str | None = Field(default=None, min_length=1, max_length=200)
    dry_run: bool = False


class KbIngestRequest(_Strict):
    sources: list[str] = Field(
        min_length=1, max_length=1000, description="paths on the server's disk, or http(s) URLs"
    )
    collection: str = "default"
    source_type: Literal["curated", "mission", "web"] | None = Field(
        default=None, description="default: web for URLs, curated for files"
    )


class KbSearchRequest(_Strict):
    query: str = Field(min_length=1, max_length=2000)
    pinned_collections: list[str] = Field(default_factory=list, max_length=20)
    limit: int = Field(default=5, ge=1, le=20)
    explain: bool = False


class KbReadRequest(_Strict):
    doc: str = Field(min_length=1, max_length=64)
    section: str | None = Field(default=None, max_length=300)
    chunks: str | None = Field(default=None, pattern=r"^[0-9]+(-[0-9]+)?$")
    pages: str | None = Field(default=None, pattern=r"^[0-9]+(-[0-9]+)?$")
    max_tokens: int = Field(default=2000, ge=1, le=8000)


class KbRenameRequest(_Strict):
    title: str = Field(min_length=1, max_length=200)


class ToolCallRequest(_Strict):
    name: Literal["remember", "search_memory", "search_kb", "read_kb"]
    arguments: dict[str, Any] = Field(default_factory=dict)
    pinned_collections: list[str] = Field(default_factory=list, max_length=20)
    session: str | None = Field(
        default=None,
        description="the conversation's id: after search_kb or read_kb content (or an "
        "untrusted mark) in it, remember waits for the owner until a new turn",
    )
    turn: str | None = Field(
        default=None, description="the id of the owner's message being answered"
    )
    untrusted: bool = Field(
        default=False,
        description="the model read untrusted tool output (a web page, an e-mail) this turn",
    )

    _arguments_well_formed = field_validator("arguments")(_well_formed)


class EvalCaseRequest(_Strict):
    question: str = Field(min_length=1, max_length=2000)
    expect: list[str] = Field(default_factory=list, max_length=200)
    noise: list[str] = Field(default_factory=list, max_length=200)


class EvalRunRequest(_Strict):
    k: int = Field(default=5, ge=1, le=200)
    # Candidate recall settings, {"recall.vector_gate": 0.3}: a second report beside the first.
    overrides: dict[str, float | int | bool | str] = Field(default_factory=dict, max_length=50)
