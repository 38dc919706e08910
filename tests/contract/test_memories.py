"""The memory contract (SPEC §1-3), through the service object, once per storage backend:
supersede, archive and purge, owner mistakes, kind aliases.
"""

from __future__ import annotations

import pytest

from memoryd.errors import (
    AmbiguousIdError,
    DocumentNotFoundError,
    InvalidOperationError,
    MemoryNotFoundError,
)
from memoryd.memory.model import Kind, Source, Status
from memoryd.memory.promotion_policy import Outcome
from memoryd.service import MemoryService, ReviewItem
from tests.builders import batch, item

from .conftest import Backend
from .memories_support import at, by_id, lives_in

# ------------------------------------------------------------------ supersede


def test_a_new_fact_value_supersedes_the_old_one(service: MemoryService) -> None:
    bali = lives_in(service, "Bali", 0)
    written = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon", now=at(10)
    )
    lisbon = written.memory
    assert lisbon is not None
    assert [(m.id, m.status) for m in written.replaced] == [(bali.id, Status.ARCHIVED)]

    rows = by_id(service)
    assert len(rows) == 2
    assert rows[lisbon.id].status is Status.ACTIVE
    assert rows[lisbon.id].supersedes == bali.id
    assert rows[bali.id].status is Status.ARCHIVED
    assert rows[bali.id].superseded_by == lisbon.id
    assert [m.content for m in service.list_memories(status=Status.ACTIVE)] == [
        "Owner lives in Lisbon"
    ]

    for viewpoint in (bali.id, lisbon.id):
        shown = service.show(viewpoint)
        assert shown.memory.id == viewpoint
        assert [m.id for m in shown.chain] == [bali.id, lisbon.id]
        assert [(a.memory_id, a.from_status, a.to_status, a.at) for a in shown.audit] == [
            (bali.id, None, Status.ACTIVE, at(0)),
            (bali.id, Status.ACTIVE, Status.ARCHIVED, at(10)),
            (lisbon.id, None, Status.ACTIVE, at(10)),
        ]


def test_remembering_the_same_fact_value_reinforces_it(service: MemoryService) -> None:
    first = lives_in(service, "Lisbon", 0)
    again = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="lisbon", now=at(60)
    )

    assert again.outcome is Outcome.REINFORCED
    assert again.memory is not None and again.memory.id == first.id
    assert [m.id for m in service.list_memories()] == [first.id]
    assert service.get(first.id).last_confirmed_at == at(60)
    assert service.get(first.id).created_at == at(0)


def test_confirming_a_pending_fact_supersedes_the_slot_holder(service: MemoryService) -> None:
    bali = lives_in(service, "Bali", 0)
    [proposed] = service.propose(
        batch(
            item(
                "Owner lives in Lisbon",
                kind="fact",
                subject="owner",
                predicate="lives in",
                object="Lisbon",
            )
        ),
        source=Source.TURN,
        now=at(5),
    )
    assert proposed.outcome is Outcome.PENDING
    assert proposed.memory is not None
    [queued] = service.review_queue()
    assert queued.pending.id == proposed.memory.id
    assert queued.would_replace is not None and queued.would_replace.id == bali.id
    assert (queued.rule, queued.reason) == (
        "needs-owner",
        "waits for the owner: a fact never activates alone",
    )
    assert service.review_items([proposed.memory, bali]) == [
        queued,
        ReviewItem(bali, None, "the owner asked to remember this", "owner-remember"),
    ]
    assert service.get(bali.id).status is Status.ACTIVE, "a pending fact must not displace"

    confirmed = service.confirm(proposed.memory.id, now=at(10))

    assert confirmed.status is Status.ACTIVE
    assert confirmed.supersedes == bali.id
    old = service.get(bali.id)
    assert old.status is Status.ARCHIVED
    assert old.superseded_by == confirmed.id
    assert service.review_queue() == []


def test_editing_supersedes_with_a_new_active_row(service: MemoryService) -> None:
    original = lives_in(service, "Lisbon", 0)

    edited = service.edit(original.id, "Owner lives in Porto", object="Porto", now=at(5))

    assert edited.id != original.id
    assert edited.status is Status.ACTIVE
    assert edited.content == "Owner lives in Porto"
    assert edited.supersedes == original.id
    old = service.get(original.id)
    assert old.status is Status.ARCHIVED
    assert old.content == "Owner lives in Lisbon", "the old row is kept, not edited in place"
    assert old.superseded_by == edited.id
    assert [m.id for m in service.show(original.id).chain] == [original.id, edited.id]


def test_editing_a_pending_fact_links_the_fact_it_replaces(service: MemoryService) -> None:
    bali = lives_in(service, "Bali", 0)
    [proposed] = service.propose(
        batch(
            item(
                "Owner lives in Lisbon",
                kind="fact",
                subject="owner",
                predicate="lives in",
                object="Lisbon",
            )
        ),
        source=Source.TURN,
        now=at(5),
    )
    assert proposed.memory is not None

    edited = service.edit(proposed.memory.id, "Owner lives in Porto", object="Porto", now=at(10))

    assert [m.id for m in service.list_memories(status=Status.ACTIVE)] == [edited.id]
    replaced = service.get(bali.id)
    assert replaced.status is Status.ARCHIVED
    # SPEC §2: superseded rows are archived *with superseded_by set*.
    assert replaced.superseded_by == edited.id


def test_archive_retires_a_memory(service: MemoryService) -> None:
    memory = lives_in(service, "Lisbon", 0)

    archived = service.archive(memory.id, now=at(1))

    assert archived.status is Status.ARCHIVED
    assert service.list_memories(status=Status.ACTIVE) == []
    assert service.show(memory.id).audit[-1].to_status is Status.ARCHIVED


def test_purge_erases_the_text_but_keeps_a_tombstone(
    backend: Backend, service: MemoryService
) -> None:
    secret_life = service.remember("Owner is secretly training for the Quetzalcoatl marathon")
    keep = service.remember("Owner drinks green tea in the morning", now=at(1))
    assert secret_life.memory is not None and keep.memory is not None

    purged = service.purge(secret_life.memory.id, now=at(2))

    assert purged.content == ""
    assert purged.status is Status.ARCHIVED
    assert purged.purged_at == at(2)
    assert [m.id for m in service.list_memories()] == [keep.memory.id, purged.id]
    shown = service.show(purged.id)
    assert "Quetzalcoatl" not in repr(shown)
    assert [a.action for a in shown.audit][-1] == "purge"
    service.close()
    persisted = backend.persisted_bytes()
    assert b"green tea" in persisted, "sanity: the dump does hold stored text"
    assert b"Quetzalcoatl" not in persisted
    assert b"quetzalcoatl" not in persisted.lower()


# ---------------------------------------------------------- owner mistakes


def test_owner_actions_refuse_what_does_not_apply(service: MemoryService) -> None:
    active = lives_in(service, "Lisbon", 0)

    with pytest.raises(InvalidOperationError, match="pending"):
        service.confirm(active.id, now=at(1))
    service.archive(active.id, now=at(2))
    with pytest.raises(InvalidOperationError):
        service.edit(active.id, "Owner lives in Porto", now=at(3))
    with pytest.raises(MemoryNotFoundError, match="01NOSUCHMEMORY"):
        service.reject("01NOSUCHMEMORY", now=at(4))

    [row] = service.list_memories()
    assert (row.id, row.status, row.content) == (active.id, Status.ARCHIVED, active.content)


def test_kinds_accept_their_aliases(service: MemoryService) -> None:
    [result] = service.propose(
        batch(item("Owner repainted the kitchen yellow", kind="episodic")),
        source=Source.TURN,
        now=at(0),
    )

    assert result.memory is not None and result.memory.kind is Kind.EVENT


# ------------------------------------------------------------ shortened ids


def test_a_unique_start_of_an_id_names_one_memory_or_document(service: MemoryService) -> None:
    # Made in the same millisecond, their ids share the time part and differ after it.
    figs = service.remember("Owner likes figs", now=at(0)).memory
    dates = service.remember("Owner likes dates", now=at(0)).memory
    later = service.remember("Owner likes plums", now=at(60 * 24 * 400)).memory
    assert figs is not None and dates is not None and later is not None
    shared = shared_start(figs.id, dates.id)
    docs = [
        service.kb.ingest_bytes(f"# {name}\n\nNotes on {name}.\n".encode(), f"{name}.md", now=at(0))
        for name in ("ferries", "lighthouses")
    ]
    first, second = (r.document.id for r in docs if r.document is not None)

    assert service.resolve_id(figs.id) == figs.id
    assert service.resolve_id(f"  {figs.id[: shared + 1].lower()} ") == figs.id
    assert service.resolve_id(dates.id[: shared + 1]) == dates.id
    assert service.resolve_id(later.id[:9]) == later.id
    with pytest.raises(AmbiguousIdError) as ambiguous:
        service.resolve_id(figs.id[:shared])
    assert f"{figs.id} ('Owner likes figs')" in str(ambiguous.value)
    assert f"{dates.id} ('Owner likes dates')" in str(ambiguous.value)
    assert later.id not in str(ambiguous.value)
    with pytest.raises(MemoryNotFoundError, match="at least 4 characters"):
        service.resolve_id(figs.id[:3])
    for unknown in ("ZZZZ", "01-?", figs.id + "0", ""):
        with pytest.raises(MemoryNotFoundError):
            service.resolve_id(unknown)

    assert service.kb.resolve_id(first[: shared_start(first, second) + 1]) == first
    with pytest.raises(AmbiguousIdError, match=r"ferries.*lighthouses|lighthouses.*ferries"):
        service.kb.resolve_id(first[:8])
    with pytest.raises(DocumentNotFoundError):
        service.kb.resolve_id(figs.id)
    assert service.store.memories.ids_starting(figs.id[:shared], 10) == sorted([figs.id, dates.id])
    assert service.store.memories.ids_starting(figs.id[:shared], 1) == [min(figs.id, dates.id)]


def shared_start(first: str, second: str) -> int:
    """How many leading characters two ids share."""
    pairs = enumerate(zip(first, second, strict=True))
    return next((i for i, (a, b) in pairs if a != b), len(first))
