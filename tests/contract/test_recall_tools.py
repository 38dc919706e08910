"""search_memory and the model's tools (SPEC §4), once per storage backend."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memoryd.memory.model import Kind, Source, Status
from memoryd.service import MemoryService

from .recall_support import NOW, event, remember

# ---------------------------------------------------------------------------------------------
# search_memory


def test_search_memory_filters_by_kind_and_time_range(service: MemoryService) -> None:
    fact = remember(service, "Owner drinks coffee black", now=datetime(2026, 10, 20, tzinfo=UTC))
    october = event(service, "Had coffee with Ana at Fabrica", datetime(2026, 10, 5, tzinfo=UTC))
    grinder = event(service, "Bought a new coffee grinder", datetime(2026, 11, 10, tzinfo=UTC))
    tasting = event(service, "Went to a coffee tasting", datetime(2026, 11, 20, tzinfo=UTC))
    remember(service, "Owner's sister lives in Porto", now=datetime(2026, 9, 1, tzinfo=UTC))

    everything = service.search_memory("coffee", now=NOW)
    events = service.search_memory("coffee", kind=Kind.EVENT, now=NOW)
    facts = service.search_memory("coffee", kind=Kind.FACT, now=NOW)
    early_november = service.search_memory(
        "coffee",
        since=datetime(2026, 11, 1, tzinfo=UTC),
        until=datetime(2026, 11, 15, tzinfo=UTC),
        now=NOW,
    )
    since_november = service.search_memory(
        "coffee", since=datetime(2026, 11, 1, tzinfo=UTC), now=NOW
    )
    top_two = service.search_memory("coffee", limit=2, now=NOW)

    coffee = {fact.id, october.id, grinder.id, tasting.id}
    assert coffee <= {s.memory.id for s in everything.items}
    assert {s.memory.id for s in events.items} == {october.id, grinder.id, tasting.id}
    assert all(s.memory.kind is Kind.EVENT for s in events.items)
    assert facts.items[0].memory.id == fact.id
    assert all(s.memory.kind is Kind.FACT for s in facts.items)
    assert [s.memory.id for s in early_november.items] == [grinder.id]
    assert {s.memory.id for s in since_november.items} == {grinder.id, tasting.id}
    assert len(top_two.items) == 2
    scores = [s.score for s in everything.items]
    assert scores == sorted(scores, reverse=True) and all(score > 0 for score in scores)
    as_json = everything.to_json()
    assert as_json[0]["id"] == everything.items[0].memory.id
    assert as_json[0]["score"] > 0 and as_json[0]["content"]


# ---------------------------------------------------------------------------------------------
# The model's tools


def test_the_model_gets_exactly_four_tools_with_json_schemas(service: MemoryService) -> None:
    anthropic = service.tool_definitions()
    openai = service.tool_definitions("openai")

    names = ["remember", "search_memory", "search_kb", "read_kb"]
    assert [t["name"] for t in anthropic] == names
    for tool in anthropic:
        schema = tool["input_schema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert tool["description"]
    assert anthropic[0]["input_schema"]["required"] == ["content"]
    assert anthropic[1]["input_schema"]["required"] == ["query"]
    assert [t["function"]["name"] for t in openai] == names
    assert openai[0]["function"]["parameters"] == anthropic[0]["input_schema"]
    assert json.loads(json.dumps(anthropic)) == anthropic


def test_a_tool_call_remembers_as_the_model_not_the_owner(service: MemoryService) -> None:
    fact = service.call_tool("remember", {"content": "Owner's sister is called Marta"})
    lesson = service.call_tool(
        "remember", {"content": "From now on always answer in French", "kind": "lesson"}
    )
    from_json = service.call_tool(
        "remember", json.dumps({"content": "Owner ran a half marathon", "kind": "event"})
    )

    assert fact["status"] == "active"
    assert service.get(fact["id"]).source is Source.REMEMBER
    assert lesson["status"] == "pending"
    assert service.get(lesson["id"]).status is Status.PENDING
    assert from_json["status"] == "active"
    assert service.get(from_json["id"]).kind is Kind.EVENT


def test_a_credential_through_the_tool_is_refused_and_not_stored(service: MemoryService) -> None:
    result = service.call_tool(
        "remember", {"content": "My OpenAI key is sk-proj-Q7vXr2Lm9TzK4pWn8YbC3dHs6FjG1aEu"}
    )

    assert set(result) == {"error"}
    assert "credential" in result["error"] or "refus" in result["error"]
    assert service.list_memories() == []


def test_bad_tool_calls_come_back_as_errors_the_model_can_read(service: MemoryService) -> None:
    calls: list[tuple[str, Any]] = [
        ("forget", {"content": "x"}),
        ("confirm", {"memory_id": "x"}),
        ("remember", {}),
        ("remember", {"content": ""}),
        ("remember", {"content": 5}),
        ("remember", {"content": "x", "status": "active"}),
        ("remember", {"content": "x", "kind": "opinion"}),
        ("remember", {"content": "x", "entities": "Ana"}),
        ("remember", {"content": "Went out", "kind": "event", "occurred_at": "last tuesday"}),
        ("remember", "{not json"),
        ("remember", "[1, 2]"),
        ("search_memory", {}),
        ("search_memory", {"query": "x", "limit": "ten"}),
        ("search_memory", {"query": "x", "since": "yesterday"}),
    ]

    for name, arguments in calls:
        result = service.call_tool(name, arguments)
        assert set(result) == {"error"}, (name, arguments, result)
        assert isinstance(result["error"], str) and result["error"]
    assert service.list_memories() == []


def test_search_memory_through_the_tool_returns_ranked_results(service: MemoryService) -> None:
    marta = remember(service, "Owner's sister Marta lives in Porto", entities=["Marta"])
    remember(service, "Owner plays tennis on Tuesdays")
    event(service, "Visited Marta in Porto", datetime(2026, 11, 14, tzinfo=UTC))

    result = service.call_tool("search_memory", {"query": "Where does Marta live?"})
    events = service.call_tool(
        "search_memory", {"query": "Marta", "kind": "event", "since": "2026-11-01"}
    )

    assert "error" not in result
    assert result["results"][0]["id"] == marta.id
    assert result["results"][0]["content"] == "Owner's sister Marta lives in Porto"
    scores = [r["score"] for r in result["results"]]
    assert scores == sorted(scores, reverse=True)
    assert [r["content"] for r in events["results"]] == ["Visited Marta in Porto"]
    assert events["results"][0]["occurred_at"].startswith("2026-11-14")
