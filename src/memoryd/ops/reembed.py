"""Moving a store to another embedding model while it keeps serving.

A second vector set is filled for the target model beside the live one, in batches that are
each their own transaction: a crash, a SIGKILL or Ctrl-C loses at most the batch in flight, and
a rerun resumes where the set stops (the target is recorded in the store). Writes made
meanwhile keep using the live model; each pass over the rows picks up what appeared since the
last one. The switch happens in one transaction under the store's write lock, and only when no
row is missing a vector in the new set: until then every reader and writer uses the old model.
One re-embed runs at a time (a store lease).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memoryd.errors import MemorydError
from memoryd.jobs.lease import StoreLease
from memoryd.providers.embedder import Embedder, EmbeddingPace, EmbeddingRate
from memoryd.providers.tokenizer import TokenCounter
from memoryd.storage.protocols import (
    VECTOR_SOURCES,
    EmbeddingSignature,
    PendingText,
    Store,
    VectorSource,
)

# Rows embedded and committed together: a crash loses at most this many vectors' work.
BATCH_ROWS = 128
# Passes over the rows before giving up on a store whose writes outpace the re-embed.
MAX_PASSES = 20
REEMBED_LOCK = "reembed"
# Renewed after every batch; a re-embed that died on another machine frees the store after it.
REEMBED_LEASE_SECONDS = 300


class ReembedError(MemorydError):
    """The re-embed cannot start, or stopped; the store still uses its old model."""


@dataclass(frozen=True)
class ReembedPlan:
    """What a re-embed would send: the texts without a vector for the target yet."""

    source: EmbeddingSignature
    target_model: str
    memories: int
    chunks: int
    tokens: int
    calls: int
    already: int

    @property
    def texts(self) -> int:
        """Memories and chunks to embed."""
        return self.memories + self.chunks

    def to_json(self) -> dict[str, Any]:
        """The plan as plain JSON values."""
        return {
            "source_model": self.source.model,
            "source_dimension": self.source.dimension,
            "target_model": self.target_model,
            "memories": self.memories,
            "chunks": self.chunks,
            "texts": self.texts,
            "tokens": self.tokens,
            "calls": self.calls,
            "already_embedded": self.already,
        }


@dataclass(frozen=True)
class ReembedProgress(EmbeddingPace):
    """Where the new set stands after a committed batch (with the run's rate and time left)."""

    done: int
    total: int
    embedded: int
    seconds: float


@dataclass(frozen=True)
class ReembedResult(EmbeddingRate):
    """A finished re-embed: the store now records ``target``."""

    source: EmbeddingSignature
    target: EmbeddingSignature
    embedded: int
    resumed: int
    dropped: int
    passes: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The result as plain JSON values."""
        return {
            "source_model": self.source.model,
            "source_dimension": self.source.dimension,
            "model": self.target.model,
            "dimension": self.target.dimension,
            "embedded": self.embedded,
            "resumed": self.resumed,
            "dropped": self.dropped,
            "passes": self.passes,
            "seconds": round(self.seconds, 3),
            "texts_per_second": round(self.rate, 1),
        }


ProgressListener = Callable[[ReembedProgress], None]


def recorded_signature(store: Store) -> EmbeddingSignature:
    """The store's model, or a clear error for a store not initialised yet."""
    source = store.embedding_signature()
    if source is None:
        raise ReembedError("this store has no vectors yet (run `memoryd init`); nothing to move")
    return source


def plan_reembed(
    store: Store, target_model: str, counter: TokenCounter, *, batch_size: int
) -> ReembedPlan:
    """Count the texts and tokens a re-embed to ``target_model`` would send (a resumed one
    sends only what is missing), reading the store only."""
    source = recorded_signature(store)
    under_way = store.next_vectors.target()
    resuming = under_way is not None and under_way.model == target_model
    already = sum(done for done, _ in store.next_vectors.counts().values()) if resuming else 0
    counts: dict[str, int] = {}
    tokens = 0
    for kind in VECTOR_SOURCES:
        counts[kind] = 0
        for batch in _batches(store, kind, every=not resuming):
            counts[kind] += len(batch)
            tokens += sum(counter.count(pending.text) for pending in batch)
    texts = counts["memories"] + counts["chunks"]
    return ReembedPlan(
        source=source,
        target_model=target_model,
        memories=counts["memories"],
        chunks=counts["chunks"],
        tokens=tokens,
        calls=-(-texts // max(batch_size, 1)),
        already=already,
    )


def reembed(
    store: Store,
    embedder: Embedder,
    *,
    batch_rows: int = BATCH_ROWS,
    progress: ProgressListener | None = None,
    lease: StoreLease | None = None,
) -> ReembedResult:
    """Give every memory and chunk a vector from ``embedder``, then switch the store to it.
    Raises :class:`ReembedError` (keeping the vectors made so far) when the embedder fails."""
    source = recorded_signature(store)
    lease = lease or StoreLease(store, REEMBED_LOCK, REEMBED_LEASE_SECONDS)
    if not lease.take():
        raise ReembedError(
            f"another `memoryd reembed` is running on this store ({lease.holder_now()}); "
            "wait for it to finish"
        )
    try:
        return _Fill(store, embedder, source, batch_rows, progress, lease).run()
    finally:
        lease.release()


class _Fill:
    """One run of a re-embed under its lease."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        source: EmbeddingSignature,
        batch_rows: int,
        progress: ProgressListener | None,
        lease: StoreLease,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.source = source
        self.batch_rows = max(1, batch_rows)
        self.progress = progress
        self.lease = lease
        self.embedded = 0
        self.started = time.monotonic()
        # Where the set stood when the current pass began, and vectors saved since.
        self.done = 0
        self.total = 0

    def run(self) -> ReembedResult:
        target = self._target()
        with self.store.transaction():
            dropped = self.store.next_vectors.begin(target)
        resumed = self._count()
        passes = 0
        while True:
            passes += 1
            for kind in VECTOR_SOURCES:
                for batch in _batches(self.store, kind, every=False, size=self.batch_rows):
                    self._fill(kind, batch, target)
            with self.store.transaction():
                missing = self.store.next_vectors.switch()
            if not missing:
                break
            if passes >= MAX_PASSES:
                raise ReembedError(
                    f"{missing} rows still lack a {target.model!r} vector after {passes} passes "
                    "(writes keep arriving faster than they are embedded); run `memoryd "
                    "reembed` again when the store is quieter: the vectors made are kept"
                )
            self._count()
        return ReembedResult(
            source=self.source,
            target=target,
            embedded=self.embedded,
            resumed=resumed,
            dropped=dropped,
            passes=passes,
            seconds=time.monotonic() - self.started,
        )

    def _target(self) -> EmbeddingSignature:
        try:
            target = EmbeddingSignature(self.embedder.model, self.embedder.dimension)
        except MemorydError as error:
            raise ReembedError(f"cannot reach the target embedder: {error}") from None
        if target == self.source:
            raise ReembedError(
                f"the store is already embedded with {target.model!r} ({target.dimension} "
                "dimensions); nothing to do"
            )
        return target

    def _fill(
        self, kind: VectorSource, batch: list[PendingText], target: EmbeddingSignature
    ) -> None:
        try:
            vectors = list(self.embedder.embed([pending.text for pending in batch]))
        except MemorydError as error:
            raise ReembedError(self._stopped(f"the target embedder failed: {error}")) from None
        sizes = {len(vector) for vector in vectors}
        if len(vectors) != len(batch) or sizes != {target.dimension}:
            raise ReembedError(
                self._stopped(
                    f"the target embedder answered {len(vectors)} vectors of "
                    f"{'/'.join(map(str, sorted(sizes))) or 'no'} dimensions for {len(batch)} "
                    f"texts; expected {target.dimension} dimensions"
                )
            )
        with self.store.transaction():
            saved = self.store.next_vectors.save(kind, batch, vectors)
        self.embedded += len(batch)
        self.done += saved
        if self.done > self.total:  # rows written since the pass began: count them in
            self._count()
        holder = self.lease.renewed()
        if holder is not None:
            raise ReembedError(self._stopped(f"another re-embed took its lease ({holder})"))
        if self.progress is not None:
            seconds = time.monotonic() - self.started
            self.progress(ReembedProgress(self.done, self.total, self.embedded, seconds))

    def _stopped(self, why: str) -> str:
        return (
            f"re-embedding stopped: {why}. {self._count()} of {self.total} new vectors are "
            f"kept and the store still uses {self.source.model!r}; run `memoryd reembed` "
            "again to resume"
        )

    def _count(self) -> int:
        """Read where the set stands (done, total) and return the vectors done."""
        counts = self.store.next_vectors.counts().values()
        self.done = sum(done for done, _ in counts)
        self.total = sum(total for _, total in counts)
        return self.done


def _batches(
    store: Store, kind: VectorSource, *, every: bool, size: int = BATCH_ROWS
) -> Iterator[list[PendingText]]:
    """The rows of ``kind`` without a vector in the new set (``every``: all rows), in key
    order, ``size`` at a time."""
    after = 0
    while True:
        batch = store.next_vectors.missing(kind, after, size, every=every)
        if not batch:
            return
        yield batch
        after = batch[-1].key
