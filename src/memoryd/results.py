"""What the memory service hands back: write outcomes, review items, queued jobs, consolidation
reports, recall blocks and search lists, each with its JSON shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict, cast

from memoryd.consolidation.policy import Step
from memoryd.jobs.model import Job
from memoryd.json_shapes import Default, Described
from memoryd.memory.model import Memory, MemoryJson
from memoryd.memory.promotion_policy import Outcome
from memoryd.recall.bounds_policy import BoundedQuery
from memoryd.recall.evidence_policy import QueryFacts
from memoryd.recall.pack_policy import Packed
from memoryd.recall.score_policy import Dropped, Scored
from memoryd.recall.time_window_policy import TimeWindow

if TYPE_CHECKING:
    from memoryd.kb.service import IngestResult
    from memoryd.kb.vector_fill import FillReport

# ------------------------------------------------------------------ JSON shapes (json_shapes.py)


class WriteJson(TypedDict):
    # What one remembered or proposed item became.
    outcome: str
    reason: str
    rule: str
    memory: MemoryJson | None
    replaced: Annotated[
        list[MemoryJson],
        Default([]),
        Described("the memories this write superseded (a fact slot's old value)"),
    ]


class ReviewItemJson(TypedDict):
    # A pending memory of the review queue.
    pending: MemoryJson
    reason: Annotated[
        str | None,
        Default(None),
        Described("why it waits for the owner (the promotion policy's reason)"),
    ]
    rule: Annotated[str | None, Default(None)]
    would_replace: Annotated[
        MemoryJson | None,
        Default(None),
        Described("the active fact of the same slot that confirming supersedes"),
    ]
    would_supersede: Annotated[MemoryJson | None, Default(None), Described("same as would_replace")]


class SplitJson(TypedDict):
    # A fact given its own slot back.
    memory: MemoryJson
    was_same_slot_as: str
    restored: MemoryJson | None


class ObservationJson(TypedDict):
    # What a trigger did.
    queued: bool
    job_id: str | None
    notice: str | None


class ConsolidationStepJson(TypedDict):
    # One planned or done step of a consolidation run.
    stage: str
    memory_id: str
    action: str
    reason: str
    new_confidence: float | None


class ConsolidationJson(TypedDict):
    # ``consolidate --json``.
    dry_run: bool
    stages: dict[str, str]
    steps: list[ConsolidationStepJson]


class RecallItemJson(TypedDict):
    # A lesson or a memory of the block (a lesson has no score, legs or gates).
    id: str
    kind: str
    content: str
    score: float | None
    legs: dict[str, int]
    gates: NotRequired[Annotated[list[str], Default([])]]
    cosine: NotRequired[Annotated[float | None, Default(None)]]
    recency: NotRequired[Annotated[float | None, Default(None)]]
    weight: NotRequired[Annotated[float | None, Default(None)]]
    # The calibrated relevance and each feature's share of its logit (recall's explain).
    relevance: NotRequired[Annotated[float | None, Default(None)]]
    contributions: NotRequired[Annotated[dict[str, float], Default({})]]
    section: str
    importance: NotRequired[Annotated[str | None, Default(None)]]


class RecallDropJson(TypedDict):
    # A memory recall left out, and why.
    id: str
    reason: str
    relevance: NotRequired[Annotated[float | None, Default(None)]]
    contributions: NotRequired[Annotated[dict[str, float], Default({})]]


class TimeWindowJson(TypedDict):
    # The dates a message named.
    phrase: str
    start: str
    end: str


class MessageReadJson(TypedDict):
    """The part of the message recall read: all of it, or its start and its end."""

    chars: int
    whole: bool
    head_chars: int
    tail_chars: int
    read: str
    question: NotRequired[Annotated[str | None, Default(None)]]


class RecallQueryJson(TypedDict):
    # What recall made of the message.
    words: dict[str, int | None]
    unknown_names: list[str]
    read: Annotated[MessageReadJson | None, Default(None)]


class RecallJson(TypedDict):
    # ``recall --json``.
    text: str
    tokens: int
    items: list[RecallItemJson]
    dropped: list[RecallDropJson]
    legs: dict[str, str]
    time_window: TimeWindowJson | None
    query: RecallQueryJson
    silence: str | None


class SearchItemJson(MemoryJson):
    # ``search --json``: a memory with its score and its rank in each leg.
    score: float
    legs: dict[str, int]


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class WriteResult:
    """What one remembered or proposed item became."""

    outcome: Outcome
    reason: str
    rule: str
    memory: Memory | None
    # The memories this write superseded (a fact slot's earlier value), as they are now.
    replaced: tuple[Memory, ...] = ()

    def to_json(self) -> WriteJson:
        """The ``propose --json`` item shape."""
        return {
            "outcome": self.outcome.value,
            "reason": self.reason,
            "rule": self.rule,
            "memory": self.memory.to_json() if self.memory else None,
            "replaced": [memory.to_json() for memory in self.replaced],
        }


@dataclass(frozen=True)
class ReviewItem:
    """A pending memory, why it waits for the owner (the promotion policy's reason, from its
    ``create`` audit entry) and the active fact it would replace if confirmed."""

    pending: Memory
    would_replace: Memory | None
    reason: str | None = None
    rule: str | None = None

    def to_json(self) -> ReviewItemJson:
        """JSON shape for the review queue (``would_supersede`` repeats ``would_replace`` for
        clients written before it)."""
        replaced = self.would_replace.to_json() if self.would_replace else None
        return {
            "pending": self.pending.to_json(),
            "reason": self.reason,
            "rule": self.rule,
            "would_replace": replaced,
            "would_supersede": replaced,
        }


@dataclass(frozen=True)
class SplitResult:
    """A fact given its own slot back: the fact as it is now, the predicate whose slot it had
    joined, and the fact it had replaced there, active again (None when nothing was)."""

    memory: Memory
    was_same_slot_as: str
    restored: Memory | None = None

    def to_json(self) -> SplitJson:
        """JSON shape of ``split`` (CLI ``--json`` and the HTTP API)."""
        return {
            "memory": self.memory.to_json(),
            "was_same_slot_as": self.was_same_slot_as,
            "restored": self.restored.to_json() if self.restored else None,
        }


@dataclass(frozen=True)
class Observation:
    """What a trigger did: queued a job for background extraction, or explained why not."""

    queued: bool
    job_id: str | None
    notice: str | None = None

    def to_json(self) -> ObservationJson:
        """JSON shape for the CLI and API."""
        return {"queued": self.queued, "job_id": self.job_id, "notice": self.notice}


@dataclass(frozen=True)
class JobReport:
    """What running one job did."""

    job: Job
    results: tuple[WriteResult, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON shape: the job and the outcome of each proposal it produced."""
        return {**self.job.to_json(), "outcomes": [r.to_json() for r in self.results]}


@dataclass(frozen=True)
class ConsolidationReport:
    """What a consolidation run planned (dry run) or did, stage by stage."""

    dry_run: bool
    steps: tuple[Step, ...]
    stages: dict[str, str]

    def to_json(self) -> ConsolidationJson:
        """``consolidate --json``."""
        return {
            "dry_run": self.dry_run,
            "stages": dict(self.stages),
            "steps": [
                {
                    "stage": step.stage.value,
                    "memory_id": step.memory_id,
                    "action": step.action.value,
                    "reason": step.reason,
                    "new_confidence": step.new_confidence,
                }
                for step in self.steps
            ],
        }


@dataclass(frozen=True)
class RecallResult:
    """The packed block plus everything needed to explain it: why items were dropped, each
    leg's state, the time window, what recall made of the message, and why the memories
    section is empty when it is (``silence``)."""

    packed: Packed
    dropped: tuple[Dropped, ...]
    legs: dict[str, str]
    window: TimeWindow | None
    facts: QueryFacts = field(default_factory=QueryFacts)
    silence: str | None = None
    # The part of the message recall read (all of it unless it is long).
    read: BoundedQuery | None = None

    @property
    def text(self) -> str:
        """The fenced block to put at the tail of the prompt ("" when nothing qualifies)."""
        return self.packed.text

    def to_json(self) -> RecallJson:
        """The ``recall --json`` shape."""
        items = [_lesson_json(m) for m in self.packed.lessons]
        items.extend(_scored_json(s) for s in self.packed.items)
        return {
            "text": self.packed.text,
            "tokens": self.packed.tokens,
            "items": items,
            "dropped": [_dropped_json(d) for d in self.dropped],
            "legs": dict(self.legs),
            "time_window": {
                "phrase": self.window.phrase,
                "start": self.window.start.isoformat(),
                "end": self.window.end.isoformat(),
            }
            if self.window
            else None,
            "query": {
                "words": {w: self.facts.word_frequency.get(w) for w in self.facts.words},
                "unknown_names": list(self.facts.unknown_names),
                "read": cast(MessageReadJson, self.read.to_json()) if self.read else None,
            },
            "silence": self.silence,
        }


@dataclass(frozen=True)
class SearchResult:
    """A ranked list from ``search_memory``."""

    items: tuple[Scored, ...]
    legs: dict[str, str]
    # The part of the query that was searched (all of it unless it is long).
    read: BoundedQuery | None = None

    def to_json(self) -> list[SearchItemJson]:
        """``search --json``: memory objects with ``score`` and per-leg ranks."""
        return [
            {**s.memory.to_json(), "score": round(s.score, 6), "legs": dict(s.ranks)}
            for s in self.items
        ]


def _scored_json(scored: Scored) -> RecallItemJson:
    return {
        "id": scored.memory.id,
        "kind": scored.memory.kind.value,
        "content": scored.memory.content,
        "score": round(scored.score, 6),
        "legs": dict(scored.ranks),
        "gates": list(scored.gates),
        "cosine": None if scored.cosine is None else round(scored.cosine, 4),
        "recency": round(scored.recency, 4),
        "weight": round(scored.weight, 4),
        "relevance": round(scored.relevance, 4),
        "contributions": {k: round(v, 4) for k, v in scored.contributions.items()},
        "section": "memories",
    }


def _dropped_json(dropped: Dropped) -> RecallDropJson:
    shaped: RecallDropJson = {"id": dropped.memory_id, "reason": dropped.reason}
    if dropped.relevance is not None:
        shaped["relevance"] = round(dropped.relevance, 4)
        shaped["contributions"] = {k: round(v, 4) for k, v in dropped.contributions.items()}
    return shaped


def _lesson_json(memory: Memory) -> RecallItemJson:
    return {
        "id": memory.id,
        "kind": memory.kind.value,
        "content": memory.content,
        "score": None,
        "legs": {},
        "importance": memory.importance.value if memory.importance else None,
        "section": "lessons",
    }


@dataclass(frozen=True)
class WorkRound:
    """One round of the worker: the extraction jobs, document retries and vector fills it
    ran, and the queue's counts by status afterwards."""

    reports: tuple[JobReport, ...]
    retried: tuple[IngestResult, ...]
    queue: dict[str, int]
    filled: tuple[FillReport, ...] = ()

    @property
    def ran(self) -> int:
        """How many jobs (extractions, retries and documents' vectors) this round ran."""
        return len(self.reports) + len(self.retried) + len(self.filled)

    @property
    def vectors(self) -> int:
        """How many document chunks this round embedded."""
        return sum(filled.embedded for filled in self.filled)
