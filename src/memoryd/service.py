"""The one front door: every operation on memories, each write in one transaction.

The service fetches what the policy needs, calls a pure ``plan_*`` function, then applies the
decision inside a transaction. Adapters (CLI, HTTP, MCP) call only this.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets as secrets_module
import socket
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from .clock import Clock, from_db, to_db, utc_now
from .consolidation import Action as ConsolidationAction
from .consolidation import (
    ConsolidationPolicy,
    Stage,
    Step,
    group_near_duplicates,
    merge_guard,
    plan_archive_episodic,
    plan_decay_inferences,
    plan_decay_semantic,
    plan_dedupe_pending,
    plan_demote_pending,
    reflection_due,
)
from .embedding import Embedder, Vector
from .entities import EntityMatcher, extract_entities
from .errors import (
    ConsolidationBusyError,
    CredentialRefusedError,
    InvalidInputError,
    InvalidOperationError,
    MemoryNotFoundError,
    ProposalBatchError,
    StoreMismatchError,
)
from .extraction import (
    TRIGGERS,
    Extractor,
    MissionDigest,
    echoes_goal,
    load_prompt,
    parse_merge,
    render_events,
    render_merge,
    render_mission,
    render_turn,
    render_turns,
    repeats_secret,
)
from .ids import IdGenerator
from .jobs import Job, JobStatus, RetryPolicy
from .kb.images import ImageReader
from .kb.images import image_reader as default_image_reader
from .kb.service import KnowledgeBase
from .llm import Gateway, LLMConfigError, LLMUnavailableError, Message, off_notice
from .model import (
    Actor,
    AuditEntry,
    Importance,
    Kind,
    Memory,
    Proposal,
    Provenance,
    ShowResult,
    Source,
    Status,
    normalize_key,
)
from .promotion import (
    CREDENTIAL_RULE,
    Decision,
    Match,
    Neighbors,
    Outcome,
    PromotionPolicy,
    SlotHolder,
    plan_promotion,
    plan_remember,
    same_slot_value,
    utc_day,
)
from .proposals import MAX_CONTENT_CHARS, parse_batch, parse_batch_text
from .recall import (
    Candidate,
    Dropped,
    Packed,
    QueryFacts,
    RecallPolicy,
    Scored,
    pack_block,
    relative_cut,
)
from .retrieval import Evidence, gather, rank
from .schedule import is_due
from .screening import find_credential, find_sensitive, redact_credentials, secret_fingerprints
from .storage.protocols import EmbeddingSignature, Store
from .textutil import has_lone_surrogate
from .timewindow import TimeWindow, find_time_window
from .tokens import O200kTokenizer, TokenCodec

if TYPE_CHECKING:  # the store-level operations for the surfaces (end of MemoryService)
    from collections.abc import Iterable
    from pathlib import Path
    from typing import TextIO

    from .backup import BackupResult
    from .portability import Summary as ExportSummary

log = logging.getLogger("memoryd")
CONSOLIDATION_LOCK = "consolidation"
# How many near neighbours a dated event is compared with (see Neighbors.more_active).
EVENT_NEIGHBORS = 5
# Renewed before every stage; a run that died on another machine frees the store after this.
CONSOLIDATION_LEASE_SECONDS = 900


@dataclass(frozen=True)
class WriteResult:
    """What one remembered or proposed item became."""

    outcome: Outcome
    reason: str
    rule: str
    memory: Memory | None

    def to_json(self) -> dict[str, Any]:
        """The ``propose --json`` item shape."""
        return {
            "outcome": self.outcome.value,
            "reason": self.reason,
            "rule": self.rule,
            "memory": self.memory.to_json() if self.memory else None,
        }


@dataclass(frozen=True)
class ReviewItem:
    """A pending memory and the active fact it would replace if confirmed."""

    pending: Memory
    would_supersede: Memory | None

    def to_json(self) -> dict[str, Any]:
        """JSON shape for the review queue."""
        return {
            "pending": self.pending.to_json(),
            "would_supersede": self.would_supersede.to_json() if self.would_supersede else None,
        }


@dataclass(frozen=True)
class Observation:
    """What a trigger did: queued a job for background extraction, or explained why not."""

    queued: bool
    job_id: str | None
    notice: str | None = None

    def to_json(self) -> dict[str, Any]:
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


class StageSkipped(Exception):
    """A consolidation stage that cannot run here (no LLM route), with the reason."""


@dataclass(frozen=True)
class ConsolidationReport:
    """What a consolidation run planned (dry run) or did, stage by stage."""

    dry_run: bool
    steps: tuple[Step, ...]
    stages: dict[str, str]

    def to_json(self) -> dict[str, Any]:
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

    @property
    def text(self) -> str:
        """The fenced block to put at the tail of the prompt ("" when nothing qualifies)."""
        return self.packed.text

    def to_json(self) -> dict[str, Any]:
        """The ``recall --json`` shape."""
        items = [_lesson_json(m) for m in self.packed.lessons]
        items.extend(_scored_json(s) for s in self.packed.items)
        return {
            "text": self.packed.text,
            "tokens": self.packed.tokens,
            "items": items,
            "dropped": [{"id": d.memory_id, "reason": d.reason} for d in self.dropped],
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
            },
            "silence": self.silence,
        }


@dataclass(frozen=True)
class SearchResult:
    """A ranked list from ``search_memory``."""

    items: tuple[Scored, ...]
    legs: dict[str, str]

    def to_json(self) -> list[dict[str, Any]]:
        """``search --json``: memory objects with ``score`` and per-leg ranks."""
        return [
            {**s.memory.to_json(), "score": round(s.score, 6), "legs": dict(s.ranks)}
            for s in self.items
        ]


def _scored_json(scored: Scored) -> dict[str, Any]:
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
        "section": "memories",
    }


def _lesson_json(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "kind": memory.kind.value,
        "content": memory.content,
        "score": None,
        "legs": {},
        "importance": memory.importance.value if memory.importance else None,
        "section": "lessons",
    }


class MemoryService:
    """Typed memories that code promotes and that are only ever superseded."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        policy: PromotionPolicy | None = None,
        recall_policy: RecallPolicy | None = None,
        tokenizer: TokenCodec | None = None,
        gateway: Gateway | None = None,
        image_reader: ImageReader | None = None,
        retry_policy: RetryPolicy | None = None,
        clock: Clock = utc_now,
        zone: tzinfo = UTC,
    ) -> None:
        self.store = store
        # The owner's time zone: days in time windows and episodes are the owner's days.
        self.zone = zone
        self.embedder = embedder
        self.policy = policy or PromotionPolicy()
        self.recall_policy = recall_policy or RecallPolicy()
        self.tokenizer = tokenizer or O200kTokenizer()
        self._clock = clock
        self._ids = IdGenerator()
        self._matcher: tuple[tuple[int, int], EntityMatcher] | None = None
        self.gateway = gateway or Gateway({})
        self.retry_policy = retry_policy or RetryPolicy()
        self._worker: threading.Thread | None = None
        self._stamper: ThreadPoolExecutor | None = None
        self._last_stamp: Future[None] | None = None
        self._stamp_lock = threading.Lock()
        self._scheduler: threading.Thread | None = None
        self._scheduler_stop = threading.Event()
        self._holder = f"{socket.gethostname()}:{os.getpid()}:{secrets_module.token_hex(4)}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._check_signature()
        self.kb = KnowledgeBase(
            store,
            embedder,
            self.tokenizer,
            (lambda: image_reader) if image_reader is not None else self._image_reader,
            clock=clock,
            ids=self._ids,
        )

    # ----------------------------------------------------------------- writes

    def remember(
        self,
        content: str,
        *,
        kind: Kind = Kind.FACT,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        entities: Sequence[str] = (),
        importance: Importance | None = None,
        changes_behavior: bool = False,
        occurred_at: datetime | None = None,
        confidence: float = 1.0,
        actor: Actor = Actor.OWNER,
        now: datetime | None = None,
    ) -> WriteResult:
        """Keep something the owner asked for. The owner's own call is active at once; a
        model's tool call is too, unless the content could change behaviour (then pending).
        Credentials are refused whoever asks."""
        at = now or self._clock()
        content = _clean_text(content, "memory text")
        if (subject is None) != (predicate is None):
            raise InvalidInputError("a fact slot needs both --subject and --predicate, or neither")
        proposal = Proposal(
            kind=kind,
            content=content,
            confidence=confidence,
            changes_behavior=changes_behavior,
            subject=subject.strip() if subject else None,
            predicate=predicate.strip() if predicate else None,
            object=object.strip() if object else None,
            entities=tuple(dict.fromkeys(e.strip() for e in entities if e.strip()))
            or extract_entities(content),
            occurred_at=occurred_at or (at if kind is Kind.EVENT else None),
            importance=importance or (Importance.MEDIUM if kind is Kind.LESSON else None),
        )
        source = Source.OWNER if actor is Actor.OWNER else Source.REMEMBER
        provenance = Provenance(source=source)
        vector = self._embed([content])[0]
        with self.store.transaction():
            neighbors = self._neighbors(proposal, vector, actor)
            decision = plan_remember(proposal, actor, neighbors, self.policy)
            if decision.rule == CREDENTIAL_RULE:
                # Whoever asked, a credential is refused loudly, not dropped quietly.
                raise CredentialRefusedError(
                    f"refusing to store this: it {decision.reason}. memoryd never stores "
                    "credentials; keep secrets in a password manager"
                )
            return self._apply(decision, proposal, vector, provenance, actor, at)

    def propose(
        self,
        batch: str | dict[str, Any] | Sequence[Proposal],
        *,
        source: Source,
        source_ref: str | None = None,
        extractor_model: str | None = None,
        prompt_version: str | None = None,
        now: datetime | None = None,
        tainted_by: str | None = None,
    ) -> list[WriteResult]:
        """Validate a batch (all or nothing), then let the promotion policy decide each item.
        The whole batch is written in one transaction. ``tainted_by`` says why the source text
        is suspect; then nothing from it activates alone."""
        at = now or self._clock()
        if isinstance(batch, str):
            proposals = parse_batch_text(batch)
        elif isinstance(batch, dict):
            proposals = parse_batch(batch)
        else:
            proposals = tuple(batch)
        provenance = Provenance(source, source_ref, extractor_model, prompt_version)
        vectors = self._embed([p.content for p in proposals])
        results: list[WriteResult] = []
        with self.store.transaction():
            for proposal, vector in zip(proposals, vectors, strict=True):
                neighbors = self._neighbors(proposal, vector, Actor.POLICY)
                decision = plan_promotion(proposal, source, neighbors, self.policy, tainted_by)
                results.append(
                    self._apply(decision, proposal, vector, provenance, Actor.POLICY, at)
                )
        return results

    def confirm(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: a pending memory becomes active, superseding its slot's active fact."""
        at = now or self._clock()
        with self.store.transaction():
            memory = self._require(memory_id)
            self._require_status(memory, (Status.PENDING,), "confirm")
            holder = self._slot_holder(memory)
            if holder is not None:
                self._archive_replaced(
                    holder, at, f"superseded by {memory.id}, confirmed by the owner", Actor.OWNER
                )
                self.store.memories.link_supersede(holder.id, memory.id)
            self._change_status(
                memory, Status.ACTIVE, Actor.OWNER, "confirm", at, "confirmed by the owner"
            )
            return self._require(memory_id)

    def reject(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: reject a pending or active memory; near-copies stay out from now on."""
        return self._owner_status_change(
            memory_id, (Status.PENDING, Status.ACTIVE), Status.REJECTED, "reject",
            "rejected by the owner", now,
        )  # fmt: skip

    def archive(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: retire a memory without rejecting what it says."""
        return self._owner_status_change(
            memory_id, (Status.PENDING, Status.ACTIVE, Status.REJECTED), Status.ARCHIVED,
            "archive", "archived by the owner", now,
        )  # fmt: skip

    def _owner_status_change(
        self,
        memory_id: str,
        allowed: Sequence[Status],
        status: Status,
        action: str,
        reason: str,
        now: datetime | None,
    ) -> Memory:
        at = now or self._clock()
        with self.store.transaction():
            memory = self._require(memory_id)
            self._require_status(memory, allowed, action)
            self._change_status(memory, status, Actor.OWNER, action, at, reason)
            return self._require(memory_id)

    def edit(
        self,
        memory_id: str,
        content: str,
        *,
        object: str | None = None,
        now: datetime | None = None,
    ) -> Memory:
        """Owner action: supersede a memory with corrected text. The new row is active (the
        owner wrote it); the old one is archived and points at it."""
        at = now or self._clock()
        content = _clean_text(content, "new text")
        credential = find_credential(content + "\n" + (object or ""))
        if credential is not None:
            raise CredentialRefusedError(
                f"refusing to store this: it looks like a {credential.label}. memoryd never "
                "stores credentials"
            )
        vector = self._embed([content])[0]
        with self.store.transaction():
            old = self._require(memory_id)
            self._require_status(old, (Status.PENDING, Status.ACTIVE), "edit")
            if old.purged_at is not None:
                raise InvalidOperationError(f"memory {memory_id} was purged and cannot be edited")
            new_object = object.strip() if object else _carried_object(old, content)
            new = self._successor(
                old,
                at,
                status=Status.ACTIVE,
                content=content,
                object=new_object,
                entities=extract_entities(content) or old.entities,
                confidence=1.0,
                source=Source.OWNER,
                source_ref=old.id,
                extractor_model=None,
                prompt_version=None,
                last_confirmed_at=at,
            )
            holder = self._slot_holder(old) if old.status is Status.PENDING else None
            old_status = old.status
            self.store.memories.set_status(old.id, Status.ARCHIVED)
            self.store.audit.append(
                AuditEntry(
                    old.id,
                    at,
                    Actor.OWNER,
                    "supersede",
                    old_status,
                    Status.ARCHIVED,
                    f"edited by the owner into {new.id}",
                )
            )
            if holder is not None:
                self._archive_replaced(
                    holder, at, f"superseded by {new.id}, an owner edit", Actor.OWNER
                )
            self.store.memories.insert(new, vector)
            if holder is not None:
                # The slot's history (holder → new) is the chain a reader follows; the edited
                # pending draft points forward at its replacement.
                self.store.memories.link_supersede(holder.id, new.id)
                self.store.memories.link_supersede(old.id, new.id, back_link=False)
            else:
                self.store.memories.link_supersede(old.id, new.id)
            self.store.audit.append(
                AuditEntry(
                    new.id,
                    at,
                    Actor.OWNER,
                    "create",
                    None,
                    Status.ACTIVE,
                    f"owner edit of {old.id}",
                )
            )
            return self._require(new.id)

    def purge(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: erase a memory's content for privacy, keeping a tombstone."""
        at = now or self._clock()
        with self.store.transaction():
            memory = self._require(memory_id)
            if memory.purged_at is not None:
                return memory
            if memory.status in (Status.ACTIVE, Status.PENDING):
                self.store.memories.set_status(memory.id, Status.ARCHIVED)
            self.store.memories.purge(memory.id, at)
            self.store.audit.append(
                AuditEntry(
                    memory.id,
                    at,
                    Actor.OWNER,
                    "purge",
                    memory.status,
                    Status.ARCHIVED
                    if memory.status in (Status.ACTIVE, Status.PENDING)
                    else memory.status,
                    "content erased at the owner's request",
                )
            )
        self.store.erase_traces()
        return self._require(memory_id)

    # ------------------------------------------------------------- extraction

    def observe_turn(
        self, user_message: str, summary: str | None = None, *, now: datetime | None = None
    ) -> Observation:
        """Fire-and-forget: queue the turn for extraction and return at once. The queue is
        persisted, so a crash loses no turn; the worker extracts it in the background."""
        if not user_message.strip():
            raise InvalidInputError("the owner's message is empty; nothing to observe")
        payload = {
            "user": redact_credentials(user_message),
            "summary": redact_credentials(summary or ""),
            **_secret_payload(user_message + "\n" + (summary or "")),
        }
        return self._enqueue("turn", payload, now)

    def before_compaction(
        self, turns: Sequence[dict[str, str]], *, now: datetime | None = None
    ) -> Observation:
        """Queue the turns about to be summarised away for extraction."""
        if not turns:
            raise InvalidInputError("no turns given; nothing to extract before compaction")
        cleaned = [
            {
                "role": str(t.get("role", "user")),
                "content": redact_credentials(t.get("content", "")),
            }
            for t in turns
        ]
        texts = "\n".join(t.get("content", "") for t in turns)
        payload = {"turns": cleaned, **_secret_payload(texts)}
        return self._enqueue("compaction", payload, now)

    def mission_finished(
        self, digest: MissionDigest, *, now: datetime | None = None
    ) -> Observation:
        """Queue a finished mission's digest for the stricter, discoveries-only extraction."""
        if not digest.outcome.strip():
            raise InvalidInputError("the mission digest has no outcome text")
        payload = {
            "title": redact_credentials(digest.title),
            "goal": redact_credentials(digest.goal),
            "outcome": redact_credentials(digest.outcome),
            **_secret_payload("\n".join([digest.title, digest.goal, digest.outcome])),
        }
        return self._enqueue("mission", payload, now)

    def run_jobs(
        self, *, limit: int | None = None, now: datetime | None = None, job_id: str | None = None
    ) -> list[JobReport]:
        """Run due extraction jobs (or just ``job_id``) until none is due or ``limit`` ran."""
        reports: list[JobReport] = []
        while limit is None or len(reports) < limit:
            at = now or self._clock()
            with self.store.transaction():
                if job_id is not None:
                    job = self.store.jobs.get(job_id)
                    if job is None:
                        raise InvalidInputError(f"no job with id {job_id!r}")
                    if job.status in (JobStatus.DONE, JobStatus.FAILED):
                        return [JobReport(job, ())]
                    job = self.store.jobs.claim_one(job_id, at)
                else:
                    job = self.store.jobs.claim(list(TRIGGERS), at, self.retry_policy.lease_seconds)
            if job is None:
                break
            reports.append(self._run_extraction(job, at))
            if job_id is not None:
                break
        return reports

    def job(self, job_id: str) -> Job:
        """One job, or a clear error."""
        found = self.store.jobs.get(job_id)
        if found is None:
            raise InvalidInputError(f"no job with id {job_id!r}")
        return found

    def start_worker(self, poll_seconds: float = 5.0) -> None:
        """Run queued jobs in a background thread until ``stop_worker``; woken at once by
        every new trigger. Idempotent."""
        if self._worker is not None and self._worker.is_alive():
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.run_jobs()
                    self.kb.run_retries()
                except Exception:  # the worker must outlive any one failure
                    log.exception("memoryd worker: running jobs failed")
                self._wake.wait(poll_seconds)
                self._wake.clear()

        self._worker = threading.Thread(target=loop, name="memoryd-worker", daemon=True)
        self._worker.start()

    def stop_worker(self, timeout: float = 30.0) -> None:
        """Stop the background worker after its current job."""
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout)
            self._worker = None

    def _enqueue(self, kind: str, payload: dict[str, Any], now: datetime | None) -> Observation:
        if not self.gateway.configured("extract"):
            return Observation(False, None, off_notice("extraction"))
        at = now or self._clock()
        job = Job(
            id=self._ids.new_id(at),
            kind=kind,
            payload=payload,
            status=JobStatus.QUEUED,
            attempts=0,
            next_attempt_at=at,
            created_at=at,
        )
        with self.store.transaction():
            self.store.jobs.enqueue(job)
        self._wake.set()
        return Observation(True, job.id)

    def _run_extraction(self, job: Job, at: datetime) -> JobReport:
        prompt_name, source = TRIGGERS[job.kind]
        prompt = load_prompt(prompt_name)
        digest: MissionDigest | None = None
        if job.kind == "turn":
            conversation = render_turn(job.payload["user"], job.payload.get("summary"))
        elif job.kind == "compaction":
            conversation = render_turns(job.payload["turns"])
        else:
            digest = MissionDigest(
                job.payload["title"], job.payload.get("goal", ""), job.payload["outcome"]
            )
            conversation = render_mission(digest)
        try:
            extraction = Extractor(self.gateway).extract(prompt, conversation)
        except (LLMUnavailableError, LLMConfigError) as error:
            # Both pass: a server comes back, a missing key gets set. The error stays visible.
            retry_at = self.retry_policy.next_attempt(job.attempts, at)
            with self.store.transaction():
                if retry_at is None:
                    self.store.jobs.fail(job.id, str(error), at)
                else:
                    self.store.jobs.retry(job.id, str(error), retry_at)
            log.warning("extraction job %s: %s (attempt %d)", job.id, error, job.attempts)
            return JobReport(self.job(job.id), ())
        proposals = extraction.proposals
        echoed = 0
        if digest is not None:
            kept = tuple(p for p in proposals if not echoes_goal(p, digest))
            echoed = len(proposals) - len(kept)
            proposals = kept
        secrets = frozenset(job.payload.get("secrets", ()))
        salt = str(job.payload.get("salt", ""))
        leaked = [p for p in proposals if repeats_secret(p, secrets, salt)]
        proposals = tuple(p for p in proposals if p not in leaked)
        marker = find_sensitive(conversation, self.policy.sensitive_phrases)
        taint = f"contained the instruction or secret marker {marker!r}" if marker else None
        with self.store.transaction():
            results = [
                WriteResult(
                    Outcome.DROPPED,
                    "repeats a secret removed from the conversation",
                    "secret-echo",
                    None,
                )
                for _ in leaked
            ]
            results += self.propose(
                proposals,
                source=source,
                source_ref=f"job:{job.id}",
                extractor_model=extraction.model,
                prompt_version=extraction.prompt_version,
                now=at,
                tainted_by=taint,
            )
            if extraction.error is not None:
                # A broken answer is quoted in the error: keep no secret it may repeat.
                self.store.jobs.fail(job.id, redact_credentials(extraction.error), at)
            else:
                summary = Counter(r.outcome.value for r in results)
                self.store.jobs.finish(
                    job.id,
                    {
                        "outcomes": dict(summary),
                        "echoes_dropped": echoed,
                        "attempts": extraction.attempts,
                    },
                    at,
                )
        return JobReport(self.job(job.id), tuple(results))

    # ---------------------------------------------------------- consolidation

    def consolidate(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        policy: ConsolidationPolicy | None = None,
    ) -> ConsolidationReport:
        """The daily job's deterministic stages (SPEC §5): dedupe pending, archive episodic,
        decay semantic, decay inferences, demote pending. Each stage plans purely, then applies
        its steps in one transaction, audited with the stage's name; one failing stage is
        reported and the others still run. The LLM stages (merge, reflect) are reported as not
        run yet. A dry run plans and changes nothing."""
        at = now or self._clock()
        rules = policy or ConsolidationPolicy()
        if dry_run:
            return self._consolidate(at, rules, dry_run=True)
        report = self._consolidate_under_lease(at, rules, lambda: True)
        assert report is not None
        return report

    def _consolidate_under_lease(
        self, at: datetime, rules: ConsolidationPolicy, still_due: Callable[[], bool]
    ) -> ConsolidationReport | None:
        """Run under the store-wide lease, if ``still_due()`` holds once the lease is ours
        (another process may have finished today's run a moment ago). Each completed run is
        stamped and counted."""
        # Never two runs at once, across processes sharing the store: a lease that a crashed
        # run gives up when it expires.
        if not self._take_consolidation_lease():
            raise ConsolidationBusyError(
                "another consolidation is running on this store; try again when it has finished"
            )
        try:
            if not still_due():
                return None
            report = self._consolidate(at, rules, dry_run=False)
            with self.store.transaction():
                runs = int(self.store.get_meta("consolidation_runs") or "0")
                self.store.set_meta("last_consolidation_at", to_db(at) or "")
                self.store.set_meta("consolidation_runs", str(runs + 1))
            return report
        finally:
            with self.store.transaction():
                self.store.unlock(CONSOLIDATION_LOCK, self._holder)

    def _take_consolidation_lease(self) -> bool:
        """Take (or renew) the consolidation lease. A lease held by a process of this machine
        that no longer exists (a crashed run) is taken over at once; on another machine, the
        lease has to run out."""
        with self.store.transaction():
            if self.store.try_lock(
                CONSOLIDATION_LOCK, self._holder, utc_now(), CONSOLIDATION_LEASE_SECONDS
            ):
                return True
            holder = self.store.lock_holder(CONSOLIDATION_LOCK)
            if holder is not None and _holder_is_dead(holder):
                log.warning("consolidation: taking over the lease of dead process %s", holder)
                return self.store.take_over_lock(
                    CONSOLIDATION_LOCK, holder, self._holder, utc_now(),
                    CONSOLIDATION_LEASE_SECONDS,
                )  # fmt: skip
            return False

    def last_consolidation(self) -> datetime | None:
        """When consolidation last completed (by its ``now``)."""
        return from_db(self.store.get_meta("last_consolidation_at") or None)

    def start_scheduler(self, daily_at: time, zone: tzinfo, *, poll_seconds: float = 60.0) -> None:
        """Run consolidation daily at ``daily_at`` local time in a background thread; at start
        it catches up once if a day was missed. Idempotent; stopped by ``stop_scheduler``."""
        if self._scheduler is not None and self._scheduler.is_alive():
            return
        self._scheduler_stop.clear()

        def due(now: datetime) -> bool:
            return is_due(self.last_consolidation(), now, daily_at, zone)

        def loop() -> None:
            while not self._scheduler_stop.is_set():
                now = self._clock()
                try:
                    if is_due(self.last_consolidation(), now, daily_at, zone):
                        report = self._consolidate_under_lease(
                            now, ConsolidationPolicy(), functools.partial(due, now)
                        )
                        if report is not None:
                            log.info("daily consolidation: %s", report.stages)
                except ConsolidationBusyError:
                    log.info("daily consolidation: another process is running it")
                except Exception:  # the scheduler must outlive one failed run
                    log.exception("daily consolidation failed")
                self._scheduler_stop.wait(poll_seconds)

        self._scheduler = threading.Thread(target=loop, name="memoryd-scheduler", daemon=True)
        self._scheduler.start()

    def stop_scheduler(self, timeout: float = 60.0) -> None:
        """Stop the daily scheduler after its current run."""
        self._scheduler_stop.set()
        if self._scheduler is not None:
            self._scheduler.join(timeout)
            self._scheduler = None

    def _consolidate(
        self, at: datetime, rules: ConsolidationPolicy, *, dry_run: bool
    ) -> ConsolidationReport:
        planners: list[tuple[Stage, Callable[[], list[Step]]]] = [
            (Stage.MERGE, lambda: self._merge_stage(at, rules, dry_run)),
            (Stage.DEDUPE_PENDING, lambda: self._plan_dedupe_pending(rules)),
            (Stage.ARCHIVE_EPISODIC, lambda: plan_archive_episodic(
                self.store.memories.query(status=Status.ACTIVE, kind=Kind.EVENT), at, rules)),
            (Stage.DECAY_SEMANTIC, lambda: plan_decay_semantic(
                self.store.memories.query(status=Status.ACTIVE, kind=Kind.FACT), at, rules)),
            (Stage.DECAY_INFERENCES, lambda: plan_decay_inferences(
                self.store.memories.query(status=Status.ACTIVE, kind=Kind.INFERENCE), at, rules)),
            (Stage.REFLECT, lambda: self._reflect_stage(at, rules, dry_run)),
            (Stage.DEMOTE_PENDING, lambda: plan_demote_pending(
                self.store.memories.query(status=Status.PENDING), at, rules)),
        ]  # fmt: skip
        # The LLM stages write as they go; the others return plans applied here.
        self_applying = {Stage.MERGE, Stage.REFLECT}
        done: list[Step] = []
        stages: dict[str, str] = {}
        for stage, plan in planners:
            if not dry_run:
                self._take_consolidation_lease()  # renew: the run is alive
            try:
                steps = plan()
                if not dry_run and steps and stage not in self_applying:
                    self._apply_consolidation(steps, at)
            except StageSkipped as skipped:
                stages[stage.value] = f"skipped: {skipped}"
                continue
            except Exception as error:  # one stage failing must not stop the others
                log.exception("consolidation stage %s failed", stage.value)
                stages[stage.value] = f"failed: {error}"
                continue
            done.extend(steps)
            stages[stage.value] = f"{len(steps)} {'planned' if dry_run else 'applied'}"
        return ConsolidationReport(dry_run, tuple(done), stages)

    def _merge_stage(self, at: datetime, rules: ConsolidationPolicy, dry_run: bool) -> list[Step]:
        """Groups of near-duplicate active facts or inferences, each merged by the ``merge``
        route into one row that supersedes them, unless the guard refuses the merge."""
        if not self.gateway.configured("merge"):
            raise StageSkipped(off_notice("merging"))
        memories = [
            *self.store.memories.query(status=Status.ACTIVE, kind=Kind.FACT),
            *self.store.memories.query(status=Status.ACTIVE, kind=Kind.INFERENCE),
        ]
        vectors = self.store.memories.vectors([m.id for m in memories])
        pairs: list[tuple[str, str, float]] = []
        for memory in memories:
            vector = vectors.get(memory.id)
            if vector is None:
                continue
            hits = self.store.vectors.nearest(vector, [Status.ACTIVE], 6, [memory.kind])
            pairs.extend(
                (memory.id, h.memory_id, h.cosine) for h in hits if h.memory_id != memory.id
            )
        steps: list[Step] = []
        prompt = load_prompt("merge")
        for group in group_near_duplicates(memories, pairs, rules):
            ids = ", ".join(m.id for m in group)
            if dry_run:
                steps.append(Step(Stage.MERGE, group[0].id, ConsolidationAction.MERGE,
                                  f"would ask the LLM to merge {len(group)}: {ids}"))  # fmt: skip
                continue
            raw = self.gateway.complete(
                "merge", prompt.text, [Message("user", render_merge([m.content for m in group]))]
            )
            try:
                merged = parse_merge(raw)
            except ProposalBatchError as error:
                steps.append(Step(Stage.MERGE, group[0].id, ConsolidationAction.KEEP,
                                  f"kept {ids}: {error}"))  # fmt: skip
                continue
            refused = merge_guard([m.content for m in group], merged, rules)
            if refused is None and find_credential(merged) is not None:
                refused = "the merge looks like it holds a credential"
            if refused is not None:
                steps.append(Step(Stage.MERGE, group[0].id, ConsolidationAction.KEEP,
                                  f"kept {ids}: {refused}"))  # fmt: skip
                continue
            self._write_merge(group, merged, prompt.label, at)
            steps.append(Step(Stage.MERGE, group[0].id, ConsolidationAction.MERGE,
                              f"merged {ids}"))  # fmt: skip
        return steps

    def _write_merge(self, group: Sequence[Memory], merged: str, label: str, at: datetime) -> None:
        vector = self._embed([merged])[0]
        first = group[0]
        route = self.gateway.routes.get("merge")
        new = self._successor(
            first,
            at,
            content=merged,
            confidence=max(m.confidence for m in group),
            entities=tuple(dict.fromkeys(e for m in group for e in m.entities)),
            last_confirmed_at=max(m.last_confirmed_at for m in group),
            extractor_model=route.model if route else None,
            prompt_version=label,
        )
        rule = Stage.MERGE.value
        with self.store.transaction():
            for memory in group:
                self.store.memories.set_status(memory.id, Status.ARCHIVED)
                self.store.audit.append(
                    AuditEntry(memory.id, at, Actor.SYSTEM, "supersede", memory.status,
                               Status.ARCHIVED, f"merged into {new.id}", rule)
                )  # fmt: skip
            self.store.memories.insert(new, vector)
            self.store.memories.link_supersede(first.id, new.id)
            for memory in group[1:]:
                self.store.memories.link_supersede(memory.id, new.id, back_link=False)
            self.store.audit.append(
                AuditEntry(new.id, at, Actor.SYSTEM, "create", None, Status.ACTIVE,
                           f"merge of {len(group)} near-duplicates", rule)
            )  # fmt: skip

    def _reflect_stage(self, at: datetime, rules: ConsolidationPolicy, dry_run: bool) -> list[Step]:
        """Ten or more events in the last week: ask the ``reflect`` route for up to three
        insights, which land pending. At most once per day."""
        if not self.gateway.configured("reflect"):
            raise StageSkipped(off_notice("reflection"))
        day = at.date().isoformat()
        if self.store.get_meta("last_reflection_day") == day:
            return []
        since = at - timedelta(days=rules.reflect_window_days)
        events = self.store.memories.events_between(since, at + timedelta(seconds=1), 200)
        if not reflection_due(events, at, rules):
            return []
        if dry_run:
            return [Step(Stage.REFLECT, "", ConsolidationAction.PROPOSE,
                         f"would ask for up to {rules.reflect_max_insights} insights from "
                         f"{len(events)} events")]  # fmt: skip
        extraction = Extractor(self.gateway, "reflect").extract(
            load_prompt("reflect"), render_events(events)
        )
        insights = [
            replace(p, kind=Kind.INFERENCE) for p in extraction.proposals if not p.general_knowledge
        ][: rules.reflect_max_insights]
        with self.store.transaction():
            results = self.propose(
                insights,
                source=Source.REFLECTION,
                extractor_model=extraction.model,
                prompt_version=extraction.prompt_version,
                now=at,
            )
            self.store.set_meta("last_reflection_day", day)
        return [
            Step(
                Stage.REFLECT,
                r.memory.id,
                ConsolidationAction.PROPOSE,
                f"insight from {len(events)} events: {r.outcome.value}",
            )
            for r in results
            if r.memory is not None
        ]

    def _plan_dedupe_pending(self, rules: ConsolidationPolicy) -> list[Step]:
        pending = self.store.memories.query(status=Status.PENDING, newest_first=False)
        if len(pending) < 2:
            return []
        by_id = {m.id: m for m in pending}
        stored = self.store.memories.vectors([m.id for m in pending])
        pairs = []
        for memory in pending:
            vector = stored.get(memory.id)
            if vector is None:
                continue
            for hit in self.store.vectors.nearest(vector, [Status.PENDING], 2):
                if hit.memory_id != memory.id and hit.memory_id in by_id:
                    pairs.append((memory, by_id[hit.memory_id], hit.cosine))
        return plan_dedupe_pending(pairs, rules)

    def _apply_consolidation(self, steps: Sequence[Step], at: datetime) -> None:
        """One stage's steps, all in one transaction."""
        successors = [s for s in steps if s.action is ConsolidationAction.SUPERSEDE]
        vectors = dict(
            zip(
                [s.memory_id for s in successors],
                self._embed([self._require(s.memory_id).content for s in successors]),
                strict=True,
            )
        )
        with self.store.transaction():
            for step in steps:
                memory = self._require(step.memory_id)
                if step.action is ConsolidationAction.SUPERSEDE:
                    self._supersede_with_confidence(memory, step, vectors[memory.id], at)
                    continue
                status = (
                    Status.REJECTED
                    if step.action is ConsolidationAction.REJECT
                    else Status.ARCHIVED
                )
                self.store.memories.set_status(memory.id, status)
                self.store.audit.append(
                    AuditEntry(memory.id, at, Actor.SYSTEM, step.action.value, memory.status,
                               status, step.reason, step.stage.value)
                )  # fmt: skip

    def _supersede_with_confidence(
        self, old: Memory, step: Step, vector: Vector, at: datetime
    ) -> None:
        assert step.new_confidence is not None
        new = self._successor(old, at, confidence=step.new_confidence)
        self.store.memories.set_status(old.id, Status.ARCHIVED)
        self.store.audit.append(
            AuditEntry(old.id, at, Actor.SYSTEM, "supersede", old.status, Status.ARCHIVED,
                       f"{step.reason}; superseded by {new.id}", step.stage.value)
        )  # fmt: skip
        self.store.memories.insert(new, vector)
        self.store.memories.link_supersede(old.id, new.id)
        self.store.audit.append(
            AuditEntry(new.id, at, Actor.SYSTEM, "create", None, Status.ACTIVE,
                       f"confidence {old.confidence:.2f} → {step.new_confidence:.2f}: "
                       f"{step.reason}", step.stage.value)
        )  # fmt: skip

    def reconfirm(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: an active memory is still true; ``last_confirmed_at`` moves to now."""
        at = now or self._clock()
        with self.store.transaction():
            memory = self._require(memory_id)
            self._require_status(memory, (Status.ACTIVE,), "reconfirm")
            self.store.memories.mark_confirmed(memory.id, at)
            self.store.audit.append(
                AuditEntry(memory.id, at, Actor.OWNER, "reconfirm", Status.ACTIVE, Status.ACTIVE,
                           "reconfirmed by the owner")
            )  # fmt: skip
            return self._require(memory_id)

    def reconfirmation_queue(self) -> list[Memory]:
        """Active facts whose confidence consolidation lowered and nobody reconfirmed since:
        the owner reconfirms, edits or archives them."""
        self.settle()
        queue = []
        for memory in self.store.memories.query(status=Status.ACTIVE, kind=Kind.FACT):
            if memory.supersedes is None:
                continue
            if memory.last_confirmed_at >= memory.created_at:
                continue  # reconfirmed since the decay
            entries = self.store.audit.for_memories([memory.id])
            if any(e.rule == Stage.DECAY_SEMANTIC.value for e in entries):
                queue.append(memory)
        return queue

    # ----------------------------------------------------------------- recall

    def recall(
        self, message: str, *, budget: int | None = None, now: datetime | None = None
    ) -> RecallResult:
        """The memory block for this turn: candidates gated, fused, weighted, cut where the
        evidence thins out and packed within the token budget, standing lessons first. An
        empty memories section when nothing is relevant. Stamps what it packed."""
        at = now or self._clock()
        limit = self.recall_policy.budget_tokens if budget is None else budget
        if limit < 0:
            raise InvalidInputError("the token budget must be zero or more")
        window = find_time_window(message, at, self.zone)
        evidence = self._gather(message, window, ())
        ranking, evidence = rank(self.store, evidence, at, self.recall_policy, self.zone)
        kept, cut = relative_cut(ranking.items, self.recall_policy)
        lessons = self.store.memories.standing_lessons()
        packed = pack_block(lessons, kept, self.tokenizer, limit)
        packed_ids = [m.id for m in packed.lessons] + [s.memory.id for s in packed.items]
        if packed_ids:
            self._stamp_later(packed_ids, at)
        # A standing lesson the legs also found is in the block whatever its gates said.
        standing = {m.id for m in packed.lessons}
        return RecallResult(
            packed,
            tuple(d for d in ranking.dropped if d.memory_id not in standing)
            + tuple(cut)
            + packed.dropped,
            evidence.legs,
            window,
            evidence.facts,
            ranking.silence,
        )

    def search_memory(
        self,
        query: str,
        *,
        kind: Kind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        now: datetime | None = None,
    ) -> SearchResult:
        """A deliberate lookup: the same legs and gates as recall, filtered by kind and by an
        explicit time range, returned as a ranked list (no cut, no packing)."""
        at = now or self._clock()
        if not query.strip():
            raise InvalidInputError("the search query is empty; say what to look for")
        if limit < 1:
            raise InvalidInputError("--limit must be at least 1")
        window = find_time_window(query, at, self.zone)
        ranged = since is not None or until is not None
        if ranged:
            start = since or datetime.min.replace(tzinfo=at.tzinfo)
            end = until or at.replace(year=9999)
            if start >= end:
                raise InvalidInputError("--since must be earlier than --until")
            window = TimeWindow(start, end, "explicit range")
        kinds = (kind,) if kind else ()
        evidence = self._gather(query, window, kinds)

        def wanted(candidate: Candidate) -> bool:
            memory = candidate.memory
            return (kind is None or memory.kind is kind) and (not ranged or _within(memory, window))

        ranking, evidence = rank(
            self.store, evidence, at, self.recall_policy, self.zone, keep=wanted
        )
        top = ranking.items[:limit]
        if top:
            self._stamp_later([s.memory.id for s in top], at)
        return SearchResult(tuple(top), evidence.legs)

    def add_alias(self, name: str, alias: str) -> None:
        """Owner action: ``alias`` names the same entity as ``name`` (for the entity leg)."""
        if not name.strip() or not alias.strip():
            raise InvalidInputError("an alias needs both a name and the alias")
        with self.store.transaction():
            self.store.entities.add_alias(name.strip(), alias.strip())

    def tool_definitions(self, style: str = "anthropic") -> list[dict[str, Any]]:
        """JSON Schema definitions of the model's tools (remember, search_memory, search_kb,
        read_kb)."""
        from .tools import tool_definitions

        return tool_definitions(style)

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        pinned_collections: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Run a model's tool call; acts as the model (Actor.TOOL), never as the owner.
        ``pinned_collections`` (the agent's and the session's) boost search_kb; the model
        cannot set them."""
        from .tools import dispatch

        return dispatch(self, name, arguments, pinned_collections=pinned_collections)

    def _image_reader(self) -> ImageReader:
        return default_image_reader(self.gateway)

    def leg_rankings(
        self, message: str, *, now: datetime | None = None
    ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """Each leg's own ranking of active memory ids for ``message`` (before the gates and
        fusion), and each leg's state; for ablations and diagnostics."""
        evidence = self.evidence(message, now=now)
        return evidence.rankings, evidence.legs

    def evidence(self, message: str, *, now: datetime | None = None) -> Evidence:
        """What the vector, text, entity and time legs find for ``message``, with everything
        the gates judge (cosines, words, names, window); for diagnostics and calibration:
        ``memoryd.retrieval.rank`` turns it into recall's ranking under any policy."""
        at = now or self._clock()
        return self._gather(message, find_time_window(message, at, self.zone), ())

    def _gather(self, message: str, window: TimeWindow | None, kinds: Sequence[Kind]) -> Evidence:
        return gather(
            self.store,
            self.embedder,
            self._entity_matcher,
            message,
            window,
            kinds,
            self.recall_policy,
        )

    def _entity_matcher(self) -> EntityMatcher:
        version = self.store.entities.version()
        if self._matcher is None or self._matcher[0] != version:
            self._matcher = (version, EntityMatcher.build(self.store.entities.aliases()))
        return self._matcher[1]

    # ------------------------------------------------------------------ reads

    def get(self, memory_id: str) -> Memory:
        """One memory, or MemoryNotFoundError."""
        self.settle()
        return self._require(memory_id)

    def list_memories(
        self, *, status: Status | None = None, kind: Kind | None = None, limit: int | None = None
    ) -> list[Memory]:
        """Memories, newest first."""
        self.settle()
        return self.store.memories.query(status=status, kind=kind, limit=limit)

    def show(self, memory_id: str) -> ShowResult:
        """A memory with its supersede chain (oldest first) and the audit trail of the chain."""
        self.settle()
        memory = self._require(memory_id)
        chain = self._chain(memory)
        audit = self.store.audit.for_memories([m.id for m in chain])
        return ShowResult(memory=memory, chain=tuple(chain), audit=tuple(audit))

    def review_queue(self) -> list[ReviewItem]:
        """Pending memories, oldest first, each beside the active fact it would supersede."""
        pending = self.store.memories.query(status=Status.PENDING, newest_first=False)
        return [ReviewItem(memory, self._slot_holder(memory)) for memory in pending]

    def settle(self) -> None:
        """Wait until the retrieval stamps of earlier recalls are written (reads through the
        service do this themselves)."""
        future = self._last_stamp
        if future is None:
            return
        try:
            future.result()
        except Exception:  # a lost stamp is a statistic, not data: record it and go on
            log.exception("memoryd: writing retrieval stamps failed")

    def close(self) -> None:
        """Stop background work, write pending stamps, release the store."""
        self.stop_scheduler()
        self.stop_worker()
        self.settle()
        if self._stamper is not None:
            self._stamper.shutdown(wait=True)
            self._stamper = None
        self.store.close()

    def _stamp_later(self, memory_ids: list[str], at: datetime) -> None:
        """Stamp packed memories on a single background writer, so the answer does not wait
        for the write (and the WAL checkpoints it sometimes triggers). Runs in order."""
        with self._stamp_lock:
            if self._stamper is None:
                self._stamper = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="memoryd-stamp"
                )
            self._last_stamp = self._stamper.submit(self._write_stamps, memory_ids, at)

    def _write_stamps(self, memory_ids: list[str], at: datetime) -> None:
        with self.store.transaction():
            self.store.memories.stamp_retrieved(memory_ids, at)

    # -------------------------------------------------------------- internals

    def _check_signature(self) -> None:
        wanted = EmbeddingSignature(self.embedder.model, self.embedder.dimension)
        found = self.store.embedding_signature()
        if found is None:
            self.store.initialize_embeddings(wanted)
        elif found != wanted:
            raise StoreMismatchError(
                f"this store holds {found.dimension}-dimension vectors from {found.model!r}, but "
                f"memoryd is configured with {wanted.model!r} ({wanted.dimension} dimensions); "
                "use the embedder the store was built with"
            )

    def _embed(self, texts: list[str]) -> list[Vector]:
        if not texts:
            return []
        return list(self.embedder.embed(texts))

    def _neighbors(self, proposal: Proposal, vector: Vector, actor: Actor) -> Neighbors:
        slot = proposal.slot
        holder = None
        pending_same = None
        if slot is not None:
            holders = self.store.memories.in_slot(slot, Status.ACTIVE)
            if holders:
                holder = SlotHolder(holders[0].id, holders[0].object, holders[0].content)
            for memory in self.store.memories.in_slot(slot, Status.PENDING):
                if same_slot_value(proposal, memory.object, memory.content):
                    pending_same = memory.id
                    break
        owner = actor is Actor.OWNER
        # A dated event looks further: the nearest may be the same words on another day.
        dated = proposal.kind is Kind.EVENT and proposal.occurred_at is not None
        depth = EVENT_NEIGHBORS if dated else 1
        active = self._nearest(vector, Status.ACTIVE, depth)
        # The owner's own remember ignores rejections and pending drafts: skip the searches.
        pending = [] if owner else self._nearest(vector, Status.PENDING, depth)
        rejected = [] if owner else self._nearest(vector, Status.REJECTED, 1)
        return Neighbors(
            slot_active=holder,
            slot_pending_same_value=pending_same,
            nearest_active=active[0] if active else None,
            nearest_rejected=rejected[0] if rejected else None,
            nearest_pending=pending[0] if pending else None,
            more_active=tuple(active[1:]),
            more_pending=tuple(pending[1:]),
        )

    def _nearest(self, vector: Vector, status: Status, k: int) -> list[Match]:
        hits = self.store.vectors.nearest(vector, [status], k)
        if k == 1:
            return [Match(hit.memory_id, hit.cosine) for hit in hits]
        found = self.store.memories.get_many([hit.memory_id for hit in hits])
        matches = []
        for hit in hits:
            memory = found.get(hit.memory_id)
            when = memory.occurred_at if memory is not None else None
            matches.append(Match(hit.memory_id, hit.cosine, utc_day(when) if when else None))
        return matches

    def _apply(
        self,
        decision: Decision,
        proposal: Proposal,
        vector: Vector,
        provenance: Provenance,
        actor: Actor,
        at: datetime,
    ) -> WriteResult:
        if decision.outcome is Outcome.DROPPED:
            return WriteResult(decision.outcome, decision.reason, decision.rule, None)
        if decision.outcome is Outcome.REINFORCED:
            assert decision.target_id is not None
            target = self._require(decision.target_id)
            self.store.memories.mark_confirmed(target.id, at)
            self.store.audit.append(
                AuditEntry(
                    target.id,
                    at,
                    actor,
                    "reinforce",
                    target.status,
                    target.status,
                    decision.reason,
                    decision.rule,
                )
            )
            return WriteResult(
                decision.outcome, decision.reason, decision.rule, self._require(target.id)
            )
        status = Status.ACTIVE if decision.outcome is Outcome.ACTIVATED else Status.PENDING
        memory = Memory(
            id=self._ids.new_id(at),
            kind=proposal.kind,
            status=status,
            content=proposal.content,
            source=provenance.source,
            created_at=at,
            last_confirmed_at=at,
            confidence=proposal.confidence,
            subject=proposal.subject,
            predicate=proposal.predicate,
            object=proposal.object,
            slot=proposal.slot,
            entities=proposal.entities or extract_entities(proposal.content),
            importance=proposal.importance
            or (Importance.MEDIUM if proposal.kind is Kind.LESSON else None),
            changes_behavior=proposal.changes_behavior,
            occurred_at=proposal.occurred_at,
            source_ref=provenance.source_ref,
            extractor_model=provenance.extractor_model,
            prompt_version=provenance.prompt_version,
        )
        if decision.supersedes is not None:
            self._archive_replaced(
                self._require(decision.supersedes),
                at,
                f"superseded by {memory.id}: {decision.reason}",
                actor,
            )
        self.store.memories.insert(memory, vector)
        if decision.supersedes is not None:
            self.store.memories.link_supersede(decision.supersedes, memory.id)
        self.store.audit.append(
            AuditEntry(memory.id, at, actor, "create", None, status, decision.reason, decision.rule)
        )
        return WriteResult(
            decision.outcome, decision.reason, decision.rule, self._require(memory.id)
        )

    def _archive_replaced(self, old: Memory, at: datetime, reason: str, actor: Actor) -> None:
        """Archive the slot's current holder before its successor becomes active (the
        one-active-per-slot index forbids the other order)."""
        self.store.memories.set_status(old.id, Status.ARCHIVED)
        self.store.audit.append(
            AuditEntry(old.id, at, actor, "supersede", old.status, Status.ARCHIVED, reason)
        )

    def _successor(self, old: Memory, at: datetime, **changes: Any) -> Memory:
        """A new row that will supersede ``old``: fresh id and history, ``changes`` applied."""
        fresh: dict[str, Any] = {
            "id": self._ids.new_id(at),
            "created_at": at,
            "last_retrieved_at": None,
            "retrieval_hits": 0,
            "supersedes": None,
            "superseded_by": None,
        }
        return replace(old, **{**fresh, **changes})

    def _change_status(
        self, memory: Memory, status: Status, actor: Actor, action: str, at: datetime, reason: str
    ) -> None:
        self.store.memories.set_status(memory.id, status)
        self.store.audit.append(
            AuditEntry(memory.id, at, actor, action, memory.status, status, reason)
        )

    def _slot_holder(self, memory: Memory) -> Memory | None:
        if memory.slot is None:
            return None
        for holder in self.store.memories.in_slot(memory.slot, Status.ACTIVE):
            if holder.id != memory.id:
                return holder
        return None

    def _chain(self, memory: Memory) -> list[Memory]:
        older: list[Memory] = []
        seen = {memory.id}
        cursor = memory
        while cursor.supersedes and cursor.supersedes not in seen:
            previous = self.store.memories.get(cursor.supersedes)
            if previous is None:
                break
            older.append(previous)
            seen.add(previous.id)
            cursor = previous
        newer: list[Memory] = []
        cursor = memory
        while cursor.superseded_by and cursor.superseded_by not in seen:
            following = self.store.memories.get(cursor.superseded_by)
            if following is None:
                break
            newer.append(following)
            seen.add(following.id)
            cursor = following
        return [*reversed(older), memory, *newer]

    def _require(self, memory_id: str) -> Memory:
        memory = self.store.memories.get(memory_id.strip())
        if memory is None:
            raise MemoryNotFoundError(
                f"no memory with id {memory_id!r}; list ids with `memoryd list`"
            )
        return memory

    @staticmethod
    def _require_status(memory: Memory, allowed: Sequence[Status], action: str) -> None:
        if memory.status not in allowed:
            names = " or ".join(s.value for s in allowed)
            raise InvalidOperationError(
                f"cannot {action} memory {memory.id}: it is {memory.status.value}; "
                f"{action} applies to {names} memories only"
            )

    # --- store-level operations for the surfaces ---

    def store_location(self) -> str | None:
        """Where the store lives: the SQLite file, or the PostgreSQL URL without its password."""
        location = getattr(self.store, "path", None)
        return None if location is None else str(location)

    def embedding_signature(self) -> EmbeddingSignature | None:
        """The embedding model and dimension the store was created with, if recorded."""
        return self.store.embedding_signature()

    def store_integrity_errors(self) -> list[str]:
        """What is damaged in the store (empty when its integrity check passes)."""
        return self.store.integrity_errors()

    def memory_count(self) -> int:
        """How many memories the store holds, in every status."""
        return self.store.memories.count()

    def job_counts(self) -> dict[str, int]:
        """The background job queue: how many jobs are in each state."""
        return self.store.jobs.counts()

    def recent_jobs(self, limit: int) -> list[Job]:
        """The newest ``limit`` background jobs, newest first."""
        return self.store.jobs.recent(limit)

    def export_to(self, out: TextIO, *, with_vectors: bool = False) -> ExportSummary:
        """Write everything in the store to ``out`` as JSON Lines (see :mod:`portability`)."""
        from .portability import export_store

        return export_store(self.store, out, with_vectors=with_vectors)

    def import_from(self, lines: Iterable[str]) -> ExportSummary:
        """Load an export into this (empty) store in one transaction, embedding what has no
        vector."""
        from .portability import import_store

        return import_store(self.store, lines, self.embedder)

    def backup_to(self, target: Path) -> BackupResult:
        """Write a consistent copy of the store to ``target`` (see :mod:`backup`)."""
        from .backup import make_backup

        return make_backup(self.store, target)


def _clean_text(text: str, what: str) -> str:
    if has_lone_surrogate(text):
        raise InvalidInputError(f"{what} holds invalid Unicode (a lone surrogate)")
    cleaned = text.strip()
    if not cleaned:
        raise InvalidInputError(f"{what} is empty; give the text to remember")
    if len(cleaned) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"{what} is {len(cleaned)} characters; a memory holds at most {MAX_CONTENT_CHARS} "
            "(put long material in the knowledge base)"
        )
    return cleaned


def _carried_object(old: Memory, new_content: str) -> str | None:
    """Keep the old object only when the corrected text still says it."""
    if old.object and normalize_key(old.object) in normalize_key(new_content):
        return old.object
    return None


def _holder_is_dead(holder: str) -> bool:
    """Whether a lease holder ("host:pid:token") is a process of this machine that is gone."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by someone else
        return False
    return False


def _secret_payload(text: str) -> dict[str, Any]:
    """Fingerprints of the secrets removed from a queued conversation, with their salt."""
    salt = secrets_module.token_hex(8)
    return {"salt": salt, "secrets": secret_fingerprints(text, salt)}


def _within(memory: Memory, window: TimeWindow | None) -> bool:
    if window is None:
        return True
    instant = memory.occurred_at or memory.created_at
    return window.contains(instant)
