"""The one front door: every operation on memories, each write in one transaction.

``MemoryService`` is a thin facade over a few sub-facades, each built from its parts with
their real dependencies as constructor arguments: ``memories`` (writing, the owner's review,
reading), ``retrieval`` (recall, the context pack, search), ``kb`` (the knowledge base),
``jobs`` (extraction triggers, the worker, consolidation, the background threads) and
``admin`` (the store as a whole). Its own methods forward to them, so the Python API, the CLI,
HTTP and MCP keep one entry point. Adapters call only this.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Self

from memoryd.clock import Clock, utc_now
from memoryd.collaborators import CollaboratorAccess, Collaborators, check_embedding_signature
from memoryd.config.settings import default_home
from memoryd.consolidation.run import ConsolidationLeaseLost, ConsolidationRun, StageSkipped
from memoryd.evaluation.policy import DEFAULT_K, EvalCase
from memoryd.evaluation.run import EvalRun, OwnerEval
from memoryd.extraction.chat_import import ChatImporter
from memoryd.extraction.queue import ExtractionQueue
from memoryd.forward import Forward
from memoryd.ids import IdGenerator
from memoryd.jobs.model import RetryPolicy
from memoryd.jobs.service import Jobs
from memoryd.jobs.worker import (
    CONSOLIDATION_LEASE_SECONDS,
    CONSOLIDATION_LOCK,
    ConsolidationLease,
    Consolidator,
    WorkerLoop,
)
from memoryd.kb.images import ImageReader
from memoryd.kb.images import image_reader as default_image_reader
from memoryd.kb.service import KnowledgeBase
from memoryd.kb.sync.loop import SyncLoop
from memoryd.kb.sync.run import FolderSync
from memoryd.memory.forget import Forgetting
from memoryd.memory.ledger import Ledger
from memoryd.memory.promotion_policy import PromotionPolicy
from memoryd.memory.review import OwnerReview
from memoryd.memory.service import Memories
from memoryd.memory.slot_vocabulary import reslot_if_needed
from memoryd.memory.writes import EVENT_NEIGHBORS, MemoryWriter
from memoryd.ops.store_admin import StoreAdmin
from memoryd.providers.embedder import Embedder
from memoryd.providers.llm import Gateway
from memoryd.providers.tokenizer import O200kTokenizer, TokenCodec
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import SharedPartsRetriever
from memoryd.recall.service import Retrieval
from memoryd.results import (
    ConsolidationReport,
    JobReport,
    Observation,
    RecallResult,
    ReviewItem,
    SearchResult,
    WorkRound,
    WriteResult,
)
from memoryd.storage.protocols import Store
from memoryd.tools import dispatch, tool_definitions
from memoryd.trust.taint import SessionTaints

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
        # What the domain parts share (mutable: ``service.gateway = ...`` reaches them all).
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
        self.retriever = SharedPartsRetriever(self.parts)
        writer = MemoryWriter(self.parts)
        self.memories = Memories(
            store,
            writer,
            OwnerReview(self.parts),
            Forgetting(self.parts),
            now=self.parts.now,
            settle=self.retriever.settle,
        )
        self.retrieval = Retrieval(self.retriever, self.kb)
        self.admin = StoreAdmin(self.parts)
        self._evaluation = OwnerEval(self.parts, self.memories.resolve_id)
        self.worker = WorkerLoop(
            ExtractionQueue(self.parts, writer.propose, lambda: self.jobs.wake()), self.kb, store
        )
        self.consolidator = Consolidator(
            store, ConsolidationRun(self.parts, writer.propose), ConsolidationLease(store)
        )
        # The model's tool sessions and their taint: per process, in memory.
        self.sessions = SessionTaints(lambda: self.parts.clock())
        # Synced sources (``memoryd kb sync``); refused paths are judged against the home.
        self.sync = FolderSync(
            store, self.kb, clock=clock, ids=ids, home=home or default_home(os.environ)
        )
        self.sync_loop = SyncLoop(self.sync, lambda: self.parts.clock(),
                                  after_pass=lambda: self.jobs.wake())  # fmt: skip
        self.jobs = Jobs(
            self.worker,
            ChatImporter(self.parts, self.worker.queue),
            self.consolidator,
            self.sync_loop,
            clock=lambda: self.parts.clock(),
        )

    # ------------------------------------------------- memories: writes, review, reading
    remember = Forward("memories", Memories.remember)
    propose = Forward("memories", Memories.propose)
    edit = Forward("memories", Memories.edit)
    purge = Forward("memories", Memories.purge)
    forget = Forward("memories", Memories.forget)
    add_alias = Forward("memories", Memories.add_alias)
    confirm = Forward("memories", Memories.confirm)
    reject = Forward("memories", Memories.reject)
    archive = Forward("memories", Memories.archive)
    split = Forward("memories", Memories.split)
    reconfirm = Forward("memories", Memories.reconfirm)
    reconfirmation_queue = Forward("memories", Memories.reconfirmation_queue)
    review_queue = Forward("memories", Memories.review_queue)
    review_items = Forward("memories", Memories.review_items)
    resolve_id = Forward("memories", Memories.resolve_id)
    get = Forward("memories", Memories.get)
    list_memories = Forward("memories", Memories.list)
    show = Forward("memories", Memories.show)

    # ---------------------------------------------------------- recall and search
    recall = Forward("retrieval", Retrieval.recall)
    context = Forward("retrieval", Retrieval.context)
    search_memory = Forward("retrieval", Retrieval.search)
    leg_rankings = Forward("retrieval", Retrieval.leg_rankings)
    evidence = Forward("retrieval", Retrieval.evidence)
    settle = Forward("retrieval", Retrieval.settle)

    # ------------------------------------------- extraction queue and background work
    observe_turn = Forward("jobs", Jobs.observe_turn)
    before_compaction = Forward("jobs", Jobs.before_compaction)
    mission_finished = Forward("jobs", Jobs.mission_finished)
    import_chats = Forward("jobs", Jobs.import_chats)
    import_chat_bytes = Forward("jobs", Jobs.import_chat_bytes)
    run_jobs = Forward("jobs", Jobs.run_jobs)
    job = Forward("jobs", Jobs.job)
    retry_job = Forward("jobs", Jobs.retry_job)
    work = Forward("jobs", Jobs.work)
    start_worker = Forward("jobs", Jobs.start_worker)
    stop_worker = Forward("jobs", Jobs.stop_worker)
    start_sync = Forward("jobs", Jobs.start_sync)
    stop_sync = Forward("jobs", Jobs.stop_sync)
    consolidate = Forward("jobs", Jobs.consolidate)
    last_consolidation = Forward("jobs", Jobs.last_consolidation)
    daily_consolidation = Forward("jobs", Jobs.daily_consolidation)
    start_scheduler = Forward("jobs", Jobs.start_scheduler)
    stop_scheduler = Forward("jobs", Jobs.stop_scheduler)

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
        return self._evaluation.add(question, expected, noise, now)

    def eval_cases(self) -> list[EvalCase]:
        """The evaluation set, oldest case first."""
        return self._evaluation.cases()

    def eval_remove(self, case_id: str) -> EvalCase:
        """Owner action: drop one evaluation case (its id or a unique prefix)."""
        return self._evaluation.remove(case_id)

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
        another ``embedder`` (its vectors held in memory), a candidate report too. Nothing is
        stamped as retrieved and nothing stored changes."""
        return self._evaluation.run(k, overrides or {}, embedder, now)

    # ----------------------------------------------------------------- model tools

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
        return dispatch(self, name, arguments, pinned_collections=pinned_collections,
                        session=session, turn=turn, untrusted=untrusted)  # fmt: skip

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop background work, write pending stamps, release the store."""
        self.jobs.stop()
        self.retriever.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _image_reader(self) -> ImageReader:
        return default_image_reader(self.gateway)
