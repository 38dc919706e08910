"""What the recall contract tests share: the clock, writing memories and events, the ids a
recall packed, and an embedder that is down.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memoryd.errors import EmbeddingUnavailableError
from memoryd.memory.model import Kind, Memory
from memoryd.memory.promotion_policy import Outcome
from memoryd.providers.embedder import LOCAL_DIMENSION, LOCAL_MODEL_ID, Matrix
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import Retriever
from memoryd.service import MemoryService, RecallResult

# A Sunday: "last week" is Monday 16 to Sunday 22 November.
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

FOODS = (
    "sushi", "pasta carbonara", "grilled sardines", "ramen", "paella", "tacos al pastor", "pho",
    "dim sum", "lasagna", "falafel", "bacalhau", "croissants", "pastel de nata", "kimchi",
    "pad thai", "risotto", "moussaka", "ceviche", "biryani", "goulash", "pierogi", "churros",
    "gnocchi", "empanadas", "dumplings", "curry", "burritos", "crepes", "tiramisu", "bibimbap",
    "shakshuka", "poke bowls", "feijoada", "hummus", "baklava",
)  # fmt: skip


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def november(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 11, day, hour, 0, tzinfo=UTC)


def remember(service: MemoryService, content: str, **options: Any) -> Memory:
    """Remember as the owner and return the stored memory, which must be new and active."""
    result = service.remember(content, **{"now": NOW, **options})
    assert result.outcome is Outcome.ACTIVATED, (content, result.reason)
    assert result.memory is not None
    return result.memory


def event(service: MemoryService, content: str, occurred_at: datetime) -> Memory:
    """An event the owner told about when it happened."""
    return remember(service, content, kind=Kind.EVENT, occurred_at=occurred_at, now=occurred_at)


def recall_under(service: MemoryService, policy: RecallPolicy, message: str) -> RecallResult:
    """``message`` recalled at NOW from the service's store under another ``policy``
    (unstamped)."""
    retriever = Retriever(
        store=service.store,
        embedder=service.embedder,
        tokenizer=service.tokenizer,
        policy=policy,
        clock=lambda: NOW,
        zone=service.zone,
    )
    try:
        return retriever.recall(message, None, NOW, stamp=False)
    finally:
        retriever.close()


def packed_ids(result: RecallResult) -> list[str]:
    return [m.id for m in result.packed.lessons] + [s.memory.id for s in result.packed.items]


def item_ids(result: RecallResult) -> list[str]:
    return [s.memory.id for s in result.packed.items]


class BrokenEmbedder:
    """The embedding route down: same model id as the store, every call fails."""

    model = LOCAL_MODEL_ID
    dimension = LOCAL_DIMENSION

    def embed(self, texts: list[str]) -> Matrix:
        raise EmbeddingUnavailableError("the embedding model is not reachable")
