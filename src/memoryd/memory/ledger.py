"""The ledger: the only code that changes a memory's status (SPEC rule 2).

A memory is never edited, only superseded. Every write that retires, activates or replaces a
memory goes through here, so each one follows the same order, inside the caller's transaction:

1. retire: each replaced row is archived and audited (``supersede``), oldest slot holder first
   (the one-active-per-slot index forbids activating the successor before this);
2. insert (or activate) the successor, audited once;
3. link: the first replaced row and the successor point at each other; any others point
   forward only (a row points back at one predecessor).

Nothing else builds an :class:`AuditEntry`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.ids import IdGenerator
from memoryd.memory.model import Actor, AuditEntry, Memory, Status
from memoryd.memory.slot_policy import canonical_subject
from memoryd.storage.protocols import Store

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector


@dataclass(frozen=True)
class Replaced:
    """A row a successor retires, with the reason its audit entry gives."""

    memory: Memory
    reason: str
    rule: str | None = None


class Ledger:
    """Status changes and supersedes over one store, each audited exactly once."""

    def __init__(self, store: Store, ids: IdGenerator) -> None:
        self.store = store
        self.ids = ids

    def successor(self, old: Memory, at: datetime, **changes: Any) -> Memory:
        """A new row that will supersede ``old``: fresh id and history, ``changes`` applied."""
        fresh: dict[str, Any] = {
            "id": self.ids.new_id(at),
            "created_at": at,
            "last_retrieved_at": None,
            "retrieval_hits": 0,
            "supersedes": None,
            "superseded_by": None,
        }
        return replace(old, **{**fresh, **changes})

    def change_status(
        self,
        memory: Memory,
        status: Status,
        *,
        actor: Actor,
        action: str,
        at: datetime,
        reason: str,
        rule: str | None = None,
    ) -> None:
        """Move ``memory`` to ``status`` and audit the change (from its current status). The
        same status is an audited vouch (reinforce, reconfirm) that changes no row."""
        if status is not memory.status:
            self.store.memories.set_status(memory.id, status)
        self._audit(memory.id, at, actor, action, memory.status, status, reason, rule)

    def supersede(
        self,
        olds: Sequence[Replaced],
        new: Memory,
        vector: Vector | None,
        *,
        actor: Actor,
        at: datetime,
        reason: str,
        rule: str | None = None,
    ) -> None:
        """Retire ``olds``, insert ``new`` (audited ``create``) and link the chain. With no
        ``olds`` this is a plain insert."""
        self._retire(olds, actor, at)
        self.store.memories.insert(new, vector)
        self._link(olds, new)
        self._audit(new.id, at, actor, "create", None, new.status, reason, rule)

    def promote(
        self,
        pending: Memory,
        replaced: Replaced | None,
        *,
        actor: Actor,
        action: str,
        at: datetime,
        reason: str,
    ) -> None:
        """A stored pending row becomes active, retiring its slot's holder first."""
        olds = [replaced] if replaced is not None else []
        self._retire(olds, actor, at)
        self.change_status(pending, Status.ACTIVE, actor=actor, action=action, at=at, reason=reason)
        self._link(olds, pending)

    def move_slot(
        self,
        memory: Memory,
        slot: str,
        same_slot_as: str | None,
        *,
        actor: Actor,
        action: str,
        at: datetime,
        reason: str,
        rule: str | None = None,
    ) -> None:
        """Put a fact in another slot (its status unchanged) and audit it. Only the slot key
        moves: the words the fact was written with stay as they are."""
        subject = canonical_subject(memory.subject) if memory.subject else None
        self.store.memories.set_slot(memory.id, slot, same_slot_as, subject)
        self._audit(memory.id, at, actor, action, memory.status, memory.status, reason, rule)

    def restore(
        self, old: Memory, successor: Memory, *, actor: Actor, at: datetime, reason: str
    ) -> None:
        """Undo ``successor``'s supersede of ``old``: the links go, ``old`` is active again
        (its slot must be free by now)."""
        self.store.memories.unlink_supersede(old.id, successor.id)
        self.change_status(old, Status.ACTIVE, actor=actor, action="restore", at=at, reason=reason)

    def purge(self, memory: Memory, *, actor: Actor, at: datetime, reason: str) -> None:
        """Erase a memory's content, keeping a tombstone; a live memory is archived first."""
        live = memory.status in (Status.ACTIVE, Status.PENDING)
        status = Status.ARCHIVED if live else memory.status
        if live:
            self.store.memories.set_status(memory.id, status)
        self.store.memories.purge(memory.id, at)
        self._audit(memory.id, at, actor, "purge", memory.status, status, reason, None)

    def _retire(self, olds: Sequence[Replaced], actor: Actor, at: datetime) -> None:
        for old in olds:
            self.change_status(
                old.memory,
                Status.ARCHIVED,
                actor=actor,
                action="supersede",
                at=at,
                reason=old.reason,
                rule=old.rule,
            )

    def _link(self, olds: Sequence[Replaced], new: Memory) -> None:
        for position, old in enumerate(olds):
            self.store.memories.link_supersede(old.memory.id, new.id, back_link=position == 0)

    def _audit(
        self,
        memory_id: str,
        at: datetime,
        actor: Actor,
        action: str,
        from_status: Status | None,
        to_status: Status,
        reason: str,
        rule: str | None,
    ) -> None:
        self.store.audit.append(
            AuditEntry(memory_id, at, actor, action, from_status, to_status, reason, rule)
        )
