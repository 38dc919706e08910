"""The LLM stages of consolidation against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.llm import Gateway, Route
from memoryd.service import MemoryService
from tests.builders import batch, item
from tests.fake_llm import FakeLLMServer, Reply
from tests.fake_llm import Status as HttpStatus

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


@pytest.fixture
def llm_service(service: MemoryService, server: FakeLLMServer) -> MemoryService:
    routes = {
        operation: Route(operation, "openai", "fake-model", base_url=server.sdk_base_url,  # type: ignore[arg-type]
                         api_key="test-key", timeout=2.0, max_retries=0)
        for operation in ("merge", "reflect")
    }  # fmt: skip
    service.use_gateway(Gateway(routes))
    return service


def two_lisbon_facts(service: MemoryService) -> tuple[str, str]:
    """Two active near-duplicate facts. remember() would reinforce the first instead of
    storing the second (they are closer than 0.95), so they go in through the store, as an
    import or an older version would have left them."""
    ids = []
    for n, content in enumerate(
        ["Owner moved to Lisbon on 2026-08-27", "On 2026-08-27 the owner moved to Lisbon"]
    ):
        at = NOW - timedelta(days=3 - n)
        memory = Memory(
            id=f"01LISBONFACT{n}".ljust(26, "0"), kind=Kind.FACT, status=Status.ACTIVE,
            content=content, source=Source.OWNER, created_at=at, last_confirmed_at=at,
            entities=("Lisbon",),
        )  # fmt: skip
        with service.store.transaction():
            service.store.memories.insert(memory, service.embedder.embed([content])[0])
        ids.append(memory.id)
    return ids[0], ids[1]


@pytest.mark.parametrize("dropped", ["Lisbon", "2026-08-27"])
def test_a_merge_that_drops_a_name_or_a_date_is_refused(
    llm_service: MemoryService, server: FakeLLMServer, dropped: str
) -> None:
    ids = two_lisbon_facts(llm_service)
    merged = "The owner moved to Lisbon on 2026-08-27".replace(dropped, "a new place")
    server.script(Reply(json.dumps({"content": merged})))
    report = llm_service.consolidate(now=NOW)
    [step] = [s for s in report.steps if s.stage.value == "merge-near-duplicates"]
    assert step.action.value == "keep" and dropped in step.reason
    # The run's summary does not count the refused merge as applied.
    assert report.stages["merge-near-duplicates"] == "0 applied, 1 kept"
    assert {llm_service.get(i).status for i in ids} == {Status.ACTIVE}
    assert len(llm_service.list_memories(status=Status.ACTIVE)) == 2


def test_a_faithful_merge_supersedes_the_group(
    llm_service: MemoryService, server: FakeLLMServer
) -> None:
    ids = two_lisbon_facts(llm_service)
    server.script(Reply(json.dumps({"content": "The owner moved to Lisbon on 2026-08-27"})))
    report = llm_service.consolidate(now=NOW)
    assert report.stages["merge-near-duplicates"] == "1 applied"
    [merged] = llm_service.list_memories(status=Status.ACTIVE)
    assert merged.content == "The owner moved to Lisbon on 2026-08-27"
    assert merged.prompt_version == "merge.v1"
    # The answer's shape is asked for as a JSON Schema, so a small model constrained by its
    # server cannot answer another object (SmolLM2 answered {"content": {"name": ...}}).
    [request] = server.requests
    assert request.body is not None
    asked = request.body["response_format"]
    assert asked["type"] == "json_schema"
    schema = asked["json_schema"]["schema"]
    assert schema["required"] == ["content"] and schema["properties"]["content"]["type"] == "string"
    for old in ids:
        assert llm_service.get(old).status is Status.ARCHIVED
        assert llm_service.get(old).superseded_by == merged.id
    assert any(e.rule == "merge-near-duplicates" for e in llm_service.show(merged.id).audit)
    # Idempotent: nothing left to merge the second time, and no LLM call is made.
    calls = server.request_count
    assert [s for s in llm_service.consolidate(now=NOW).steps] == []
    assert server.request_count == calls


def ten_runs(service: MemoryService) -> None:
    """Ten events in the last week: reflection is due."""
    places = [
        "the river",
        "Monsanto park",
        "the beach at Carcavelos",
        "Belém",
        "the stadium",
        "Alfama's hills",
        "the university track",
        "Parque das Nações",
        "Sintra",
        "Cascais",
    ]
    for day, place in enumerate(places):
        service.remember(
            f"Owner ran {5 + day} km at {place}",
            kind=Kind.EVENT,
            occurred_at=NOW - timedelta(days=day * 0.6),
            now=NOW - timedelta(days=day * 0.6),
        )


def test_reflection_proposes_at_most_three_pending_insights_once_a_day(
    llm_service: MemoryService, server: FakeLLMServer
) -> None:
    ten_runs(llm_service)
    insights = [
        item(text, kind="inference", confidence=0.7)
        for text in (
            "The owner is training for a long-distance race",
            "Running is how the owner explores Lisbon",
            "The owner prefers to run in the morning before work",
            "The owner's weekly distance keeps growing",
            "The owner avoids the gym",
        )
    ]
    server.script(Reply(batch(*insights)))
    report = llm_service.consolidate(now=NOW)
    reflected = [s for s in report.steps if s.stage.value == "reflect"]
    assert len(reflected) == 3
    pending = llm_service.list_memories(status=Status.PENDING, kind=Kind.INFERENCE)
    assert len(pending) == 3 and {m.source for m in pending} == {Source.REFLECTION}
    calls = server.request_count
    assert [s for s in llm_service.consolidate(now=NOW).steps if s.stage.value == "reflect"] == []
    assert server.request_count == calls


def test_a_reflection_answer_broken_twice_fails_the_stage_and_is_asked_again(
    llm_service: MemoryService, server: FakeLLMServer
) -> None:
    """SmolLM2's reflection ran past its token cap twice: the stage said "0 applied", as if
    there were no insights, and the day was marked reflected."""
    ten_runs(llm_service)
    cut = Reply('{"memories": [{"kind": "inference", "content": "The owner', truncated=True)
    server.script(cut, cut)
    report = llm_service.consolidate(now=NOW)
    assert report.stages["reflect"].startswith("failed: the reflect answer: contract broken twice")
    assert "cut off at its output token limit" in report.stages["reflect"]

    server.script(Reply(batch(item("The owner is training for a race", kind="inference"))))
    again = llm_service.consolidate(now=NOW)
    assert again.stages["reflect"] == "1 applied"


def test_with_the_llm_down_its_stages_fail_alone(
    llm_service: MemoryService, server: FakeLLMServer, embedder: LocalMiniLM
) -> None:
    two_lisbon_facts(llm_service)
    old_event = llm_service.remember(
        "Owner visited the dentist", kind=Kind.EVENT, now=NOW - timedelta(days=200)
    ).memory
    assert old_event is not None
    server.script(HttpStatus(500), HttpStatus(500))
    report = llm_service.consolidate(now=NOW)
    assert report.stages["merge-near-duplicates"].startswith("failed")
    assert report.stages["archive-episodic"] == "1 applied"
    assert llm_service.get(old_event.id).status is Status.ARCHIVED


def test_without_an_llm_the_llm_stages_are_skipped_with_the_reason(
    service: MemoryService,
) -> None:
    report = service.consolidate(now=NOW)
    assert report.stages["merge-near-duplicates"].startswith("skipped: merging is off")
    assert report.stages["reflect"].startswith("skipped: reflection is off")
