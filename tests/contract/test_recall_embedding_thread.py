"""Recall embeds the message on another thread while the text, entity and time legs read the
store, and reports the legs as it did when it embedded first: vector, text, entity, time."""

from __future__ import annotations

import threading

from memoryd.memory.model import Kind
from memoryd.providers.embedder import Embedder, Matrix
from memoryd.service import MemoryService

from .recall_support import NOW, BrokenEmbedder, days_ago, remember


class ThreadNoting:
    """The store's embedder, noting the thread of every call."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        self.threads: list[int] = []

    def embed(self, texts: list[str]) -> Matrix:
        self.threads.append(threading.get_ident())
        return self.inner.embed(texts)


def _store(service: MemoryService) -> None:
    remember(service, "Ana loves cooking mushroom risotto", entities=["Ana"])
    remember(service, "Bruno plays the cello", entities=["Bruno"])
    remember(service, "Dinner with Ana at the harbour", kind=Kind.EVENT, occurred_at=days_ago(3))


def test_the_message_is_embedded_off_the_recalls_thread_with_the_same_answer(
    service: MemoryService,
) -> None:
    _store(service)
    message = "What did Ana cook this week?"
    before = service.recall(message, now=NOW)
    noting = ThreadNoting(service.embedder)
    service.use_embedder(noting)

    after = service.recall(message, now=NOW)

    assert noting.threads and threading.get_ident() not in noting.threads
    assert after.text == before.text
    assert list(after.legs) == ["vector", "text", "entity", "time", "episode"][: len(after.legs)]
    assert [(d.memory_id, d.reason) for d in after.dropped] == [
        (d.memory_id, d.reason) for d in before.dropped
    ]


def test_with_the_embedder_down_the_legs_are_reported_in_their_usual_order(
    service: MemoryService,
) -> None:
    _store(service)
    service.use_embedder(BrokenEmbedder())

    result = service.recall("What did Ana cook this week?", now=NOW)

    assert list(result.legs)[:4] == ["vector", "text", "entity", "time"]
    assert result.legs["vector"] == "failed: the embedding model is not reachable"
    assert result.legs["text"] == "ok"
