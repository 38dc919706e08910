"""The one front door: every operation on memories, each write in one transaction.

``MemoryService`` is a thin facade over parts split by job: writes (``writes``), the owner's
review (``review``), recall and search (``retriever``), the extraction queue
(``extraction_queue``), consolidation runs (``consolidation_run``) and background work
(``background``). Every status change goes through the ledger (``ledger``). Adapters (CLI,
HTTP, MCP) call only this.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, time, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from memoryd.clock import Clock, utc_now
from memoryd.collaborators import CollaboratorAccess, Collaborators, check_embedding_signature
from memoryd.config.settings import default_home
from memoryd.consolidation.policy import ConsolidationPolicy
from memoryd.consolidation.run import ConsolidationLeaseLost, ConsolidationRun, StageSkipped
from memoryd.errors import MemoryNotFoundError
from memoryd.evaluation.policy import DEFAULT_K, EvalCase
from memoryd.evaluation.run import EvalRun, OwnerEval
from memoryd.extraction.chat_import import ChatImporter, ChatImportReport, ProgressListener
from memoryd.extraction.extractor import MissionDigest
from memoryd.extraction.queue import ExtractionQueue
from memoryd.ids import IdGenerator, resolve_prefix
from memoryd.jobs.model import Job, RetryPolicy
from memoryd.jobs.worker import (
    CONSOLIDATION_LEASE_SECONDS,
    CONSOLIDATION_LOCK,
    BackgroundThread,
    ConsolidationLease,
    Consolidator,
    DailyConsolidation,
    WorkerLoop,
)
from memoryd.kb.images import ImageReader
from memoryd.kb.images import image_reader as default_image_reader
from memoryd.kb.service import KnowledgeBase
from memoryd.kb.sync.loop import SyncLoop
from memoryd.kb.sync.run import FolderSync
from memoryd.memory.forget import Forgetting
from memoryd.memory.forget_policy import ForgetResult
from memoryd.memory.ledger import Ledger
from memoryd.memory.model import (
    Actor,
    Importance,
    Kind,
    Memory,
    Proposal,
    Provenance,
    ShowResult,
    Source,
    Status,
)
from memoryd.memory.promotion_policy import PromotionPolicy
from memoryd.memory.proposal_policy import parse_batch, parse_batch_text
from memoryd.memory.review import OwnerReview
from memoryd.memory.slot_vocabulary import reslot_if_needed
from memoryd.memory.writes import EVENT_NEIGHBORS, MemoryWriter, RememberRequest
from memoryd.ops.store_admin import StoreAdmin
from memoryd.providers.embedder import Embedder
from memoryd.providers.llm import Gateway
from memoryd.providers.tokenizer import O200kTokenizer, TokenCodec
from memoryd.recall.context import build_context
from memoryd.recall.context_policy import ContextPack
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import Retriever
from memoryd.results import (
    ConsolidationReport,
    JobReport,
    Observation,
    RecallResult,
    ReviewItem,
    SearchResult,
    SplitResult,
    WorkRound,
    WriteResult,
)
from memoryd.storage.protocols import Store
from memoryd.tools import dispatch, tool_definitions
from memoryd.trust.taint import SessionTaints

if TYPE_CHECKING:
    from memoryd.recall.evidence import Evidence

__all__ = ["CONSOLIDATION_LEASE_SECONDS", "CONSOLIDATION_LOCK", "EVENT_NEIGHBORS",
           "ConsolidationLeaseLost", "ConsolidationReport", "JobReport", "MemoryService",
           "Observation", "RecallResult", "ReviewItem", "SearchResult", "StageSkipped",
           "WorkRound", "WriteResult"]  # fmt: skip


class MemoryService(CollaboratorAccess):
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
        home: Path | None = None,
    ) -> None:
        ids = IdGenerator()
        self.parts = Collaborators(
            store=store,
            embedder=embedder,
            gateway=gateway or Gateway({}),
            policy=policy or PromotionPolicy(),
            recall_policy=recall_policy or RecallPolicy(),
            retry_policy=retry_policy or RetryPolicy(),
            tokenizer=tokenizer or O200kTokenizer(),
            clock=clock,
            # The owner's time zone: days in time windows and episodes are the owner's days.
            zone=zone,
            ids=ids,
            ledger=Ledger(store, ids),
        )
        check_embedding_signature(store, embedder)
        # A store whose fact slots were keyed before canonical forms is re-slotted once.
        reslot_if_needed(self.parts)
        images = (lambda: image_reader) if image_reader is not None else self._image_reader
        self.kb = KnowledgeBase(
            store, embedder, self.parts.tokenizer, images, clock=clock, ids=ids, home=home
        )
        self.writer = MemoryWriter(self.parts)
        self.review = OwnerReview(self.parts)
        self.forgetting = Forgetting(self.parts)
        self.admin = StoreAdmin(self.parts)
        self.retriever = Retriever(self.parts)
        self.evaluation = OwnerEval(self.parts, self.resolve_id)
        self.worker = WorkerLoop(
            ExtractionQueue(self.parts, self.writer.propose, lambda: self.worker.wake.set()),
            self.kb,
            store,
        )
        self.chat_importer = ChatImporter(self.parts, self.worker.queue)
        self.consolidator = Consolidator(
            store, ConsolidationRun(self.parts, self.writer.propose), ConsolidationLease(store)
        )
        # The model's tool sessions and their taint: per process, in memory.
        self.sessions = SessionTaints(lambda: self.parts.clock())
        self._worker_thread = BackgroundThread("memoryd-worker")
        self._scheduler_thread = BackgroundThread("memoryd-scheduler")
        # Synced sources (``memoryd kb sync``); refused paths are judged against the home.
        self.sync = FolderSync(
            store, self.kb, clock=clock, ids=ids, home=home or default_home(os.environ)
        )
        self.sync_loop = SyncLoop(self.sync, lambda: self.parts.clock(),
                                  after_pass=self.worker.wake.set)  # fmt: skip
        self._sync_thread = BackgroundThread("memoryd-sync")

    # --------------------------------------------------------------------- writes

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
        tainted_by: str | None = None,
    ) -> WriteResult:
        """Keep something the owner asked for. The owner's own call is active at once; a
        model's tool call is too, unless the content could change behaviour, or
        ``tainted_by`` says the model read untrusted content first (then pending).
        Credentials are refused whoever asks."""
        asked = RememberRequest(content, kind, subject, predicate, object, entities, importance,
                                changes_behavior, occurred_at, confidence, actor,
                                tainted_by)  # fmt: skip
        return self.writer.remember(asked, now)

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
        at = self.parts.now(now)
        if isinstance(batch, str):
            proposals = parse_batch_text(batch)
        elif isinstance(batch, dict):
            proposals = parse_batch(batch)
        else:
            proposals = tuple(batch)
        provenance = Provenance(source, source_ref, extractor_model, prompt_version)
        return self.writer.propose(proposals, provenance, at, tainted_by)

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
        return self.writer.edit(memory_id, content, object, now)

    def purge(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: erase a memory's content for privacy, keeping a tombstone."""
        return self.writer.purge(memory_id, now=now)

    def forget(
        self,
        *,
        entity: str | None = None,
        query: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> ForgetResult:
        """Owner action: erase everything about ``entity`` or matching ``query`` (one of the
        two). Lists every memory in any status (active, pending, archived, superseded,
        rejected) and every knowledge-base chunk that names the entity (tagged with it or one
        of its aliases, or holding one as whole words) or matches the query (every content
        word, and a cosine of at least :data:`memoryd.memory.forget_policy.QUERY_MIN_COSINE`); then,
        unless
        ``dry_run``, purges those memories (tombstones kept) and removes the documents those
        chunks belong to, whole, in one transaction, and records the request with its counts
        (no content) in the store and in each tombstone's audit entry."""
        self.settle()
        return self.forgetting.forget(entity, query, dry_run, now)

    def add_alias(self, name: str, alias: str) -> None:
        """Owner action: ``alias`` names the same entity as ``name`` (for the entity leg)."""
        self.writer.add_alias(name, alias)

    # --------------------------------------------------------------------- review

    def confirm(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: a pending memory becomes active, superseding its slot's active fact."""
        return self.review.confirm(memory_id, now=now)

    def reject(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: reject a pending or active memory; near-copies stay out from now on."""
        return self.review.reject(memory_id, now=now)

    def archive(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: retire a memory without rejecting what it says."""
        return self.review.archive(memory_id, now=now)

    def split(self, memory_id: str, *, now: datetime | None = None) -> SplitResult:
        """Owner action: a fact that was treated as the same slot as another predicate
        (``same_slot_as``) gets its own slot back, keeping its status. If it had replaced
        that slot's fact on arrival, that fact is active again and the supersede between
        them is undone; a pending one no longer would replace anything. Later facts with
        its predicate go to its own slot."""
        return self.review.split(memory_id, now=now)

    def reconfirm(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: an active memory is still true; ``last_confirmed_at`` moves to now."""
        return self.review.reconfirm(memory_id, now=now)

    def reconfirmation_queue(self) -> list[Memory]:
        """Active facts whose confidence consolidation lowered and nobody reconfirmed since:
        the owner reconfirms, edits or archives them."""
        self.settle()
        return self.review.reconfirmation_queue()

    def review_queue(self) -> list[ReviewItem]:
        """Pending memories, oldest first, each with why it waits (``reason``) and the active
        fact it would supersede (``would_replace``)."""
        return self.review.review_queue()

    def review_items(self, memories: Sequence[Memory]) -> list[ReviewItem]:
        """``memories`` as review items: each with the reason its creation gave and, for a
        fact, the active fact of its slot it would replace."""
        return self.review.review_items(memories)

    def resolve_id(self, memory_id: str) -> str:
        """The whole id of the memory ``memory_id`` names: its id, or a unique start of it of
        at least 4 characters (as git takes commits). MemoryNotFoundError when none,
        AmbiguousIdError (listing them) when several. For the owner's command line; the
        HTTP API and the model's tools take whole ids only."""
        memories = self.store.memories
        return resolve_prefix(
            memory_id,
            ("memory", "memories"),
            exists=lambda whole: memories.get(whole) is not None,
            starting=memories.ids_starting,
            labels=lambda ids: {
                i: "[purged]" if m.purged_at else m.content
                for i, m in memories.get_many(ids).items()
            },
            not_found=MemoryNotFoundError,
        )

    def get(self, memory_id: str) -> Memory:
        """One memory, or MemoryNotFoundError."""
        self.settle()
        return self.parts.require(memory_id)

    def list_memories(
        self, *, status: Status | None = None, kind: Kind | None = None, limit: int | None = None
    ) -> list[Memory]:
        """Memories, newest first."""
        self.settle()
        return self.store.memories.query(status=status, kind=kind, limit=limit)

    def show(self, memory_id: str) -> ShowResult:
        """A memory with its supersede chain (oldest first) and the audit trail of the chain."""
        self.settle()
        return self.review.show(memory_id)

    # ---------------------------------------------------------- recall and search

    def recall(
        self,
        message: str,
        *,
        budget: int | None = None,
        now: datetime | None = None,
        stamp: bool = True,
    ) -> RecallResult:
        """The memory block for this turn: candidates gated, fused, weighted, cut where the
        evidence thins out and packed within the token budget, standing lessons first. An
        empty memories section when nothing is relevant. Stamps what it packed (retrieval
        hits, last retrieved), unless ``stamp`` is False: a preview, such as the owner trying
        a message on the web page, that consolidation must not count as use."""
        return self.retriever.recall(message, budget, now, stamp)

    def context(
        self,
        message: str,
        *,
        budget: int | None = None,
        now: datetime | None = None,
        explain: bool = False,
        stamp: bool = True,
        pinned_collections: Sequence[str] = (),
    ) -> ContextPack:
        """The one context pack for this turn: standing lessons, then the memories recall
        admits and the document chunks search_kb admits (each through its own gates),
        interleaved by one calibrated score (:mod:`memoryd.recall.context_policy` says how), chunks
        that repeat a memory left out, all in one fenced block within ``budget`` o200k tokens
        (default: the recall budget). ``dropped`` says what was left out and why; ``explain``
        adds each item's ranks and weights to the JSON. Stamps the memories it packed, as
        recall does, unless ``stamp`` is False."""
        return build_context(
            self.retriever,
            self.kb,
            message,
            budget=budget,
            now=now,
            explain=explain,
            stamp=stamp,
            pinned_collections=pinned_collections,
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
        stamp: bool = True,
    ) -> SearchResult:
        """A deliberate lookup: the same legs and gates as recall, filtered by kind and by an
        explicit time range, returned as a ranked list (no cut, no packing). Stamps what it
        returns, unless ``stamp`` is False (the owner browsing, not the model using)."""
        return self.retriever.search(query, kind, (since, until), limit, now, stamp)

    def leg_rankings(
        self, message: str, *, now: datetime | None = None
    ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """Each leg's own ranking of active memory ids for ``message`` (before the gates and
        fusion), and each leg's state; for ablations and diagnostics."""
        evidence = self.retriever.evidence(message, now)
        return evidence.rankings, evidence.legs

    def evidence(self, message: str, *, now: datetime | None = None) -> Evidence:
        """What the vector, text, entity and time legs find for ``message``, with everything
        the gates judge (cosines, words, names, window); for diagnostics and calibration:
        ``memoryd.recall.evidence.rank`` turns it into recall's ranking under any policy."""
        return self.retriever.evidence(message, now)

    # ---------------------------------------------------------- the owner's evaluation set

    def eval_add(
        self,
        question: str,
        *,
        expected: Sequence[str] = (),
        noise: Sequence[str] = (),
        now: datetime | None = None,
    ) -> EvalCase:
        """Owner action: recall should find the ``expected`` memories for ``question`` and not
        show the ``noise`` ones (ids or unique prefixes). A question already in the set gets
        the new ids joined to its case (the latest verdict on a memory wins)."""
        return self.evaluation.add(question, expected, noise, now)

    def eval_cases(self) -> list[EvalCase]:
        """The evaluation set, oldest case first."""
        return self.evaluation.cases()

    def eval_remove(self, case_id: str) -> EvalCase:
        """Owner action: drop one evaluation case (its id or a unique prefix)."""
        return self.evaluation.remove(case_id)

    def eval_run(
        self,
        *,
        k: int = DEFAULT_K,
        overrides: Mapping[str, Any] | None = None,
        embedder: Embedder | None = None,
        now: datetime | None = None,
    ) -> EvalRun:
        """Score every case against the current configuration: recall@k (expected memories in
        the top ``k`` of ``search_memory``), block recall and noise (in recall's block). With
        ``overrides`` (``{"recall.vector_gate": 0.3}``, see ``memoryd.evaluation.policy``) or
        another
        ``embedder`` (its vectors held in memory), a candidate report too. Nothing is stamped
        as retrieved and nothing stored changes."""
        return self.evaluation.run(k, overrides or {}, embedder, now)

    def settle(self) -> None:
        """Wait until the retrieval stamps of earlier recalls are written (reads through the
        service do this themselves)."""
        self.retriever.settle()

    def tool_definitions(self, style: str = "anthropic") -> list[dict[str, Any]]:
        """JSON Schema definitions of the model's tools (remember, search_memory, search_kb,
        read_kb)."""
        return tool_definitions(style)

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        pinned_collections: Sequence[str] = (),
        session: str | None = None,
        turn: str | None = None,
        untrusted: bool = False,
    ) -> dict[str, Any]:
        """Run a model's tool call; acts as the model (Actor.TOOL), never as the owner.
        ``pinned_collections`` (the agent's and the session's) boost search_kb; the model
        cannot set them.

        ``session`` (the conversation's id) keeps a taint: once search_kb or read_kb returned
        content in it, or a call was marked ``untrusted`` (the model read another tool's
        output), every ``remember`` in it waits for the owner ("written after reading
        untrusted content"), until a call with a new ``turn`` (the id of the owner's next
        message). Without a session the call is a session of its own."""
        return dispatch(
            self,
            name,
            arguments,
            pinned_collections=pinned_collections,
            session=session,
            turn=turn,
            untrusted=untrusted,
        )

    # ----------------------------------------------------------- extraction queue

    def observe_turn(
        self,
        user_message: str,
        summary: str | None = None,
        *,
        at: datetime | None = None,
        now: datetime | None = None,
        tainted_by: str | None = None,
    ) -> Observation:
        """Fire-and-forget: queue the turn for extraction and return at once. The queue is
        persisted, so a crash loses no turn; the worker extracts it in the background.
        ``at`` is when the turn happened (naive: the owner's local time; default now): the
        model reads "yesterday" against it, and an event it leaves undated gets its date.
        ``tainted_by`` says why the turn is suspect (the model read tool output in it); then
        nothing extracted from it activates alone."""
        return self.worker.queue.observe_turn(
            user_message, summary, at=at, now=now, tainted_by=tainted_by
        )

    def before_compaction(
        self, turns: Sequence[Mapping[str, Any]], *, now: datetime | None = None
    ) -> Observation:
        """Queue the turns about to be summarised away for extraction: ``{"role",
        "content"}`` each, with an optional ``"at"`` (ISO text or datetime; without an offset
        the owner's local time; default now)."""
        return self.worker.queue.before_compaction(turns, now=now)

    def mission_finished(
        self, digest: MissionDigest, *, now: datetime | None = None
    ) -> Observation:
        """Queue a finished mission's digest for the stricter, discoveries-only extraction
        (dated by ``digest.finished_at``, default now)."""
        return self.worker.queue.mission_finished(digest, now=now)

    def import_chats(
        self,
        path: str | Path,
        *,
        format: str = "auto",
        dry_run: bool = False,
        now: datetime | None = None,
        progress: ProgressListener | None = None,
    ) -> ChatImportReport:
        """Queue every turn of a ChatGPT or Claude export (``conversations.json`` or the
        export's .zip; ``format`` ``chatgpt``, ``claude`` or ``auto``) for extraction, oldest
        first, each dated by the owner's message. Turns already imported are left out, so
        importing again queues nothing; a file that cannot be read stores nothing, and all the
        turns are queued in one transaction. ``dry_run`` counts without queueing."""
        return self.chat_importer.import_file(
            Path(path), chosen=format, dry_run=dry_run, now=now, progress=progress
        )

    def import_chat_bytes(
        self,
        data: bytes,
        *,
        format: str = "auto",
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> ChatImportReport:
        """:meth:`import_chats` over the file's bytes (an upload)."""
        return self.chat_importer.import_bytes(data, chosen=format, dry_run=dry_run, now=now)

    def run_jobs(
        self, *, limit: int | None = None, now: datetime | None = None, job_id: str | None = None
    ) -> list[JobReport]:
        """Run due extraction jobs (or just ``job_id``) until none is due or ``limit`` ran."""
        return self.worker.queue.run_jobs(limit=limit, now=now, job_id=job_id)

    def job(self, job_id: str) -> Job:
        """One job, or a clear error."""
        return self.worker.queue.job(job_id)

    def retry_job(self, job_id: str, *, now: datetime | None = None) -> Job:
        """Queue a failed (or waiting) job again, due now (``memoryd jobs retry``)."""
        job = self.worker.queue.retry(job_id, now)
        self.worker.wake.set()
        return job

    def work(
        self,
        poll_seconds: float = 5.0,
        *,
        once: bool = False,
        stop: threading.Event | None = None,
        on_round: Callable[[WorkRound], None] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Drain the extraction queue and the document retries in this thread: round after
        round until ``stop`` is set (or one round when ``once``), waiting ``poll_seconds``
        between rounds unless a trigger wakes it. ``on_round`` sees each round's reports and
        the queue counts. The one worker loop, also behind ``start_worker``."""
        self.worker.run(poll_seconds, once=once, stop=stop, on_round=on_round, now=now)

    def start_worker(
        self, poll_seconds: float = 5.0, *, on_round: Callable[[WorkRound], None] | None = None
    ) -> None:
        """Run queued jobs in a background thread until ``stop_worker``; woken at once by
        every new trigger. Idempotent."""
        self._worker_thread.start(
            lambda stop: self.worker.run(poll_seconds, stop=stop, on_round=on_round)
        )

    def stop_worker(self, timeout: float = 30.0) -> None:
        """Stop the background worker after its current job."""
        self._worker_thread.stop(timeout, wake=self.worker.wake)

    def start_sync(self) -> None:
        """Keep the synced sources current in a background thread (notifications, rescans)
        until ``stop_sync``; the worker embeds what it writes. Idempotent."""
        self._sync_thread.start(self.sync_loop.run)

    def stop_sync(self, timeout: float = 30.0) -> None:
        """Stop keeping synced sources current after the pass under way."""
        self._sync_thread.stop(timeout, wake=self.sync_loop.wake)

    # -------------------------------------------------------------- consolidation

    def consolidate(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        policy: ConsolidationPolicy | None = None,
    ) -> ConsolidationReport:
        """The daily job's stages (SPEC §5): merge near-duplicates, dedupe pending, archive
        episodic, decay semantic, decay inferences, reflect, demote pending. Each stage plans
        purely, then applies its steps audited with the stage's name; one failing stage is
        reported and the others still run. Runs under the store-wide lease
        (ConsolidationBusyError when another run holds it; ConsolidationLeaseLost when another
        run takes it midway). A dry run plans and changes nothing."""
        rules = policy or ConsolidationPolicy()
        return self.consolidator.now(self.parts.now(now), rules, dry_run=dry_run)

    def last_consolidation(self) -> datetime | None:
        """When consolidation last completed (by its ``now``)."""
        return self.consolidator.last_run()

    def daily_consolidation(self, daily_at: time, zone: tzinfo) -> DailyConsolidation:
        """The daily schedule at ``daily_at`` local time; its ``tick(now)`` runs consolidation
        when due (the scheduler thread calls it; tests call it directly)."""
        return DailyConsolidation(self.consolidator, daily_at, zone)

    def start_scheduler(self, daily_at: time, zone: tzinfo, *, poll_seconds: float = 60.0) -> None:
        """Run consolidation daily at ``daily_at`` local time in a background thread; at start
        it catches up once if a day was missed. Idempotent; stopped by ``stop_scheduler``."""
        daily = self.daily_consolidation(daily_at, zone)
        # The clock is read at each tick (tests swap it on a running service).
        self._scheduler_thread.start(
            lambda stop: daily.run(lambda: self.parts.clock(), poll_seconds, stop)
        )

    def stop_scheduler(self, timeout: float = 60.0) -> None:
        """Stop the daily scheduler after its current run."""
        self._scheduler_thread.stop(timeout)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop background work, write pending stamps, release the store."""
        self.stop_scheduler()
        self.stop_sync()
        self.stop_worker()
        self.retriever.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _image_reader(self) -> ImageReader:
        return default_image_reader(self.gateway)
