"""The write-cues consolidation stage against a scripted OpenAI-compatible server: memories
made without a model get their cues once, a dry run asks nothing, a bad answer writes nothing,
and without a model the stage is skipped with the reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memoryd.consolidation.policy import ConsolidationPolicy
from memoryd.memory.model import Status
from memoryd.providers.llm import Gateway, Provider, Route
from memoryd.service import MemoryService
from memoryd.words import query_terms
from tests.fake_llm import FakeLLMServer, Reply

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
STAGE = "write-cues"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


@pytest.fixture
def llm_service(service: MemoryService, server: FakeLLMServer) -> MemoryService:
    route = Route("extract", "openai", "fake-model", base_url=server.sdk_base_url,  # type: ignore[arg-type]
                  api_key="test-key", timeout=2.0, max_retries=0)  # fmt: skip
    service.use_gateway(Gateway({"extract": route}))
    return service


def test_remembered_memories_get_cues_once_and_are_found_by_them(
    llm_service: MemoryService, server: FakeLLMServer
) -> None:
    allergy = llm_service.remember("The owner is allergic to penicillin", now=NOW).memory
    salary = llm_service.remember("Their salary arrives on the 23rd", now=NOW).memory
    assert allergy is not None and salary is not None

    planned = llm_service.consolidate(now=NOW, dry_run=True)
    assert planned.stages[STAGE] == "2 planned" and server.requests == []
    assert llm_service.get(allergy.id).cues == ()

    server.script(
        Reply(json.dumps({"cues": ["medication", "medicines to avoid", "antibiotics"]})),
        Reply(json.dumps({"cues": ["pay day", "income"]})),
    )
    report = llm_service.consolidate(now=NOW)
    assert report.stages[STAGE] == "2 applied"
    assert llm_service.get(allergy.id).cues == ("medication", "medicines to avoid", "antibiotics")
    assert llm_service.get(salary.id).cues == ("pay day", "income")
    assert llm_service.get(allergy.id).content == "The owner is allergic to penicillin"
    sent = json.dumps(server.requests[0].body)
    assert "penicillin" in sent and "<conversation>" in sent

    found = llm_service.store.text.search(query_terms("when is pay day?"), 10)
    assert [h.memory_id for h in found.hits] == [salary.id]
    recalled = llm_service.recall("which medicines should I avoid?", stamp=False)
    assert "penicillin" in recalled.text and "antibiotics" not in recalled.text

    # Idempotent: a memory with cues is never asked again.
    asked = len(server.requests)
    assert llm_service.consolidate(now=NOW).stages[STAGE] == "0 applied"
    assert len(server.requests) == asked


@pytest.mark.parametrize(
    "answer",
    [
        '{"cues": "medication"}',
        '{"cues": ["' + "x" * 41 + '"]}',
        '{"words": ["medication"]}',
        '{"cues": ["sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"]}',
        "not json",
    ],
)
def test_an_answer_that_breaks_the_contract_or_holds_a_secret_writes_nothing(
    llm_service: MemoryService, server: FakeLLMServer, answer: str
) -> None:
    memory = llm_service.remember("The owner is allergic to penicillin", now=NOW).memory
    assert memory is not None
    server.script(Reply(answer))
    report = llm_service.consolidate(now=NOW)
    [step] = [s for s in report.steps if s.stage.value == STAGE]
    assert step.action.value == "keep"
    assert llm_service.get(memory.id).cues == ()
    assert llm_service.get(memory.id).status is Status.ACTIVE


def test_without_a_model_the_stage_is_skipped_with_the_reason(service: MemoryService) -> None:
    service.remember("The owner is allergic to penicillin", now=NOW)
    report = service.consolidate(now=NOW)
    assert report.stages[STAGE].startswith("skipped: writing cues is off: no LLM is configured")


def test_cues_copied_from_the_prompts_examples_are_dropped_for_an_unlike_memory(
    llm_service: MemoryService, server: FakeLLMServer
) -> None:
    """SmolLM2 answered for a train timetable with the prompt's own worked examples: the
    penicillin sentence and "when do I get paid". Stored, they made every question about pay
    recall the train. A memory like the example keeps the example's cues."""
    train = llm_service.remember("I take the 8:10 train to work on weekdays", now=NOW).memory
    salary = llm_service.remember("My salary comes in on the 25th", now=NOW).memory
    assert train is not None and salary is not None
    echoed = ["The owner is allergic to penicillin", "pay day", "When do I get paid", "commute"]
    server.script(Reply(json.dumps({"cues": echoed})), Reply(json.dumps({"cues": echoed})))

    llm_service.consolidate(now=NOW)

    assert llm_service.get(train.id).cues == ("commute",)
    assert llm_service.get(salary.id).cues == ("pay day", "When do I get paid", "commute")
    found = llm_service.store.text.search(query_terms("when do I get paid?"), 10)
    assert [h.memory_id for h in found.hits] == [salary.id]


def test_a_memory_the_model_gives_no_cues_for_is_not_asked_again_and_holds_no_one_back(
    llm_service: MemoryService, server: FakeLLMServer
) -> None:
    """A memory the model cannot give cues for was asked again at every run, oldest first: a
    few hundred of them held every newer memory back for good. The same model is now not
    asked again about it; another model is."""
    rules = ConsolidationPolicy(cues_per_run=1)
    code = llm_service.remember("4f9a 8b7c 6d5e", now=NOW).memory
    salary = llm_service.remember("Their salary arrives on the 23rd", now=NOW).memory
    assert code is not None and salary is not None

    server.script(Reply(json.dumps({"cues": []})))
    first = llm_service.consolidate(now=NOW, policy=rules)
    assert first.stages[STAGE] == "0 applied, 1 kept"
    assert "4f9a" in json.dumps(server.requests[-1].body)

    server.script(Reply(json.dumps({"cues": ["pay day", "income"]})))
    second = llm_service.consolidate(now=NOW, policy=rules)
    assert second.stages[STAGE] == "1 applied"
    assert "salary" in json.dumps(server.requests[-1].body)
    assert llm_service.get(salary.id).cues == ("pay day", "income")

    asked = len(server.requests)
    assert llm_service.consolidate(now=NOW, policy=rules).stages[STAGE] == "0 applied"
    assert llm_service.consolidate(now=NOW, dry_run=True).stages[STAGE] == "0 planned"
    assert len(server.requests) == asked and llm_service.get(code.id).cues == ()

    # Another model is asked again.
    route = Route("extract", Provider.OPENAI, "a-bigger-model", base_url=server.sdk_base_url,
                  api_key="test-key", timeout=2.0, max_retries=0)  # fmt: skip
    llm_service.use_gateway(Gateway({"extract": route}))
    server.script(Reply(json.dumps({"cues": ["code", "number"]})))
    assert llm_service.consolidate(now=NOW, policy=rules).stages[STAGE] == "1 applied"
    assert llm_service.get(code.id).cues == ("code", "number")
