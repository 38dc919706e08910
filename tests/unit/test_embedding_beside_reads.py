"""The message's embedding runs on a worker thread while recall's text, entity and time legs read
the store: the legs find the same, in the same order, as when the message is embedded first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

import memoryd.recall.legs
import memoryd.recall.text_legs
from memoryd.errors import EmbeddingUnavailableError
from memoryd.memory.entity_policy import EntityMatcher
from memoryd.memory.model import Kind
from memoryd.providers.embedder import LOCAL_DIMENSION, LOCAL_MODEL_ID, Embedder, Matrix
from memoryd.recall.legs import Evidence, QueryEmbedder, run_legs
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import read_message
from memoryd.service import MemoryService

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MESSAGES = (
    "Who did I meet in Lisbon in November?",
    "Does Ana still cook mushroom risotto?",
    "What did I do last week?",
    "anything about the cello",
)


def _fill(service: MemoryService) -> None:
    for day, content in enumerate(
        (
            "Met Ana in Lisbon for coffee",
            "Ana cooks mushroom risotto on Sundays",
            "Bruno plays the cello in Lisbon",
            "Went hiking in Sintra with Bruno",
            "Had dinner with Ana at a ramen bar in Lisbon",
        ),
        start=2,
    ):
        at = datetime(2026, 11, day * 4, 18, tzinfo=UTC)
        result = service.remember(content, kind=Kind.EVENT, occurred_at=at, now=at)
        assert result.memory is not None


def _evidence(service: MemoryService, embedder: Embedder, message: str) -> Evidence:
    store = service.store

    def matcher() -> EntityMatcher:
        return EntityMatcher.build(store.entities.aliases())

    query = read_message(store, matcher, message, NOW, UTC, RecallPolicy())
    return run_legs(store, embedder, query)


def _same(one: Evidence, other: Evidence) -> None:
    assert list(one.legs.items()) == list(other.legs.items())
    assert list(one.rankings.items()) == list(other.rankings.items())
    assert list(one.candidates) == list(other.candidates)
    for memory_id, candidate in one.candidates.items():
        assert candidate == other.candidates[memory_id]
    assert one.facts == other.facts


def test_the_legs_find_the_same_with_the_embedding_beside_them(
    service: MemoryService, embedder: Embedder
) -> None:
    _fill(service)
    beside = QueryEmbedder(lambda: embedder)
    for message in MESSAGES:
        first = _evidence(service, embedder, message)  # a plain embedder: embedded first
        _same(first, _evidence(service, beside, message))
        _same(first, _evidence(service, beside, message))  # the kept vector


class _Down:
    model = LOCAL_MODEL_ID
    dimension = LOCAL_DIMENSION

    def embed(self, texts: list[str]) -> Matrix:
        raise EmbeddingUnavailableError("the embedding model is not reachable")


def test_a_failed_embedding_is_reported_as_when_it_ran_first(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(service)

    def text_down(*args: object) -> None:
        raise RuntimeError("the full-text index is gone")

    beside = QueryEmbedder(lambda: _Down())
    for broken_text in (False, True):
        if broken_text:
            monkeypatch.setattr(memoryd.recall.legs, "searched_text", text_down)
        first = _evidence(service, _Down(), MESSAGES[0])
        found = _evidence(service, beside, MESSAGES[0])
        _same(first, found)
        assert found.legs["vector"].startswith("failed: the embedding model")
        assert list(found.legs)[:2] == ["vector", "text"]


class _Waiting:
    """Embeds only after the text leg has begun (or gives up after a few seconds)."""

    def __init__(self, inner: Embedder, text_began: threading.Event) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        self.text_began = text_began
        self.waited: list[bool] = []
        self.threads: list[str] = []

    def embed(self, texts: list[str]) -> Matrix:
        self.threads.append(threading.current_thread().name)
        self.waited.append(self.text_began.wait(timeout=5))
        return self.inner.embed(texts)


def test_the_message_is_embedded_while_the_text_leg_reads(
    service: MemoryService, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(service)
    text_began = threading.Event()
    text_leg: Callable[..., object] = memoryd.recall.text_legs.searched_text

    def watched(*args: object) -> object:
        text_began.set()
        return text_leg(*args)

    monkeypatch.setattr(memoryd.recall.legs, "searched_text", watched)
    waiting = _Waiting(embedder, text_began)
    service.use_embedder(waiting)

    result = service.recall("Who did I meet in Lisbon?", now=NOW)

    # Embedded first, the embedder would have waited for the text leg in vain.
    assert waiting.waited == [True]
    assert waiting.threads[0] != threading.current_thread().name
    assert result.legs["vector"] == "ok" and "Met Ana in Lisbon for coffee" in result.text
