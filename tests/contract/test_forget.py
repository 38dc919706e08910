"""Forget: everything naming an entity (or matching a query) listed, then erased at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoryd.errors import DocumentNotFoundError, MemorydError
from memoryd.memory.model import Actor, Kind, Status
from memoryd.service import MemoryService

from .conftest import Backend
from .kb_support import markdown_doc

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def at(day: int) -> datetime:
    return START + timedelta(days=day)


ANA_DOC = markdown_doc(
    "Trip to the Azores",
    {
        "Flights": "The flights leave Lisbon at seven; the hotel shuttle waits at arrivals.",
        "Who comes": "Ana joins on the second day with the Kerguelen hiking maps.",
        "Food": "Try the cozido cooked in volcanic ground at Furnas.",
    },
)
OTHER_DOC = markdown_doc(
    "Sourdough notes",
    {"Starter": "Feed the starter twice a day with rye flour and keep it near the oven."},
)


def _store_about_ana(service: MemoryService) -> tuple[dict[str, str], dict[str, str]]:
    """Memories naming Ana (or her alias) in every status, and unrelated ones; two documents."""
    service.add_alias("Ana", "Annie")

    def keep(content: str, day: int, **extra: object) -> str:
        result = service.remember(content, now=at(day), **extra)  # type: ignore[arg-type]
        assert result.memory is not None, result.reason
        return result.memory.id

    ana = {
        "active": keep("Ana's birthday is on the ninth of Zanzibarch", 0),
        "alias": keep("Annie is learning the Quenya language", 1),
        "tagged": keep("She moved to Porto for the Vellichor bakery job", 2, entities=["Ana"]),
        "pending": keep(
            "Always greet Ana in Portuguese",
            3,
            kind=Kind.LESSON,
            changes_behavior=True,
            actor=Actor.TOOL,
        ),
        "archived": keep("ana plays the Xylorimba on Sundays", 4),
        "old": keep("Ana lives in Lisbon", 5, subject="Ana", predicate="lives in", object="Lisbon"),
        "new": keep("Ana lives in Braga", 6, subject="Ana", predicate="lives in", object="Braga"),
    }
    service.archive(ana["archived"], now=at(7))
    unrelated = {
        "banana": keep("Banana bread needs three very ripe bananas", 8),
        "prefix": keep("Anastasia plays chess at the club on Sundays", 9),
        "other": keep("Bruno lives in Madrid near the Retiro park", 10),
    }
    ana_doc = service.kb.ingest_bytes(ANA_DOC.encode(), "azores.md", now=at(11)).document
    other_doc = service.kb.ingest_bytes(OTHER_DOC.encode(), "sourdough.md", now=at(11)).document
    assert ana_doc is not None and other_doc is not None
    return ana, {**unrelated, "ana_doc": ana_doc.id, "other_doc": other_doc.id}


def test_forget_an_entity_lists_then_erases_every_trace_at_once(
    backend: Backend, service: MemoryService
) -> None:
    ana, kept = _store_about_ana(service)
    statuses = {m.id: m.status for m in service.list_memories()}
    assert statuses[ana["pending"]] is Status.PENDING
    assert statuses[ana["old"]] is Status.ARCHIVED  # superseded by "new"

    plan = service.forget(entity="ana", dry_run=True, now=at(12))

    assert {m.id for m in plan.memories} == set(ana.values())
    assert {d.id for d in plan.documents} == {kept["ana_doc"]}
    [chunk] = plan.chunks
    assert "Ana joins on the second" in chunk.preview
    assert set(plan.names) == {"ana", "annie"}
    assert plan.summary == "forget entity 'ana': 7 memories, 1 chunk in 1 document"
    assert all(m.purged_at is None for m in service.list_memories()), "a dry run erases nothing"

    result = service.forget(entity="ana", now=at(12))

    assert {m.id for m in result.memories} == set(ana.values())
    by_id = {m.id: m for m in service.list_memories()}
    for memory_id in ana.values():
        gone = by_id[memory_id]
        assert (gone.content, gone.purged_at) == ("", at(12)), "a tombstone is kept"
        assert gone.status in (Status.ARCHIVED, Status.REJECTED)
        [*_, entry] = service.show(memory_id).audit
        assert entry.action == "purge"
        assert "forget entity 'ana': 7 memories, 1 chunk in 1 document" in entry.reason
    for name in ("banana", "prefix", "other"):
        assert by_id[kept[name]].purged_at is None and by_id[kept[name]].content
    with pytest.raises(DocumentNotFoundError):
        service.kb.get(kept["ana_doc"])
    assert service.kb.get(kept["other_doc"]).chunk_count >= 1

    for message in ("Ana's birthday", "Annie Quenya", "Vellichor bakery", "Ana Lisbon Braga"):
        assert all(
            item.memory.id not in ana.values() for item in service.recall(message).packed.items
        )
        found = service.search_memory(message).items
        assert all(item.memory.id not in ana.values() for item in found)
    assert service.kb.search("Kerguelen hiking maps").hits == ()
    assert service.kb.search("starter rye flour").hits, "the other document is still found"
    assert service.forget(entity="Annie", dry_run=True).empty, "nothing left to forget"

    [record] = [v for k, v in service.store.meta_items().items() if k.startswith("forget:")]
    assert "forget entity 'ana'" in record
    service.close()
    persisted = backend.persisted_bytes()
    assert b"Retiro park" in persisted, "sanity: the dump does hold stored text"
    for word in (b"zanzibarch", b"quenya", b"vellichor", b"xylorimba", b"kerguelen", b"furnas"):
        assert word not in persisted.lower(), word


def test_forget_a_query_takes_only_what_holds_every_word_and_is_close(
    service: MemoryService,
) -> None:
    def keep(content: str, day: int) -> str:
        result = service.remember(content, now=at(day))
        assert result.memory is not None
        return result.memory.id

    dentist = {
        keep("Dentist appointment on Tuesday at three with Dr. Silva", 0),
        keep("Moved my dentist appointment to Friday morning", 1),
    }
    unrelated = {
        keep("Booked a car service appointment for Monday", 2),
        keep("My dentist friend recommends flossing every night", 3),
        keep("The owner prefers green tea to coffee", 4),
    }

    harbour = (
        "The harbour authority approved the new dredging schedule for the northern basin. "
        "Tugs will work in two shifts and the pilot boats keep their usual berths. "
    ) * 6
    passing = f"# Harbour works\n\n{harbour}Unrelated: my dentist appointment moved. {harbour}\n"
    about = (
        "# Teeth\n\n"
        + (
            "My dentist appointment is on Tuesday. The dentist said the appointment takes an hour "
            "and I should not eat before the appointment. "
        )
        * 4
    )
    kept_doc = service.kb.ingest_bytes(passing.encode(), "harbour.md", now=at(4)).document
    teeth = service.kb.ingest_bytes(about.encode(), "teeth.md", now=at(4)).document
    assert kept_doc is not None and teeth is not None

    plan = service.forget(query="dentist appointment", dry_run=True, now=at(5))

    assert {m.id for m in plan.memories} == dentist
    assert [d.id for d in plan.documents] == [teeth.id], "a mention in passing is not taken"
    assert all(m.why.startswith("every query word, cosine 0.") for m in plan.memories)
    service.forget(query="dentist appointment", now=at(5))
    left = {m.id for m in service.list_memories() if m.purged_at is None}
    assert left == unrelated


def test_a_forget_that_fails_midway_changes_nothing(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana, kept = _store_about_ana(service)
    before = {m.id: (m.status, m.content) for m in service.list_memories()}

    def broken(key: str, value: str) -> None:
        raise MemorydError("the disk filled up")

    # The request's record is the last write: every purge and removal came before it.
    monkeypatch.setattr(service.store, "set_meta", broken)
    with pytest.raises(MemorydError, match="disk filled up"):
        service.forget(entity="Ana", now=at(12))
    monkeypatch.undo()

    assert {m.id: (m.status, m.content) for m in service.list_memories()} == before
    assert service.kb.get(kept["ana_doc"]).chunk_count >= 1
    assert service.kb.search("Kerguelen hiking maps").hits
    packed = {item.memory.id for item in service.recall("When is Ana's birthday?").packed.items}
    assert ana["active"] in packed
    assert service.forget(entity="Ana", now=at(13)).memories, "and it can be run again"
