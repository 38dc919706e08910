"""Replacing a model or the clock on a running service: ``use_gateway``, ``use_embedder`` and
``use_clock`` reach every part that writes, reads or queues with it, and the service's own
attributes cannot be assigned around them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.errors import EmbeddingUnavailableError, ExtractionOffError
from memoryd.providers.llm import Gateway, Provider, Route
from memoryd.service import MemoryService

from .recall_support import BrokenEmbedder

T = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)
EXPORT = b'[{"id": "c1", "mapping": {}}]'


def extract_route() -> Route:
    # Never called: queueing a job only asks whether the route is configured.
    return Route("extract", Provider.OPENAI, "fake-model", base_url="http://127.0.0.1:9/v1",
                 api_key="test-key", timeout=1.0, max_retries=0)  # fmt: skip


def test_a_new_gateway_reaches_the_queue_and_the_chat_importer(service: MemoryService) -> None:
    assert not service.observe_turn("I moved to Porto last week").queued
    with pytest.raises(ExtractionOffError):
        service.import_chat_bytes(EXPORT, format="chatgpt")

    gateway = Gateway({"extract": extract_route()})
    service.use_gateway(gateway)

    assert service.gateway is gateway
    assert service.observe_turn("I moved to Porto last week").queued
    assert service.import_chat_bytes(EXPORT, format="chatgpt").to_json()["dry_run"] is False
    assert service.admin.failing_endpoints() == []


def test_a_new_embedder_reaches_writes_forget_and_recall(service: MemoryService) -> None:
    kept = service.remember("Ana plays the cello").memory
    assert kept is not None
    broken = BrokenEmbedder()
    service.use_embedder(broken)

    assert service.embedder is broken
    with pytest.raises(EmbeddingUnavailableError):
        service.remember("Bruno plays the viola")
    with pytest.raises(EmbeddingUnavailableError):
        service.edit(kept.id, "Ana plays the double bass")
    with pytest.raises(EmbeddingUnavailableError):
        service.forget(query="cello", dry_run=True)
    assert service.recall("Who plays the cello?").legs["vector"].startswith("failed")


def test_a_new_clock_dates_writes_and_consolidation(service: MemoryService) -> None:
    service.use_clock(lambda: T)

    written = service.remember("The owner's passport expires in 2034").memory
    assert written is not None and written.created_at == T
    service.consolidate()
    assert service.last_consolidation() == T


@pytest.mark.parametrize("name", ["gateway", "embedder", "store", "tokenizer", "zone"])
def test_the_services_models_are_replaced_only_through_use(
    service: MemoryService, name: str
) -> None:
    with pytest.raises(AttributeError):
        setattr(service, name, object())
