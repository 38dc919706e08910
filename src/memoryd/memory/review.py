"""The owner's review: confirm, reject, archive and reconfirm memories; the review and
reconfirmation queues; a memory shown with its supersede chain and audit trail."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memoryd.consolidation.policy import Stage
from memoryd.errors import InvalidOperationError
from memoryd.memory.ledger import Ledger, Replaced
from memoryd.memory.lookups import require_memory, require_status, slot_holder
from memoryd.memory.model import Actor, AuditEntry, Kind, Memory, ShowResult, Status, fact_slot
from memoryd.memory.review_policy import reason_entry
from memoryd.results import ReviewItem, SplitResult

if TYPE_CHECKING:
    from memoryd.clock import Clock
    from memoryd.storage.protocols import Store


class OwnerReview:
    """Owner actions on existing memories, and the views the owner reviews them in."""

    def __init__(self, *, store: Store, clock: Clock, ledger: Ledger) -> None:
        self.store, self.clock, self.ledger = store, clock, ledger

    def confirm(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: a pending memory becomes active, superseding its slot's active fact."""
        at = now or self.clock()
        with self.store.transaction():
            memory = require_memory(self.store, memory_id)
            require_status(memory, (Status.PENDING,), "confirm")
            holder = slot_holder(self.store, memory)
            replaced = (
                Replaced(holder, f"superseded by {memory.id}, confirmed by the owner")
                if holder is not None
                else None
            )
            self.ledger.promote(
                memory,
                replaced,
                actor=Actor.OWNER,
                action="confirm",
                at=at,
                reason="confirmed by the owner",
            )
            return require_memory(self.store, memory_id)

    def reject(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: reject a pending or active memory; near-copies stay out from now on."""
        return self._change_status(
            memory_id, (Status.PENDING, Status.ACTIVE), Status.REJECTED, "reject",
            "rejected by the owner", now,
        )  # fmt: skip

    def archive(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: retire a memory without rejecting what it says."""
        return self._change_status(
            memory_id, (Status.PENDING, Status.ACTIVE, Status.REJECTED), Status.ARCHIVED,
            "archive", "archived by the owner", now,
        )  # fmt: skip

    def _change_status(
        self,
        memory_id: str,
        allowed: Sequence[Status],
        status: Status,
        action: str,
        reason: str,
        now: datetime | None,
    ) -> Memory:
        at = now or self.clock()
        with self.store.transaction():
            memory = require_memory(self.store, memory_id)
            require_status(memory, allowed, action)
            self.ledger.change_status(
                memory, status, actor=Actor.OWNER, action=action, at=at, reason=reason
            )
            return require_memory(self.store, memory_id)

    def split(self, memory_id: str, *, now: datetime | None = None) -> SplitResult:
        """Owner action: a fact that was treated as the same slot as another predicate
        (``same_slot_as``) gets its own slot back, keeping its status. If it had replaced
        that slot's fact on arrival, that fact is active again and the supersede between
        them is undone; a pending one no longer would replace anything. Later facts with
        its predicate go to its own slot."""
        at = now or self.clock()
        memories = self.store.memories
        ledger = self.ledger
        with self.store.transaction():
            memory = require_memory(self.store, memory_id)
            require_status(memory, (Status.PENDING, Status.ACTIVE), "split")
            joined = memory.same_slot_as
            if joined is None or not memory.subject or not memory.predicate:
                raise InvalidOperationError(
                    f"memory {memory.id} is already in its own slot (nothing to split): only a "
                    "fact treated as the same slot as another predicate can be split"
                )
            own = fact_slot(memory.subject, memory.predicate)
            holders = [m for m in memories.in_slot(own, Status.ACTIVE) if m.id != memory.id]
            if memory.status is Status.ACTIVE and holders:
                raise InvalidOperationError(
                    f"cannot split memory {memory.id}: its own slot ({memory.subject} · "
                    f"{memory.predicate}) is held by active memory {holders[0].id}; archive "
                    "one of the two first"
                )
            replaced = self._wrongly_replaced(memory)
            ledger.move_slot(
                memory,
                own,
                None,
                actor=Actor.OWNER,
                action="split",
                at=at,
                reason=(
                    f"split by the owner: {memory.predicate!r} has its own slot again, no "
                    f"longer the same slot as {joined!r}"
                ),
            )
            if replaced is not None:
                ledger.restore(
                    replaced,
                    memory,
                    actor=Actor.OWNER,
                    at=at,
                    reason=(
                        f"restored: {memory.id} replaced it only because {memory.predicate!r} "
                        f"was treated as the same slot as {joined!r}, and the owner split them"
                    ),
                )
            restored = require_memory(self.store, replaced.id) if replaced is not None else None
            return SplitResult(require_memory(self.store, memory.id), joined, restored)

    def _wrongly_replaced(self, memory: Memory) -> Memory | None:
        """The fact an active, vocabulary-placed ``memory`` replaced when it arrived in the
        slot, if it can take the slot back: archived by that supersede, not purged, and the
        slot has no other active fact since."""
        if memory.status is not Status.ACTIVE or memory.supersedes is None:
            return None
        old = self.store.memories.get(memory.supersedes)
        if (
            old is None
            or old.status is not Status.ARCHIVED
            or old.superseded_by != memory.id
            or old.purged_at is not None
            or old.slot is None
            or old.slot != memory.slot
        ):
            return None
        others = self.store.memories.in_slot(old.slot, Status.ACTIVE)
        if any(m.id != memory.id for m in others):
            return None
        return old

    def reconfirm(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: an active memory is still true; ``last_confirmed_at`` moves to now."""
        at = now or self.clock()
        with self.store.transaction():
            memory = require_memory(self.store, memory_id)
            require_status(memory, (Status.ACTIVE,), "reconfirm")
            self.store.memories.mark_confirmed(memory.id, at)
            self.ledger.change_status(
                memory,
                Status.ACTIVE,
                actor=Actor.OWNER,
                action="reconfirm",
                at=at,
                reason="reconfirmed by the owner",
            )
            return require_memory(self.store, memory_id)

    def reconfirmation_queue(self) -> list[Memory]:
        """Active facts whose confidence consolidation lowered and nobody reconfirmed since."""
        store = self.store
        queue = []
        for memory in store.memories.query(status=Status.ACTIVE, kind=Kind.FACT):
            if memory.supersedes is None:
                continue
            if memory.last_confirmed_at >= memory.created_at:
                continue  # reconfirmed since the decay
            entries = store.audit.for_memories([memory.id])
            if any(e.rule == Stage.DECAY_SEMANTIC.value for e in entries):
                queue.append(memory)
        return queue

    def review_queue(self) -> list[ReviewItem]:
        """Pending memories, oldest first, each with why it waits (``reason``) and the active
        fact it would supersede (``would_replace``)."""
        pending = self.store.memories.query(status=Status.PENDING, newest_first=False)
        return self.review_items(pending)

    def review_items(self, memories: Sequence[Memory]) -> list[ReviewItem]:
        """Each memory with why it waits (the entry :func:`reason_entry` picks: for a pending
        one, the promotion policy's reason) and, for a fact, the active fact of its slot it
        would replace. One read of the audit trail for them all."""
        trails: dict[str, list[AuditEntry]] = {}
        for entry in self.store.audit.for_memories([m.id for m in memories]):
            trails.setdefault(entry.memory_id, []).append(entry)
        items = []
        for memory in memories:
            why = reason_entry(trails.get(memory.id, ()), memory.id)
            items.append(
                ReviewItem(
                    memory,
                    slot_holder(self.store, memory),
                    reason=why.reason if why else None,
                    rule=why.rule if why else None,
                )
            )
        return items

    def show(self, memory_id: str) -> ShowResult:
        """A memory with its supersede chain (oldest first) and the audit trail of the chain."""
        memory = require_memory(self.store, memory_id)
        chain = self._chain(memory)
        audit = self.store.audit.for_memories([m.id for m in chain])
        return ShowResult(memory=memory, chain=tuple(chain), audit=tuple(audit))

    def _chain(self, memory: Memory) -> list[Memory]:
        seen = {memory.id}
        older = self._walk(memory, lambda m: m.supersedes, seen)
        newer = self._walk(memory, lambda m: m.superseded_by, seen)
        return [*reversed(older), memory, *newer]

    def _walk(
        self, start: Memory, step: Callable[[Memory], str | None], seen: set[str]
    ) -> list[Memory]:
        """Follow ``step`` from ``start`` until the chain ends or loops."""
        found: list[Memory] = []
        cursor = start
        while (next_id := step(cursor)) and next_id not in seen:
            following = self.store.memories.get(next_id)
            if following is None:
                break
            found.append(following)
            seen.add(following.id)
            cursor = following
        return found
