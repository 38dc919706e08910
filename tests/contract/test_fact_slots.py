"""One slot per meaning, once per storage backend: canonical subjects and predicates, the
subject's predicate vocabulary (a new predicate that means the same joins the slot and says
so), the owner's split, the extraction prompt's list of predicates, and the one-time re-slot
of a store (and of an export) keyed before canonical forms."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.errors import InvalidOperationError
from memoryd.memory.model import Actor, Memory, Source, Status
from memoryd.memory.promotion_policy import Outcome
from memoryd.memory.slot_policy import slot_key
from memoryd.service import MemoryService
from memoryd.wiring import open_service
from tests.builders import batch, item
from tests.fake_llm import FakeLLMServer, Reply
from tests.legacy_slots import as_legacy, check_reslotted

from .conftest import Backend

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def remember(
    service: MemoryService, predicate: str, value: str, minutes: int, subject: str = "owner"
) -> Memory:
    result = service.remember(
        f"{subject} {predicate} {value}",
        subject=subject,
        predicate=predicate,
        object=value,
        now=at(minutes),
    )
    assert result.memory is not None, result
    return result.memory


def fact(subject: str, predicate: str, value: str, confidence: float = 0.9) -> dict[str, Any]:
    content = f"{subject} {predicate} {value}"
    return item(content, kind="fact", confidence=confidence, subject=subject,
                predicate=predicate, object=value)  # fmt: skip


def active_values(service: MemoryService) -> list[str]:
    return sorted(m.object or "" for m in service.list_memories(status=Status.ACTIVE))


def test_one_slot_per_meaning_as_the_owner_remembers_and_splits(service: MemoryService) -> None:
    lisbon = remember(service, "lives_in", "Lisbon", 0, subject="The owner")
    porto = remember(service, "lives in", "Porto", 1, subject="owner")
    # One active fact: Porto superseded Lisbon, whatever the wording.
    assert active_values(service) == ["Porto"]
    assert service.get(lisbon.id).superseded_by == porto.id and porto.supersedes == lisbon.id
    assert porto.same_slot_as is None

    braga = remember(service, "home city", "Braga", 2)
    colour = remember(service, "favourite colour", "green", 3)

    # "home city" means "lives in": it joined that slot, replaced Porto, and says so.
    assert (braga.slot, braga.same_slot_as, braga.supersedes) == (porto.slot, "lives in", porto.id)
    assert active_values(service) == ["Braga", "green"]
    created = service.show(braga.id).audit[-1]
    assert created.action == "create"
    assert "treated as the same slot as 'lives in' (predicate similarity" in created.reason
    # "favourite colour" is a slot of its own.
    assert colour.same_slot_as is None and colour.slot == slot_key("owner", "favourite colour")

    # The owner splits them: Braga keeps its own slot, Porto is active again.
    split = service.split(braga.id, now=at(4))
    assert split.was_same_slot_as == "lives in"
    assert split.memory.status is Status.ACTIVE
    assert (split.memory.slot, split.memory.same_slot_as) == (slot_key("owner", "home city"), None)
    assert split.restored is not None and split.restored.id == porto.id
    assert active_values(service) == ["Braga", "Porto", "green"]
    restored = service.get(porto.id)
    assert (restored.status, restored.superseded_by, restored.supersedes) == (
        Status.ACTIVE,
        None,
        lisbon.id,
    )
    assert service.get(braga.id).supersedes is None
    trail = [(e.memory_id, e.action, e.actor) for e in service.show(porto.id).audit]
    assert (porto.id, "restore", Actor.OWNER) in trail
    assert [(e.action, e.from_status, e.to_status) for e in service.show(braga.id).audit][-1] == (
        "split",
        Status.ACTIVE,
        Status.ACTIVE,
    )

    # Once split, "home city" is its own slot: a new value replaces Braga, not Porto.
    faro = remember(service, "Home_City", "Faro", 5)
    assert (faro.supersedes, faro.same_slot_as) == (braga.id, None)
    assert active_values(service) == ["Faro", "Porto", "green"]

    # Splitting what is in its own slot is refused and changes nothing.
    before = [(m.id, m.status, m.slot) for m in service.list_memories()]
    for memory_id in (braga.id, faro.id, colour.id):
        with pytest.raises(InvalidOperationError):
            service.split(memory_id, now=at(6))
    assert [(m.id, m.status, m.slot) for m in service.list_memories()] == before


def test_the_models_facts_wait_in_the_slot_they_mean(service: MemoryService) -> None:
    lisbon = remember(service, "lives_in", "Lisbon", 0, subject="The owner")

    results = service.propose(
        batch(fact("owner", "lives in", "Porto"), fact("the owner", "home city", "Braga")),
        source=Source.TURN,
        now=at(1),
    )

    porto, braga = (r.memory for r in results)
    assert porto is not None and braga is not None
    assert [r.outcome for r in results] == [Outcome.PENDING, Outcome.PENDING]
    assert (porto.slot, porto.same_slot_as) == (lisbon.slot, None)
    # The slot answers to the words it was first written with.
    assert (braga.slot, braga.same_slot_as) == (lisbon.slot, "lives_in")
    assert "treated as the same slot as 'lives_in'" in results[1].reason
    queue = {i.pending.id: i.would_replace for i in service.review_queue()}
    assert {k: v.id if v else None for k, v in queue.items()} == {
        porto.id: lisbon.id,
        braga.id: lisbon.id,
    }

    # Split while pending: it no longer would replace Lisbon, and nothing is restored.
    split = service.split(braga.id, now=at(2))
    assert split.restored is None and split.memory.status is Status.PENDING
    queue = {i.pending.id: i.would_replace for i in service.review_queue()}
    assert queue[braga.id] is None and queue[porto.id] is not None

    confirmed = service.confirm(porto.id, now=at(3))
    assert confirmed.supersedes == lisbon.id
    assert active_values(service) == ["Porto"]


@pytest.fixture
def openai_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai", api_key="sk-test-slots") as fake:
        yield fake


def test_the_extraction_input_lists_each_subjects_predicates_and_never_values(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, openai_server: FakeLLMServer
) -> None:
    for name, value in {
        "MEMORYD_LLM_PROVIDER": "openai",
        "MEMORYD_LLM_MODEL": "fake-extractor",
        "MEMORYD_LLM_BASE_URL": openai_server.sdk_base_url,
        "MEMORYD_LLM_API_KEY": "sk-test-slots",
        "MEMORYD_LLM_TIMEOUT": "2",
        "MEMORYD_LLM_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    service = backend.open_fresh()
    remember(service, "lives in", "Lisbon", 0)
    remember(service, "favourite colour", "green", 1)
    remember(service, "birthday", "12 May", 2, subject="Ana")
    remember(service, "lives in", "Coimbra", 3, subject="Ana")
    remember(service, "employer", "Efacec", 4, subject="Bruno")
    openai_server.script(Reply(batch()), Reply(batch()))

    service.observe_turn("Had a quiet day at home.", now=at(5))
    service.observe_turn("Lunch with Ana's sister and then Ana herself.", now=at(6))
    service.run_jobs(now=at(7))

    requests = [r for r in openai_server.requests if r.method == "POST"]
    quiet, lunch = (r.body["messages"][-1]["content"] for r in requests)
    values = ("Lisbon", "green", "12 May", "Coimbra", "Efacec", "Bruno")
    assert "\n- owner: lives in; favourite colour" in quiet
    assert "Ana" not in quiet and "birthday" not in quiet
    assert "\n- owner: lives in; favourite colour\n- Ana: birthday; lives in" in lunch
    for text in (quiet, lunch):
        assert not [value for value in values if value in text.split("</conversation>")[1]]
        assert "employer" not in text


def _reopen(service: MemoryService) -> MemoryService:
    store: Any = service.store
    location = getattr(store, "url", None) or str(store.path)
    return open_service(resolve_settings(location, {}), embedder=service.embedder)


def _without_meta(export: str, key: str) -> str:
    """The export as a release without ``key`` in its meta table would have written it."""
    records = [json.loads(line) for line in export.splitlines()]
    kept = [r for r in records[:-1] if not (r["type"] == "meta" and r["key"] == key)]
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in kept]
    counts: dict[str, int] = {}
    for record in kept:
        counts[record["type"]] = counts.get(record["type"], 0) + 1
    digest = hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8")).hexdigest()
    footer = {"type": "footer", "counts": counts, "sha256": digest}
    return "\n".join([*lines, json.dumps(footer, sort_keys=True, separators=(",", ":"))]) + "\n"


def test_a_store_keyed_before_canonical_slots_is_reslotted_once_and_never_merged_silently(
    backend: Backend,
) -> None:
    legacy = backend.open_fresh()
    rows = as_legacy(legacy)
    assert active_values(legacy) == ["Lisbon", "Porto", "green"]
    export = io.StringIO()
    legacy.admin.export_to(export)
    legacy.close()

    reopened = _reopen(legacy)
    try:
        audit_before = len(reopened.show(rows["Porto"].id).audit)
        again = _reopen(legacy)  # a second open finds it done
        again.close()
        assert len(reopened.show(rows["Porto"].id).audit) == audit_before
        assert reopened.store.integrity_errors() == []
        check_reslotted(reopened, rows)
    finally:
        reopened.close()

    # An export written before canonical slots (no slot_scheme in it) is re-slotted on import.
    imported = backend.open_fresh()
    imported.admin.import_from(io.StringIO(_without_meta(export.getvalue(), "slot_scheme")))
    check_reslotted(imported, rows)
