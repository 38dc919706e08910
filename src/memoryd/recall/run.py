"""Recall and search, stage after stage: read the message (:mod:`memoryd.recall.read`), run
the legs (:mod:`memoryd.recall.legs`), score and gate (:mod:`memoryd.recall.score`), cut and
pack (:mod:`memoryd.recall.score_policy`, :mod:`memoryd.recall.pack_policy`); what was handed
out is stamped on a background writer."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, tzinfo

from memoryd.clock import Clock
from memoryd.errors import InvalidInputError, StoreFullError
from memoryd.memory.entity_policy import EntityMatcher
from memoryd.memory.model import Kind, Memory
from memoryd.providers.embedder import Embedder
from memoryd.providers.tokenizer import TokenCodec
from memoryd.recall.bounds_policy import BoundedQuery
from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.excerpt_policy import Focus
from memoryd.recall.legs import Evidence, QueryEmbedder, run_legs
from memoryd.recall.pack_policy import Packed, pack_block
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import Query, read_message
from memoryd.recall.score import rank
from memoryd.recall.score_policy import Dropped, Ranking, Scored, relative_cut
from memoryd.recall.time_window_policy import TimeWindow
from memoryd.results import RecallResult, SearchResult
from memoryd.storage.full_disk import FullDiskNotice
from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")
Span = tuple[datetime | None, datetime | None]
"""An explicit (since, until) range; either end may be open."""
# Nothing to say: the empty block, uncounted, so a recall on a new store loads no tokenizer.
EMPTY_BLOCK = Packed(text="", tokens=0, lessons=(), items=(), dropped=())
# Retrieval stamps handed out within this many seconds of the first one waiting are written
# together (one transaction, in order).
STAMP_GATHER_SECONDS = 0.2


@dataclass(frozen=True)
class Ranked:
    """Recall before packing: when, what of the message was read, its time window, the
    evidence and its ranking, the memories kept after the relative cut (and the cut ones),
    and the standing lessons."""

    at: datetime
    read: BoundedQuery
    window: TimeWindow | None
    evidence: Evidence
    ranking: Ranking
    kept: tuple[Scored, ...]
    cut: tuple[Dropped, ...]
    lessons: tuple[Memory, ...]

    def dropped(self, standing: Sequence[Memory]) -> tuple[Dropped, ...]:
        """What the gates stopped and the cut left out; a standing lesson the legs also found
        is in the block whatever its gates said."""
        ids = {m.id for m in standing}
        return tuple(d for d in self.ranking.dropped if d.memory_id not in ids) + self.cut


class Retriever:
    """Recall, search and the evidence behind them; stamps what it hands out. Built with what
    it reads: the store, the embedder, the tokenizer it packs with, the recall policy, the
    clock and the owner's time zone (days in time windows and episodes are the owner's)."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        tokenizer: TokenCodec,
        policy: RecallPolicy,
        clock: Clock,
        zone: tzinfo,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.policy = policy
        self.clock = clock
        self.zone = zone
        self._matcher: tuple[tuple[int, int], EntityMatcher] | None = None
        self._stamper: ThreadPoolExecutor | None = None
        self._last_stamp: Future[None] | None = None
        self._stamp_lock = threading.Lock()
        # Stamps not yet written, in the order they were handed out, and the wake-up of the
        # write that will take them (None when no write is waiting).
        self._pending: list[tuple[list[str], datetime]] = []
        self._waiting: threading.Event | None = None
        self._stamps_notice = FullDiskNotice(log, "memoryd: writing retrieval stamps")
        self._query_embedder = QueryEmbedder(lambda: self.embedder)

    def recall(
        self, message: str, budget: int | None, now: datetime | None, stamp: bool = True
    ) -> RecallResult:
        """See :meth:`memoryd.service.MemoryService.recall`."""
        limit = self.budget(budget)
        found = self.ranked(message, now)
        packed = EMPTY_BLOCK
        if found.lessons or found.kept:
            focus = Focus.of(found.evidence.facts, self.policy)
            packed = pack_block(found.lessons, found.kept, self.tokenizer, limit, focus)
        packed_ids = [m.id for m in packed.lessons] + [s.memory.id for s in packed.items]
        if packed_ids and stamp:
            self.stamp_later(packed_ids, found.at)
        return RecallResult(
            packed,
            found.dropped(packed.lessons) + packed.dropped,
            found.evidence.legs,
            found.window,
            found.evidence.facts,
            found.ranking.silence,
            found.read,
        )

    def budget(self, budget: int | None) -> int:
        """The token budget asked for, else the recall budget of the settings."""
        limit = self.policy.budget_tokens if budget is None else budget
        if limit < 0:
            raise InvalidInputError("the token budget must be zero or more")
        return limit

    def ranked(self, message: str, now: datetime | None) -> Ranked:
        """Recall up to packing: the memories gated, ranked and cut, and the standing lessons."""
        policy = self.policy
        with self._one_space():
            query = self._read(message, now)
            evidence = run_legs(self.store, self._query_embedder, query)
            ranking, evidence = rank(self.store, evidence, query.at, policy, self.zone)
        kept, cut = relative_cut(ranking.items, policy)
        lessons = self.store.memories.standing_lessons()
        return Ranked(
            query.at,
            query.read,
            query.window,
            evidence,
            ranking,
            tuple(kept),
            tuple(cut),
            tuple(lessons),
        )

    def search(
        self,
        query: str,
        kind: Kind | None,
        span: Span,
        limit: int,
        now: datetime | None,
        stamp: bool = True,
    ) -> SearchResult:
        """See :meth:`memoryd.service.MemoryService.search_memory`."""
        at = now or self.clock()
        if not query.strip():
            raise InvalidInputError("the search query is empty; say what to look for")
        if limit < 1:
            raise InvalidInputError("the limit must be at least 1", fields=("limit",))
        since, until = span
        ranged = since is not None or until is not None
        window: TimeWindow | None = None
        if ranged:
            start = since or datetime.min.replace(tzinfo=at.tzinfo)
            end = until or at.replace(year=9999)
            if start >= end:
                raise InvalidInputError(
                    "since must be earlier than until", fields=("since", "until")
                )
            window = TimeWindow(start, end, "explicit range")

        def wanted(candidate: Candidate) -> bool:
            memory = candidate.memory
            return (kind is None or memory.kind is kind) and (not ranged or _within(memory, window))

        with self._one_space():
            read = self._read(query, at, (kind,) if kind else (), window)
            evidence = run_legs(self.store, self._query_embedder, read)
            ranking, evidence = rank(self.store, evidence, at, self.policy, self.zone, keep=wanted)
        top = ranking.items[:limit]
        if top and stamp:
            self.stamp_later([s.memory.id for s in top], at)
        return SearchResult(tuple(top), evidence.legs, read.read)

    def evidence(self, message: str, now: datetime | None) -> Evidence:
        """See :meth:`memoryd.service.MemoryService.evidence`."""
        with self._one_space():
            return run_legs(self.store, self._query_embedder, self._read(message, now))

    def _read(
        self,
        message: str,
        now: datetime | None,
        kinds: Sequence[Kind] = (),
        window: TimeWindow | None = None,
    ) -> Query:
        at = now or self.clock()
        return read_message(
            self.store, self._entity_matcher, message, at, self.zone, self.policy, kinds, window
        )

    def settle(self) -> None:
        """Wait until the retrieval stamps of earlier recalls are written."""
        with self._stamp_lock:
            future, waiting = self._last_stamp, self._waiting
        if future is None:
            return
        if waiting is not None:
            waiting.set()  # write now, without waiting for more stamps
        try:
            future.result()
        except Exception:  # a lost stamp is a statistic, not data: record it and go on
            log.exception("memoryd: writing retrieval stamps failed")

    def close(self) -> None:
        """Write pending stamps and stop the stamp writer."""
        self.settle()
        if self._stamper is not None:
            self._stamper.shutdown(wait=True)
            self._stamper = None

    @contextmanager
    def _one_space(self) -> Iterator[None]:
        """Gather and rank in the vector space this process embeds in: a recall is refused
        whole (StoreMismatchError) when the store moved to another model before it or while it
        ran (a re-embed's switch), not answered from the legs that happened to survive."""
        check_space = self.store.check_space
        check_space()
        try:
            yield
        except Exception:
            check_space()  # the switch, if it happened, is the error worth reporting
            raise
        check_space()

    def _entity_matcher(self) -> EntityMatcher:
        version = self.store.entities.version()
        if self._matcher is None or self._matcher[0] != version:
            self._matcher = (version, EntityMatcher.build(self.store.entities.aliases()))
        return self._matcher[1]

    def stamp_later(self, memory_ids: list[str], at: datetime) -> None:
        """Stamp packed memories on a single background writer, so the answer does not wait
        for the write (and the WAL checkpoints it sometimes triggers). Stamps handed out
        within ``STAMP_GATHER_SECONDS`` of each other are written in one transaction, in the
        order they were handed out (the same rows end the same); :meth:`settle` writes at
        once."""
        with self._stamp_lock:
            self._pending.append((memory_ids, at))
            if self._waiting is not None:
                return  # the write that is waiting takes these too
            if self._stamper is None:
                self._stamper = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="memoryd-stamp"
                )
            waiting = self._waiting = threading.Event()
            self._last_stamp = self._stamper.submit(self._write_pending, waiting)

    def _write_pending(self, waiting: threading.Event) -> None:
        # Why wait: every write empties the page cache of every reader of the store, and a
        # write beside the next recall competes with it for the cores; a burst of recalls
        # (a busy client, several clients) writes its stamps once.
        waiting.wait(STAMP_GATHER_SECONDS)
        with self._stamp_lock:
            batches, self._pending = self._pending, []
            if self._waiting is waiting:
                self._waiting = None
        if batches:
            self._write_stamps(batches)

    def _write_stamps(self, batches: list[tuple[list[str], datetime]]) -> None:
        # Runs on the one stamp thread, so the notice is never shared between threads.
        try:
            with self.store.transaction():
                for memory_ids, at in batches:
                    self.store.memories.stamp_retrieved(memory_ids, at)
        except StoreFullError as error:  # a lost stamp is a statistic, not data
            self._stamps_notice.failed(error)
            return
        self._stamps_notice.succeeded()


def _within(memory: Memory, window: TimeWindow | None) -> bool:
    if window is None:
        return True
    instant = memory.occurred_at or memory.created_at
    return window.contains(instant)
