"""The strict proposal contract (SPEC §3): one malformed item rejects the whole batch."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memoryd.clock import parse_instant
from memoryd.errors import InvalidInputError, ProposalBatchError
from memoryd.memory.model import Importance, Kind, Proposal, parse_kind
from memoryd.words import has_lone_surrogate

REQUIRED_FIELDS = ("kind", "content", "confidence", "changes_behavior")
OPTIONAL_FIELDS = (
    "general_knowledge",
    "subject",
    "predicate",
    "object",
    "entities",
    "occurred_at",
    "importance",
    "cues",
)
ALLOWED_FIELDS = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)
MAX_CONTENT_CHARS = 2_000
MAX_ITEMS = 100
MAX_ENTITIES = 32
MAX_CUES = 8
MAX_CUE_CHARS = 40
SCHEMA_NAME = "memory_proposals"


def contract_schema(*, cues: bool = True) -> dict[str, Any]:
    """The proposal contract as a JSON Schema, for endpoints that constrain their output to one
    (OpenAI structured outputs, llama.cpp, Ollama, vLLM, Anthropic).

    Built from the validator's own field lists, limits and enums. Its shape is what strict
    structured-output modes require: every field present, null where it does not apply — a
    subset of what :func:`parse_batch` accepts. Keywords are kept to those every such endpoint
    supports, so what a schema cannot say everywhere (non-empty text, ISO dates, the content
    length) is still checked by the validator, with its one retry. Without ``cues`` (a prompt
    on a contract older than v3, whose worked examples carry none) the search cues are left out.
    """

    def nullable(schema: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [schema, {"type": "null"}]}

    text = {"type": "string"}
    fields: dict[str, dict[str, Any]] = {
        "kind": {"type": "string", "enum": [kind.value for kind in Kind]},
        "content": {
            "type": "string",
            "description": f"one self-contained sentence, at most {MAX_CONTENT_CHARS} characters",
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "changes_behavior": {"type": "boolean"},
        "general_knowledge": {"type": "boolean"},
        "subject": nullable(text),
        "predicate": nullable(text),
        "object": nullable(text),
        "entities": nullable({"type": "array", "items": text, "maxItems": MAX_ENTITIES}),
        "occurred_at": nullable({"type": "string", "description": "ISO-8601 date, YYYY-MM-DD"}),
        "importance": nullable({"type": "string", "enum": [i.value for i in Importance]}),
        "cues": nullable(
            {
                "type": "array",
                "items": text,
                "maxItems": MAX_CUES,
                "description": "words a person would use when asking about this later",
            }
        ),
    }
    order = tuple(f for f in REQUIRED_FIELDS + OPTIONAL_FIELDS if cues or f != "cues")
    item = {
        "type": "object",
        "properties": {name: fields[name] for name in order},
        "required": list(order),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"memories": {"type": "array", "items": item, "maxItems": MAX_ITEMS}},
        "required": ["memories"],
        "additionalProperties": False,
    }


def parse_batch_text(text: str) -> tuple[Proposal, ...]:
    """Parse the raw text of a batch; a non-JSON text is a batch error that says so."""
    if not text.strip():
        # A small model's empty answer: "Expecting value at line 1 column 1" says less.
        raise ProposalBatchError('proposal batch is empty; send an object like {"memories": [...]}')
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProposalBatchError(
            f"proposal batch is not valid JSON ({error.msg} at line {error.lineno} column "
            f'{error.colno}); send an object like {{"memories": [...]}}'
        ) from None
    except (ValueError, RecursionError) as error:
        # Over-long integers and absurd nesting: still the model's malformed output.
        raise ProposalBatchError(
            f"proposal batch could not be decoded ({type(error).__name__}: {error}); send a "
            'plain object like {"memories": [...]}'
        ) from None
    return parse_batch(document)


def parse_batch(document: object) -> tuple[Proposal, ...]:
    """Validate a decoded batch ``{"memories": [...]}`` into proposals, all or nothing."""
    if has_lone_surrogate(document):
        raise ProposalBatchError(
            "proposal batch holds invalid Unicode (a lone surrogate such as \\ud800); send "
            "well-formed UTF-8 text"
        )
    if not isinstance(document, dict):
        raise ProposalBatchError(
            'proposal batch must be a JSON object {"memories": [...]}, got '
            f"{_json_type(document)}"
        )
    extra = sorted(set(document) - {"memories"})
    if extra:
        raise ProposalBatchError(
            f"proposal batch has unknown top-level field {extra[0]!r}; only 'memories' is allowed",
            field=extra[0],
        )
    items = document.get("memories")
    if not isinstance(items, list):
        raise ProposalBatchError(
            "proposal batch needs 'memories' as an array of items", field="memories"
        )
    if len(items) > MAX_ITEMS:
        raise ProposalBatchError(
            f"proposal batch has {len(items)} items; split it into batches of at most {MAX_ITEMS}",
            field="memories",
        )
    return tuple(_parse_item(index, item) for index, item in enumerate(items))


def _parse_item(index: int, item: object) -> Proposal:
    def fail(field: str, problem: str) -> ProposalBatchError:
        return ProposalBatchError(
            f"proposal item {index}, field {field!r}: {problem}; the whole batch was rejected",
            item=index,
            field=field,
        )

    if not isinstance(item, dict):
        raise ProposalBatchError(
            f"proposal item {index} must be an object, got {_json_type(item)}; "
            "the whole batch was rejected",
            item=index,
        )
    for key in item:
        if key not in ALLOWED_FIELDS:
            raise fail(
                str(key), "unknown field (allowed: " + ", ".join(sorted(ALLOWED_FIELDS)) + ")"
            )
    for key in REQUIRED_FIELDS:
        if key not in item:
            raise fail(key, "is required")

    raw_kind = item["kind"]
    if not isinstance(raw_kind, str):
        raise fail("kind", "must be one of fact, event, lesson, inference")
    try:
        kind = parse_kind(raw_kind)
    except ValueError:
        raise fail("kind", f"{raw_kind!r} is not one of fact, event, lesson, inference") from None

    content = item["content"]
    if not isinstance(content, str) or not content.strip():
        raise fail("content", "must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise fail("content", f"is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}")

    confidence = item["confidence"]
    # Plain comparisons: they reject NaN and infinities, and never overflow on huge integers.
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise fail("confidence", "must be a number from 0 to 1")

    changes_behavior = item["changes_behavior"]
    if not isinstance(changes_behavior, bool):
        raise fail("changes_behavior", "must be true or false")
    general_knowledge = item.get("general_knowledge", False)
    if not isinstance(general_knowledge, bool):
        raise fail("general_knowledge", "must be true or false")

    texts: dict[str, str | None] = {}
    for key in ("subject", "predicate", "object"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise fail(key, "must be a non-empty string or null")
        texts[key] = value.strip() if isinstance(value, str) else None

    entities_raw = item.get("entities", [])
    if entities_raw is None:
        entities_raw = []
    if not isinstance(entities_raw, list) or not all(
        isinstance(e, str) and e.strip() for e in entities_raw
    ):
        raise fail("entities", "must be an array of non-empty strings")
    if len(entities_raw) > MAX_ENTITIES:
        raise fail("entities", f"has more than {MAX_ENTITIES} names")

    cues = _parse_cues(item.get("cues"), fail)

    occurred_raw = item.get("occurred_at")
    occurred_at = None
    if occurred_raw is not None:
        if not isinstance(occurred_raw, str):
            raise fail("occurred_at", "must be an ISO-8601 date or time string")
        try:
            occurred_at = parse_instant(occurred_raw, what="occurred_at")
        except InvalidInputError:
            raise fail("occurred_at", f"{occurred_raw!r} is not an ISO-8601 date or time") from None

    importance_raw = item.get("importance")
    importance = None
    if importance_raw is not None:
        try:
            importance = Importance(importance_raw)
        except ValueError:
            raise fail("importance", "must be one of low, medium, high, critical") from None

    return Proposal(
        kind=kind,
        content=content.strip(),
        confidence=float(confidence),
        changes_behavior=changes_behavior,
        general_knowledge=general_knowledge,
        subject=texts["subject"],
        predicate=texts["predicate"],
        object=texts["object"],
        entities=tuple(dict.fromkeys(e.strip() for e in entities_raw)),
        occurred_at=occurred_at,
        importance=importance,
        cues=cues,
    )


def cues_schema() -> dict[str, Any]:
    """The answer of the consolidation stage that writes cues: ``{"cues": [...]}``."""
    cues = {"type": "array", "items": {"type": "string"}, "maxItems": MAX_CUES}
    return {
        "type": "object",
        "properties": {"cues": cues},
        "required": ["cues"],
        "additionalProperties": False,
    }


def merge_schema() -> dict[str, Any]:
    """The answer of the consolidation stage that merges near-duplicates: ``{"content": "..."}``
    (what :func:`memoryd.extraction.extractor.parse_merge` reads)."""
    content = {
        "type": "string",
        "description": f"one self-contained sentence, at most {MAX_CONTENT_CHARS} characters",
    }
    return {
        "type": "object",
        "properties": {"content": content},
        "required": ["content"],
        "additionalProperties": False,
    }


def parse_cues_answer(text: str) -> tuple[str, ...]:
    """The cues in a model's ``{"cues": [...]}`` answer, bounded and checked as a proposal's."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise ProposalBatchError('the cues answer is not JSON; expected {"cues": [...]}') from None
    if not isinstance(document, dict) or set(document) != {"cues"}:
        raise ProposalBatchError('the cues answer must be exactly {"cues": [...]}')

    def fail(field: str, problem: str) -> ProposalBatchError:
        return ProposalBatchError(f"the cues answer: {field!r} {problem}", field=field)

    return _parse_cues(document["cues"], fail)


def _parse_cues(raw: object, fail: Callable[[str, str], ProposalBatchError]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(c, str) and c.strip() for c in raw):
        raise fail("cues", "must be an array of non-empty strings or null")
    if len(raw) > MAX_CUES:
        raise fail("cues", f"has {len(raw)} cues; the limit is {MAX_CUES}")
    long = next((c for c in raw if len(c.strip()) > MAX_CUE_CHARS), None)
    if long is not None:
        raise fail("cues", f"{long[:50]!r} is longer than {MAX_CUE_CHARS} characters")
    # A cue without a letter or digit ("...", a small model's filler) can match nothing.
    words = (" ".join(c.split()) for c in raw)
    return tuple(dict.fromkeys(c for c in words if any(ch.isalnum() for ch in c)))


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"
