"""A text's embedding begun on a worker thread, so the caller reads the store meanwhile: the
model run (onnxruntime, or an endpoint's answer) and SQLite both release the GIL, so on two
cores the two overlap (recall's legs; bench/README.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from memoryd.providers.embedder import Embedder, Matrix, Vector

# Texts embedded at once beside their callers (recalls running at once each take one; more
# wait their turn). The threads start on first use and live as long as the process.
BESIDE_THREADS = 4

T = TypeVar("T")

_workers: ThreadPoolExecutor | None = None
_workers_lock = threading.Lock()


def embedding_begun(embedder: Embedder, text: str) -> Future[Vector]:
    """``text``'s vector, embedded by ``embedder`` on a worker thread; ``result()`` waits for
    it (and raises what the embedder raised)."""
    return _pool().submit(_embedded, embedder, text)


def embeddings_begun(embedder: Embedder, texts: list[str]) -> Future[Matrix]:
    """The vectors of ``texts``, embedded by ``embedder`` in one call on a worker thread."""
    return _pool().submit(embedder.embed, texts)


def work_begun(work: Callable[[], T]) -> Future[T]:
    """``work()`` (an embedding of several parts) on a worker thread."""
    return _pool().submit(work)


def _pool() -> ThreadPoolExecutor:
    global _workers
    with _workers_lock:
        if _workers is None:
            _workers = ThreadPoolExecutor(
                max_workers=BESIDE_THREADS, thread_name_prefix="memoryd-embed"
            )
        return _workers


def _embedded(embedder: Embedder, text: str) -> Vector:
    vector: Vector = embedder.embed([text])[0]
    return vector
