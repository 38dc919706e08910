"""The memory data model (SPEC §2): kinds, statuses, sources, and the records themselves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, TypedDict

from memoryd.json_shapes import CliOnly
from memoryd.memory.slot_policy import SlotChoice, slot_key


class Kind(StrEnum):
    """What a memory is; each kind has its own write rule and lifetime."""

    FACT = "fact"
    EVENT = "event"
    LESSON = "lesson"
    INFERENCE = "inference"


KIND_ALIASES: dict[str, Kind] = {
    "semantic": Kind.FACT,
    "episodic": Kind.EVENT,
    "procedural": Kind.LESSON,
    "worldview": Kind.INFERENCE,
}


def parse_kind(value: str) -> Kind:
    """A kind from its name or alias ("semantic" → fact); ValueError when unknown."""
    lowered = value.strip().lower()
    if lowered in KIND_ALIASES:
        return KIND_ALIASES[lowered]
    return Kind(lowered)


def kind_from_user(value: str | None) -> Kind | None:
    """A kind typed by a person (CLI option, API filter), None when absent; an unknown name is
    a clear error listing the kinds."""
    if not value:
        return None
    try:
        return parse_kind(value)
    except ValueError:
        from memoryd.errors import InvalidInputError

        raise InvalidInputError(
            f"unknown kind {value!r}; use fact, event, lesson or inference"
        ) from None


class Status(StrEnum):
    """Lifecycle state. Recall only ever reads ``active``."""

    PENDING = "pending"
    ACTIVE = "active"
    REJECTED = "rejected"
    ARCHIVED = "archived"


class Source(StrEnum):
    """Where a memory came from; decides how far it is trusted."""

    TURN = "turn"
    COMPACTION = "compaction"
    MISSION = "mission"
    REFLECTION = "reflection"
    REMEMBER = "remember"
    OWNER = "owner"
    DOCUMENT = "document"
    WEB = "web"
    TOOL = "tool"
    IMPORT = "import"


# The owner's own conversation: the only sources whose proposals may activate alone.
TRUSTED_SOURCES = frozenset({Source.TURN, Source.COMPACTION, Source.OWNER})
# Content that arrived from outside the owner: never activates without an owner action.
EXTERNAL_SOURCES = frozenset({Source.DOCUMENT, Source.WEB, Source.TOOL, Source.MISSION})


class Importance(StrEnum):
    """How much a lesson matters; high and critical are always injected by recall."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Actor(StrEnum):
    """Who caused a status change, for the audit log."""

    OWNER = "owner"
    POLICY = "policy"
    TOOL = "tool"
    SYSTEM = "system"


def normalize_key(text: str) -> str:
    """Case- and space-insensitive form used to compare fact values."""
    return " ".join(text.casefold().split())


def fact_slot(subject: str, predicate: str) -> str:
    """The deterministic slot id of a fact: the same (subject, predicate), however it is
    worded ("The owner" / "owner", "lives_in" / "lives in"), always maps here
    (:mod:`memoryd.memory.slot_policy`)."""
    return slot_key(subject, predicate)


class MemoryJson(TypedDict):
    # The public JSON shape of a memory (CLI ``--json`` and the HTTP API).
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
    cues: Annotated[list[str], CliOnly()]
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


class AuditJson(TypedDict):
    # One audit entry (``show --json``).
    memory_id: str
    at: str | None
    actor: str
    rule: str | None
    action: str
    from_status: str | None
    to_status: str
    reason: str


class ShowJson(MemoryJson):
    # ``show --json``: the memory with its chain (oldest first) and its audit trail.
    chain: list[MemoryJson]
    audit: list[AuditJson]


@dataclass(frozen=True)
class Memory:
    """One stored memory row. Never edited in place: corrections supersede it."""

    id: str
    kind: Kind
    status: Status
    content: str
    source: Source
    created_at: datetime
    last_confirmed_at: datetime
    confidence: float = 1.0
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    slot: str | None = None
    entities: tuple[str, ...] = ()
    importance: Importance | None = None
    changes_behavior: bool = False
    occurred_at: datetime | None = None
    source_ref: str | None = None
    extractor_model: str | None = None
    prompt_version: str | None = None
    last_retrieved_at: datetime | None = None
    retrieval_hits: int = 0
    supersedes: str | None = None
    superseded_by: str | None = None
    purged_at: datetime | None = None
    # The predicate whose slot this fact joined through the subject's vocabulary (its own
    # predicate meant the same); None when its own predicate names its slot.
    same_slot_as: str | None = None
    # Words a person would use when asking about this memory later ("medication, allergy"):
    # searched by recall's text and vector legs, never shown as its content.
    cues: tuple[str, ...] = ()

    def to_json(self) -> MemoryJson:
        """The public JSON shape of a memory (CLI ``--json`` and the HTTP API)."""
        return {
            "id": self.id,
            "kind": self.kind.value,
            "status": self.status.value,
            "content": self.content,
            "confidence": self.confidence,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "slot": self.slot,
            "same_slot_as": self.same_slot_as,
            "entities": list(self.entities),
            "cues": list(self.cues),
            "importance": self.importance.value if self.importance else None,
            "changes_behavior": self.changes_behavior,
            "occurred_at": _iso(self.occurred_at),
            "source": self.source.value,
            "source_ref": self.source_ref,
            "extractor_model": self.extractor_model,
            "prompt_version": self.prompt_version,
            "created_at": _iso(self.created_at),
            "last_confirmed_at": _iso(self.last_confirmed_at),
            "last_retrieved_at": _iso(self.last_retrieved_at),
            "retrieval_hits": self.retrieval_hits,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "purged": self.purged_at is not None,
            "purged_at": _iso(self.purged_at),
        }


@dataclass(frozen=True)
class AuditEntry:
    """One status change: who did it, why, when."""

    memory_id: str
    at: datetime
    actor: Actor
    action: str
    from_status: Status | None
    to_status: Status
    reason: str
    rule: str | None = None

    def to_json(self) -> AuditJson:
        """JSON shape used by ``show --json``."""
        return {
            "memory_id": self.memory_id,
            "at": _iso(self.at),
            "actor": self.actor.value,
            "rule": self.rule,
            "action": self.action,
            "from_status": self.from_status.value if self.from_status else None,
            "to_status": self.to_status.value,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Proposal:
    """One validated proposal item from a batch (SPEC §3)."""

    kind: Kind
    content: str
    confidence: float
    changes_behavior: bool
    general_knowledge: bool = False
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    entities: tuple[str, ...] = ()
    occurred_at: datetime | None = None
    importance: Importance | None = None
    cues: tuple[str, ...] = ()
    # Where the subject's vocabulary placed this fact (set by the writer before the policy
    # decides); None: its own slot.
    placed: SlotChoice | None = None

    @property
    def slot(self) -> str | None:
        """The fact slot, when this is a fact with both subject and predicate."""
        if self.kind is Kind.FACT and self.subject and self.predicate:
            if self.placed is not None:
                return self.placed.slot
            return fact_slot(self.subject, self.predicate)
        return None

    @property
    def same_slot_as(self) -> str | None:
        """The predicate whose slot this fact joins, when not its own."""
        return self.placed.same_slot_as if self.placed is not None and self.slot else None


@dataclass(frozen=True)
class Provenance:
    """Where a batch came from and what produced it, stamped on every row it creates."""

    source: Source
    source_ref: str | None = None
    extractor_model: str | None = None
    prompt_version: str | None = None


@dataclass(frozen=True)
class ShowResult:
    """A memory with its whole supersede chain (oldest first) and its audit trail."""

    memory: Memory
    chain: tuple[Memory, ...] = field(default_factory=tuple)
    audit: tuple[AuditEntry, ...] = field(default_factory=tuple)

    def to_json(self) -> ShowJson:
        """``show --json``: the memory with ``chain`` (oldest first) and ``audit``."""
        return {
            **self.memory.to_json(),
            "chain": [m.to_json() for m in self.chain],
            "audit": [e.to_json() for e in self.audit],
        }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def indexed_text(memory: Memory) -> str:
    """What the full-text index holds for a memory: its content, its entity names and, for a
    fact, its predicate — the word a question uses ("what is my job?") when the content says
    it otherwise ("works as a tram driver"), and its cues, the words a later question would
    use ("medication" for a penicillin allergy)."""
    parts = [memory.content, *memory.entities, memory.predicate, *memory.cues]
    return "\n".join(part for part in parts if part)


def embedded_text(content: str, cues: Sequence[str]) -> str:
    """What a memory's stored vector is computed from: its content, then its cues (the vector
    leg meets a paraphrased question through them as the text leg does)."""
    return content + "\n" + ", ".join(cues) if cues else content
