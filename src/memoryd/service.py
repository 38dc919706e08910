"""The one front door: every operation on memories, each write in one transaction.

``MemoryService`` is a thin facade over a few sub-facades, each built from its parts with
their real dependencies as constructor arguments: ``memories`` (writing, the owner's review,
reading), ``retrieval`` (recall, the context pack, search), ``kb`` (the knowledge base),
``jobs`` (extraction triggers, the worker, consolidation, the background threads),
``evaluation`` (the owner's evaluation set), ``tools`` (the model's tools) and ``admin`` (the
store as a whole). Its own methods forward to them, so the Python API, the CLI, HTTP and MCP
keep one entry point. Adapters call only this. A model or the clock is replaced through
``use_gateway``, ``use_embedder`` and ``use_clock``, which reach every part built with it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Self

from memoryd.clock import Clock, utc_now
from memoryd.config.settings import default_home
from memoryd.consolidation.run import ConsolidationLeaseLost, ConsolidationRun, StageSkipped
from memoryd.evaluation.run import OwnerEval
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
from memoryd.memory.slot_vocabulary import SlotVocabulary, reslot_if_needed
from memoryd.memory.writes import EVENT_NEIGHBORS, MemoryWriter
from memoryd.ops.store_admin import StoreAdmin, check_embedding_signature
from memoryd.providers.embedder import Embedder
from memoryd.providers.llm import Gateway
from memoryd.providers.tokenizer import O200kTokenizer, TokenCodec
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import Retriever
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
from memoryd.tools import ModelTools
from memoryd.trust.taint import SessionTaints

__all__ = ["CONSOLIDATION_LEASE_SECONDS", "CONSOLIDATION_LOCK", "EVENT_NEIGHBORS",
           "ConsolidationLeaseLost", "ConsolidationReport", "JobReport", "MemoryService",
           "Observation", "RecallResult", "ReviewItem", "SearchResult", "StageSkipped",
           "WorkRound", "WriteResult"]  # fmt: skip


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
        home: Path | None = None,
        ids: IdGenerator | None = None,
    ) -> None:
        check_embedding_signature(store, embedder)
        # The owner's time zone: days in time windows and episodes are the owner's days.
        self._store, self._zone = store, zone
        self._embedder, self._gateway = embedder, gateway or Gateway({})
        self._tokenizer = tokens = tokenizer or O200kTokenizer()
        self._clock = now = _Clock(clock)
        ids = ids or IdGenerator()
        ledger = Ledger(store, ids)
        policy = policy or PromotionPolicy()
        recall_policy = recall_policy or RecallPolicy()
        # A store whose fact slots were keyed before canonical forms is re-slotted once.
        reslot_if_needed(store, ledger, now())
        images = (lambda: image_reader) if image_reader is not None else self._image_reader
        self.kb = KnowledgeBase(store, embedder, tokens, images, clock=now, ids=ids, home=home)
        retriever = Retriever(store=store, embedder=embedder, tokenizer=tokens,
                              policy=recall_policy, clock=now, zone=zone)  # fmt: skip
        slots = SlotVocabulary(store=store, embedder=embedder, policy=policy.slots)
        writer = MemoryWriter(store=store, embedder=embedder, policy=policy, slots=slots,
                              clock=now, ids=ids, ledger=ledger)  # fmt: skip
        forgetting = Forgetting(store=store, embedder=embedder, clock=now, ids=ids, ledger=ledger)
        review = OwnerReview(store=store, clock=now, ledger=ledger)
        self.memories = Memories(store=store, writer=writer, review=review, forgetting=forgetting,
                                 clock=now, settle=retriever.settle)  # fmt: skip
        self.retrieval = Retrieval(retriever, self.kb)
        self.admin = StoreAdmin(store=store, embedder=embedder, gateway=self._gateway,
                                tokenizer=tokens, clock=now, ledger=ledger)  # fmt: skip
        resolve = self.memories.resolve_id
        self.evaluation = OwnerEval(store=store, embedder=embedder, tokenizer=tokens, ids=ids,
                                    recall_policy=recall_policy, clock=now, zone=zone,
                                    resolve_memory=resolve)  # fmt: skip
        queue = ExtractionQueue(store=store, gateway=self._gateway, policy=policy,
                                retry_policy=retry_policy or RetryPolicy(), clock=now,
                                zone=zone, ids=ids, propose=writer.propose,
                                on_enqueue=lambda: self.jobs.wake())  # fmt: skip
        consolidation = ConsolidationRun(store=store, embedder=embedder, gateway=self._gateway,
                                         ledger=ledger, propose=writer.propose)  # fmt: skip
        chats = ChatImporter(store=store, gateway=self._gateway, clock=now, queue=queue)
        # Reached by tests that drive a loop by hand; the surfaces go through ``jobs``.
        self.worker = WorkerLoop(queue=queue, kb=self.kb, store=store)
        lease = ConsolidationLease(store)
        self.consolidator = Consolidator(store=store, run=consolidation, lease=lease)
        # The model's tool sessions and their taint: per process, in memory.
        self.sessions = SessionTaints(now)
        self.tools = ModelTools(self)
        # Synced sources (``memoryd kb sync``); refused paths are judged against the home.
        self.sync = FolderSync(store, self.kb, clock=now, ids=ids,
                               home=home or default_home(os.environ))  # fmt: skip
        sync_loop = SyncLoop(self.sync, now, after_pass=lambda: self.jobs.wake())
        self.jobs = Jobs(worker=self.worker, chat_importer=chats, consolidator=self.consolidator,
                         sync_loop=sync_loop, clock=now)  # fmt: skip
        self._retriever = retriever
        # Every part built with a model that use_gateway and use_embedder replace.
        self._parts = (retriever, slots, writer, forgetting, self.admin, self.evaluation, queue,
                       consolidation, chats)  # fmt: skip

    @property
    def store(self) -> Store:
        """The storage backend."""
        return self._store

    @property
    def tokenizer(self) -> TokenCodec:
        """The tokenizer recall packs with."""
        return self._tokenizer

    @property
    def zone(self) -> tzinfo:
        """The owner's time zone."""
        return self._zone

    @property
    def embedder(self) -> Embedder:
        """The embedding model of the memories (see :meth:`use_embedder`)."""
        return self._embedder

    @property
    def gateway(self) -> Gateway:
        """The LLM routes: extract, merge, reflect, caption (see :meth:`use_gateway`)."""
        return self._gateway

    def use_gateway(self, gateway: Gateway) -> None:
        """Replace the LLM routes for every part that calls a model (the server does when
        the settings change; tests hand in scripted models)."""
        self._gateway = gateway
        self._hand_over("gateway", gateway)

    def use_embedder(self, embedder: Embedder) -> None:
        """Replace the memories' embedding model for every part that embeds (tests: an
        embedder that fails). The knowledge base keeps its own."""
        self._embedder = embedder
        self._hand_over("embedder", embedder)

    def use_clock(self, clock: Clock) -> None:
        """Read the time from ``clock`` from now on, in every part (tests)."""
        self._clock.source = clock

    def _hand_over(self, name: str, value: object) -> None:
        for part in self._parts:
            if name in vars(part):
                setattr(part, name, value)

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
    import_chat_stream = Forward("jobs", Jobs.import_chat_stream)
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

    eval_add = Forward("evaluation", OwnerEval.add)
    eval_cases = Forward("evaluation", OwnerEval.cases)
    eval_remove = Forward("evaluation", OwnerEval.remove)
    eval_run = Forward("evaluation", OwnerEval.run)

    # ----------------------------------------------------------------- model tools

    tool_definitions = Forward("tools", ModelTools.tool_definitions)
    call_tool = Forward("tools", ModelTools.call_tool)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop background work, write pending stamps, release the store."""
        self.jobs.stop()
        self._retriever.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _image_reader(self) -> ImageReader:
        return default_image_reader(self.gateway)


class _Clock:
    """The service's clock, as every part calls it; :meth:`MemoryService.use_clock` points it
    at another source."""

    def __init__(self, source: Clock) -> None:
        self.source = source

    def __call__(self) -> datetime:
        return self.source()
