"""What the memory service's parts share: the store, the models, the policies and the clock.

The facade (:class:`memoryd.service.MemoryService`) owns one :class:`Collaborators` and hands
it to each part, so replacing the gateway or the embedder on the service reaches every part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Generic, TypeVar, cast, overload

from memoryd.clock import Clock
from memoryd.errors import (
    InvalidInputError,
    InvalidOperationError,
    MemoryNotFoundError,
    StoreMismatchError,
)
from memoryd.ids import IdGenerator
from memoryd.jobs.model import RetryPolicy
from memoryd.memory.ledger import Ledger
from memoryd.memory.model import Memory, Status
from memoryd.memory.promotion_policy import PromotionPolicy
from memoryd.memory.proposal_policy import MAX_CONTENT_CHARS
from memoryd.providers.embedder import Embedder
from memoryd.providers.llm import Gateway
from memoryd.providers.tokenizer import TokenCodec
from memoryd.recall.policy import RecallPolicy
from memoryd.storage.protocols import EmbeddingSignature, Store
from memoryd.words import has_lone_surrogate, strip_controls

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

T = TypeVar("T")


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
    vectors came from another embedder. Either way the store then refuses vector work from
    this process if a re-embed switches it to another model while the process runs."""
    found = store.embedding_signature()
    if found is None:
        signature = EmbeddingSignature(embedder.model, embedder.dimension)
        store.initialize_embeddings(signature)
        store.expect_signature(signature)
        return
    if found.model == embedder.model:
        # An endpoint's embedder takes the recorded dimension instead of asking for it.
        expect = getattr(embedder, "expect", None)
        if callable(expect):
            expect(found.dimension)
        if embedder.dimension == found.dimension:
            store.expect_signature(found)
            return
    raise StoreMismatchError(
        f"this store holds {found.dimension}-dimension vectors from {found.model!r}, but "
        f"memoryd is configured with {embedder.model!r}; use the embedder the store was "
        "built with (MEMORYD_EMBED_MODEL, or [embed] in memoryd.toml), or move the store's "
        f"vectors to {embedder.model!r} with `memoryd reembed`"
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
    """``text`` stripped of surrounding space and of control characters, bidi overrides and
    NUL (never stored: they could hide the text from the owner in a terminal), or a clear error
    when it is empty, too long or not valid Unicode."""
    if has_lone_surrogate(text):
        raise InvalidInputError(f"{what} holds invalid Unicode (a lone surrogate)")
    cleaned = strip_controls(text).strip()
    if not cleaned:
        raise InvalidInputError(f"{what} is empty; give the text to remember")
    if len(cleaned) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"{what} is {len(cleaned)} characters; a memory holds at most {MAX_CONTENT_CHARS} "
            "(put long material in the knowledge base)"
        )
    return cleaned


class Shared(Generic[T]):
    """An attribute of the service that lives in its :class:`Collaborators`, so every part
    sees a replacement (``service.gateway = ...``). Read-only unless ``settable``."""

    def __init__(self, doc: str, *, settable: bool = True, field: str | None = None) -> None:
        self.__doc__ = doc
        self.settable = settable
        self.field = field or ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = self.field or name

    @overload
    def __get__(self, instance: None, owner: type) -> Shared[T]: ...
    @overload
    def __get__(self, instance: CollaboratorAccess, owner: type) -> T: ...
    def __get__(self, instance: CollaboratorAccess | None, owner: type) -> Shared[T] | T:
        if instance is None:
            return self
        return cast(T, getattr(instance.parts, self.field))

    def __set__(self, instance: CollaboratorAccess, value: T) -> None:
        if not self.settable:
            raise AttributeError(f"{self.field} cannot be replaced on a running service")
        setattr(instance.parts, self.field, value)


class CollaboratorAccess:
    """The service's collaborators as attributes (``service.gateway = ...`` reaches every
    part that shares them)."""

    parts: Collaborators

    store: Shared[Store] = Shared("The storage backend.", settable=False)
    embedder: Shared[Embedder] = Shared("The embedding model.")
    gateway: Shared[Gateway] = Shared("The LLM routes (extract, merge, reflect, caption).")
    policy: Shared[PromotionPolicy] = Shared("The promotion policy.")
    recall_policy: Shared[RecallPolicy] = Shared("The recall policy.")
    retry_policy: Shared[RetryPolicy] = Shared("When failed extraction jobs are tried again.")
    tokenizer: Shared[TokenCodec] = Shared("The tokenizer recall packs with.", settable=False)
    zone: Shared[tzinfo] = Shared("The owner's time zone.", settable=False)
    _clock: Shared[Clock] = Shared("The service's clock (tests replace it).", field="clock")
