"""A store as a release before canonical fact slots left it, and what re-slotting it must
give: shared by the contract suite (re-slot at open, old exports) and the upgrade tests (the
migrations on a populated store)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from memoryd.ids import IdGenerator
from memoryd.memory.ledger import Ledger
from memoryd.memory.model import Actor, Kind, Memory, Source, Status
from memoryd.memory.slot_policy import slot_key
from memoryd.service import MemoryService

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def legacy_slot(subject: str, predicate: str) -> str:
    """How slots were keyed before canonical forms."""
    key = " ".join(subject.casefold().split()) + "\x1f" + " ".join(predicate.casefold().split())
    return "slot_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def as_legacy(service: MemoryService) -> dict[str, Memory]:
    """Write what an old release kept: "lives_in: Lisbon" and, a day later, "lives in: Porto",
    both active in their own (old) slots; "favourite colour: green" alone."""
    store = service.store
    rows = {}
    written = [
        ("The owner", "lives_in", "Lisbon"),
        ("owner", "lives in", "Porto"),
        ("Owner", "favourite colour", "green"),
    ]
    for number, (subject, predicate, value) in enumerate(written):
        content = f"The owner {predicate} {value}"
        rows[value] = Memory(
            id=f"01LEGACY{number:018d}",
            kind=Kind.FACT,
            status=Status.ACTIVE,
            content=content,
            source=Source.OWNER,
            created_at=T0 + timedelta(days=number),
            last_confirmed_at=T0 + timedelta(days=number),
            subject=subject,
            predicate=predicate,
            object=value,
            slot=legacy_slot(subject, predicate),
        )
    ledger = Ledger(store, IdGenerator())
    with store.transaction():
        for memory in rows.values():
            vector = service.embedder.embed([memory.content])[0]
            ledger.supersede([], memory, vector, actor=Actor.OWNER, at=memory.created_at,
                             reason="remembered")  # fmt: skip
            store.memories.set_slot(memory.id, memory.slot, None, None)
        store.set_meta("slot_scheme", "1")
    return rows


def check_reslotted(service: MemoryService, rows: dict[str, Memory]) -> None:
    """Lisbon (older) stays active, Porto waits as its supersede, green is untouched; and
    confirming Porto then replaces Lisbon like any correction."""
    lisbon, porto, green = (service.get(rows[v].id) for v in ("Lisbon", "Porto", "green"))
    lives = slot_key("owner", "lives in")
    assert (lisbon.status, lisbon.slot) == (Status.ACTIVE, lives)
    assert (porto.status, porto.slot) == (Status.PENDING, lives)
    assert (green.status, green.slot) == (Status.ACTIVE, slot_key("owner", "favourite colour"))
    [item] = service.review_queue()
    assert (item.pending.id, item.would_replace) == (porto.id, lisbon)
    entry = service.show(porto.id).audit[-1]
    assert (entry.action, entry.actor, entry.rule) == ("reslot", Actor.SYSTEM, "canonical-slots")
    assert entry.reason.startswith(f"same slot as {lisbon.id} (lives_in: Lisbon) after predicates")
    # Nothing is lost: confirming Porto supersedes Lisbon, as any correction does.
    service.confirm(porto.id, now=T0 + timedelta(days=30))
    active = service.list_memories(status=Status.ACTIVE)
    assert sorted(m.object or "" for m in active) == ["Porto", "green"]
    assert service.get(lisbon.id).superseded_by == porto.id
