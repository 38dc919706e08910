"""Typed response models of the HTTP API: the JSON shapes the routes return (each route's
``response_model``), documented in the OpenAPI document."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class MemoryOut(BaseModel):
    id: str
    kind: str
    status: str
    content: str
    confidence: float
    subject: str | None
    predicate: str | None
    object: str | None
    slot: str | None
    same_slot_as: str | None
    entities: list[str]
    importance: str | None
    changes_behavior: bool
    occurred_at: str | None
    source: str
    source_ref: str | None
    extractor_model: str | None
    prompt_version: str | None
    created_at: str | None
    last_confirmed_at: str | None
    last_retrieved_at: str | None
    retrieval_hits: int
    supersedes: str | None
    superseded_by: str | None
    purged: bool
    purged_at: str | None


class AuditOut(BaseModel):
    memory_id: str
    at: str | None
    actor: str
    rule: str | None
    action: str
    from_status: str | None
    to_status: str
    reason: str


class ShowOut(MemoryOut):
    chain: list[MemoryOut]
    audit: list[AuditOut]


class WriteOut(BaseModel):
    outcome: str
    reason: str
    rule: str
    memory: MemoryOut | None
    replaced: list[MemoryOut] = Field(
        default=[], description="the memories this write superseded (a fact slot's old value)"
    )


class SplitOut(BaseModel):
    memory: MemoryOut
    was_same_slot_as: str
    restored: MemoryOut | None


class ReviewItemOut(BaseModel):
    pending: MemoryOut
    reason: str | None = Field(
        default=None, description="why it waits for the owner (the promotion policy's reason)"
    )
    rule: str | None = None
    would_replace: MemoryOut | None = Field(
        default=None, description="the active fact of the same slot that confirming supersedes"
    )
    would_supersede: MemoryOut | None = Field(default=None, description="same as would_replace")


class ObservationOut(BaseModel):
    queued: bool
    job_id: str | None
    notice: str | None


class ChatImportOut(BaseModel):
    format: Literal["chatgpt", "claude"]
    conversations: int
    conversations_queued: int
    turns_queued: int
    skipped_already_imported: int
    skipped_empty_or_unsupported: int
    first_at: str | None
    last_at: str | None
    dry_run: bool


class RecallItemOut(BaseModel):
    id: str
    kind: str
    content: str
    score: float | None
    legs: dict[str, int]
    gates: list[str] = []
    cosine: float | None = None
    recency: float | None = None
    weight: float | None = None
    # The calibrated relevance and each feature's share of its logit (recall's explain).
    relevance: float | None = None
    contributions: dict[str, float] = {}
    section: str
    importance: str | None = None


class RecallDropOut(BaseModel):
    id: str
    reason: str
    relevance: float | None = None
    contributions: dict[str, float] = {}


class TimeWindowOut(BaseModel):
    phrase: str
    start: str
    end: str


class MessageReadOut(BaseModel):
    """The part of the message recall read: all of it, or its start and its end."""

    chars: int
    whole: bool
    head_chars: int
    tail_chars: int
    read: str
    question: str | None = None


class RecallQueryOut(BaseModel):
    words: dict[str, int | None]
    unknown_names: list[str]
    read: MessageReadOut | None = None


class RecallOut(BaseModel):
    text: str
    tokens: int
    items: list[RecallItemOut]
    dropped: list[RecallDropOut]
    legs: dict[str, str]
    time_window: TimeWindowOut | None
    query: RecallQueryOut
    silence: str | None


class ContextItemOut(BaseModel):
    """A lesson, a memory or a document chunk of the pack (chunks carry their fenced text)."""

    type: Literal["lesson", "memory", "chunk"]
    id: str
    score: float | None
    content: str
    importance: str | None = None
    memory_kind: str | None = None
    doc: str | None = None
    chunk: int | None = None
    title: str | None = None
    source: str | None = None
    pages: list[int] | None = None
    cite: str | None = None
    explain: dict[str, Any] | None = None


class ContextDropOut(BaseModel):
    type: Literal["lesson", "memory", "chunk"]
    id: str
    reason: str


class ContextOut(BaseModel):
    text: str
    tokens: int
    budget: int
    items: list[ContextItemOut]
    dropped: list[ContextDropOut]
    legs: dict[str, str]
    silence: str | None


class SearchItemOut(MemoryOut):
    score: float
    legs: dict[str, int]


class ConsolidationStepOut(BaseModel):
    stage: str
    memory_id: str
    action: str
    reason: str
    new_confidence: float | None


class ConsolidationOut(BaseModel):
    dry_run: bool
    stages: dict[str, str]
    steps: list[ConsolidationStepOut]


class ForgetRequestOut(BaseModel):
    entity: str | None
    query: str | None


class ForgottenMemoryOut(BaseModel):
    id: str
    status: str
    kind: str
    preview: str
    why: str


class ForgottenChunkOut(BaseModel):
    document_id: str
    chunk: int
    preview: str
    why: str


class ForgottenDocumentOut(BaseModel):
    id: str
    title: str
    chunks: int
    matching_chunks: list[int]


class ForgetOut(BaseModel):
    request: ForgetRequestOut
    summary: str
    names: list[str]
    dry_run: bool
    erased: bool
    request_id: str | None
    at: str
    memories: list[ForgottenMemoryOut]
    chunks: list[ForgottenChunkOut]
    documents: list[ForgottenDocumentOut]


class DocumentOut(BaseModel):
    id: str
    source_uri: str
    collection: str
    source_type: str
    title: str
    status: str
    error: str | None
    content_hash: str | None
    document_type: str | None
    chunks: int
    tokens: int
    images_read: int
    redactions: int = 0
    bytes: int
    created_at: str
    updated_at: str
    embedded_chunks: int | None = Field(
        default=None, description="chunks whose vector is stored; the rest are keyword-only"
    )
    embedding: str | None = Field(
        default=None, description='"embedding 120/347" while the worker fills the vectors'
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="what the document says about itself: a Markdown note's front matter, "
        "#tags and [[wiki links]]",
    )


class IngestOut(BaseModel):
    source: str
    outcome: Literal["ok", "skipped", "queued", "failed"]
    reason: str | None
    document: DocumentOut | None
    seconds: float
    searchable_seconds: float | None = Field(
        default=None, description="seconds until the chunks were written (keyword-searchable)"
    )


class KbHitOut(BaseModel):
    doc: str
    chunk: int
    title: str
    breadcrumb: str
    pages: list[int] | None = None
    cite: str | None = None
    source: str
    collection: str
    score: float
    content: str
    explain: dict[str, Any] | None = None


class KbSearchOut(BaseModel):
    query: str
    pinned_collections: list[str]
    results: list[KbHitOut]


class KbReadOut(BaseModel):
    doc: str
    title: str
    chunks: list[int]
    pages: list[int] | None = None
    cite: str | None = None
    tokens: int
    next_chunk: int | None
    content: str


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str


class EvalCaseOut(BaseModel):
    id: str
    question: str
    expected: list[str]
    noise: list[str]
    created_at: str


class EvalScoreOut(BaseModel):
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


class EvalOverallOut(BaseModel):
    cases: int
    recall_at_k: float | None
    block_recall: float | None
    noise_in_block: int
    noise_total: int


class EvalReportOut(BaseModel):
    label: str
    note: str
    k: int
    overall: EvalOverallOut
    cases: list[EvalScoreOut]


class EvalRunOut(BaseModel):
    baseline: EvalReportOut
    candidate: EvalReportOut | None
