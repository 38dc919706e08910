"""What the memory parts share, as plain functions: a memory by id, the active holder of its
fact slot, the vectors of some texts, and the checks on an owner's text and on a status."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memoryd.errors import InvalidInputError, InvalidOperationError, MemoryNotFoundError
from memoryd.memory.model import Memory, Status
from memoryd.memory.proposal_policy import MAX_CONTENT_CHARS
from memoryd.words import has_lone_surrogate, strip_controls

if TYPE_CHECKING:
    from memoryd.providers.embedder import Embedder, Vector
    from memoryd.storage.protocols import Store


def require_memory(store: Store, memory_id: str) -> Memory:
    """One memory, or MemoryNotFoundError."""
    memory = store.memories.get(memory_id.strip())
    if memory is None:
        raise MemoryNotFoundError(f"no memory with id {memory_id!r}")
    return memory


def slot_holder(store: Store, memory: Memory) -> Memory | None:
    """The active memory holding ``memory``'s fact slot, other than ``memory`` itself."""
    if memory.slot is None:
        return None
    for holder in store.memories.in_slot(memory.slot, Status.ACTIVE):
        if holder.id != memory.id:
            return holder
    return None


def embed_texts(embedder: Embedder, texts: list[str]) -> list[Vector]:
    """Vectors for ``texts`` (none asked, none computed)."""
    if not texts:
        return []
    return list(embedder.embed(texts))


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
