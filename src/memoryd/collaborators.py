"""What the memory service's parts share: the store, the models, the policies and the clock.

The facade (:class:`memoryd.service.MemoryService`) owns one :class:`Collaborators` and hands
it to each part, so replacing the gateway or the embedder on the service reaches every part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from .clock import Clock
from .embedding import Embedder, Vector
from .errors import (
    InvalidInputError,
    InvalidOperationError,
    MemoryNotFoundError,
    StoreMismatchError,
)
from .ids import IdGenerator
from .jobs import RetryPolicy
from .ledger import Ledger
from .llm import Gateway
from .model import Memory, Status
from .promotion import PromotionPolicy
from .proposals import MAX_CONTENT_CHARS
from .recall import RecallPolicy
from .storage.protocols import EmbeddingSignature, Store
from .textutil import has_lone_surrogate
from .tokens import TokenCodec


@dataclass
class Collaborators:
    """The service's store, models, policies and clock (mutable: tests swap a gateway)."""

    store: Store
    embedder: Embedder
    gateway: Gateway
    policy: PromotionPolicy
    recall_policy: RecallPolicy
    retry_policy: RetryPolicy
    tokenizer: TokenCodec
    clock: Clock
    zone: tzinfo
    ids: IdGenerator
    ledger: Ledger

    def now(self, at: datetime | None) -> datetime:
        """``at`` when given, else the clock's time."""
        return at or self.clock()

    def embed(self, texts: list[str]) -> list[Vector]:
        """Vectors for ``texts`` (none asked, none computed)."""
        if not texts:
            return []
        return list(self.embedder.embed(texts))

    def require(self, memory_id: str) -> Memory:
        """One memory, or MemoryNotFoundError."""
        memory = self.store.memories.get(memory_id.strip())
        if memory is None:
            raise MemoryNotFoundError(f"no memory with id {memory_id!r}")
        return memory

    def slot_holder(self, memory: Memory) -> Memory | None:
        """The active memory holding ``memory``'s fact slot, other than ``memory`` itself."""
        if memory.slot is None:
            return None
        for holder in self.store.memories.in_slot(memory.slot, Status.ACTIVE):
            if holder.id != memory.id:
                return holder
        return None


def check_embedding_signature(store: Store, embedder: Embedder) -> None:
    """Record the embedder's model and dimension in a new store; refuse a store whose
    vectors came from another embedder."""
    wanted = EmbeddingSignature(embedder.model, embedder.dimension)
    found = store.embedding_signature()
    if found is None:
        store.initialize_embeddings(wanted)
    elif found != wanted:
        raise StoreMismatchError(
            f"this store holds {found.dimension}-dimension vectors from {found.model!r}, but "
            f"memoryd is configured with {wanted.model!r} ({wanted.dimension} dimensions); "
            "use the embedder the store was built with"
        )


def require_status(memory: Memory, allowed: Sequence[Status], action: str) -> None:
    """Refuse ``action`` on a memory whose status it does not apply to."""
    if memory.status not in allowed:
        names = " or ".join(s.value for s in allowed)
        raise InvalidOperationError(
            f"cannot {action} memory {memory.id}: it is {memory.status.value}; "
            f"{action} applies to {names} memories only"
        )


def clean_text(text: str, what: str) -> str:
    """``text`` stripped, or a clear error when it is empty, too long or not valid Unicode."""
    if has_lone_surrogate(text):
        raise InvalidInputError(f"{what} holds invalid Unicode (a lone surrogate)")
    cleaned = text.strip()
    if not cleaned:
        raise InvalidInputError(f"{what} is empty; give the text to remember")
    if len(cleaned) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"{what} is {len(cleaned)} characters; a memory holds at most {MAX_CONTENT_CHARS} "
            "(put long material in the knowledge base)"
        )
    return cleaned


class CollaboratorAccess:
    """The service's collaborators as attributes (``service.gateway = ...`` reaches every
    part that shares them)."""

    parts: Collaborators

    @property
    def store(self) -> Store:
        """The storage backend."""
        return self.parts.store

    @property
    def embedder(self) -> Embedder:
        """The embedding model."""
        return self.parts.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self.parts.embedder = embedder

    @property
    def gateway(self) -> Gateway:
        """The LLM routes (extract, merge, reflect, caption)."""
        return self.parts.gateway

    @gateway.setter
    def gateway(self, gateway: Gateway) -> None:
        self.parts.gateway = gateway

    @property
    def policy(self) -> PromotionPolicy:
        """The promotion policy."""
        return self.parts.policy

    @policy.setter
    def policy(self, policy: PromotionPolicy) -> None:
        self.parts.policy = policy

    @property
    def recall_policy(self) -> RecallPolicy:
        """The recall policy."""
        return self.parts.recall_policy

    @recall_policy.setter
    def recall_policy(self, policy: RecallPolicy) -> None:
        self.parts.recall_policy = policy

    @property
    def retry_policy(self) -> RetryPolicy:
        """When failed extraction jobs are tried again."""
        return self.parts.retry_policy

    @retry_policy.setter
    def retry_policy(self, policy: RetryPolicy) -> None:
        self.parts.retry_policy = policy

    @property
    def tokenizer(self) -> TokenCodec:
        """The tokenizer recall packs its budget with."""
        return self.parts.tokenizer

    @property
    def zone(self) -> tzinfo:
        """The owner's time zone."""
        return self.parts.zone

    @property
    def _clock(self) -> Clock:
        return self.parts.clock

    @_clock.setter
    def _clock(self, clock: Clock) -> None:
        self.parts.clock = clock
