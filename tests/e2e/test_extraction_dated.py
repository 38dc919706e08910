"""Dated, schema-bound extraction from the command line: the turn's time and the owner's zone
reach the model, an event it leaves undated keeps the turn's day however late the job runs,
and a route set to ``json_schema`` sends the contract's schema (the real executable against a
scripted OpenAI-compatible server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.builders import batch, item
from tests.fake_llm import FakeLLMServer, Recorded, Reply

from .conftest import Cli

MODEL = "fake-extractor-7b"
DINNER = "The owner had dinner with Ana."
ENGAGED = "The owner's sister Inês got engaged."
TWO_DAYS_LATER = "2026-12-02T10:00:00+00:00"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


def lisbon_llm(cli: Cli, server: FakeLLMServer, **settings: str) -> Cli:
    env = {
        **cli.env,
        "MEMORYD_TZ": "Europe/Lisbon",
        "MEMORYD_LLM_PROVIDER": "openai",
        "MEMORYD_LLM_MODEL": MODEL,
        "MEMORYD_LLM_BASE_URL": server.sdk_base_url,
        "MEMORYD_LLM_TIMEOUT": "2",
        "MEMORYD_LLM_MAX_RETRIES": "0",
        **settings,
    }
    return Cli(env=env, cwd=cli.cwd)


def conversation(request: Recorded) -> str:
    [system, user] = request.body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    text: str = user["content"]
    return text


def shown_examples(request: Recorded) -> list[Any]:
    """The worked answers in the system prompt the model was sent."""
    system: str = request.body["messages"][0]["content"]
    return [json.loads(line[8:]) for line in system.splitlines() if line.startswith("Answer: ")]


def test_a_turn_is_dated_in_the_owners_zone_and_its_undated_event_keeps_that_day(
    cli: Cli, server: FakeLLMServer, tmp_path: Path
) -> None:
    llm = lisbon_llm(cli, server, MEMORYD_LLM_STRUCTURED="json_schema")
    llm.ok("init")
    server.script(Reply(batch(item(DINNER))), Reply(batch(item(ENGAGED))))

    queued = llm.json(
        "observe", "--user", "Had dinner with Ana", "--at", "2026-11-30T18:05",
        "--now", "2026-11-30T18:06:00+00:00",
    )  # fmt: skip
    ran = llm.ok("worker", "--once", "--now", TWO_DAYS_LATER)
    turns = tmp_path / "turns.json"
    turns.write_text(
        json.dumps(
            [
                {"role": "user", "content": "Inês got engaged today!", "at": "2026-07-03T21:40"},
                {"role": "assistant", "content": "Congratulations!", "at": "2026-07-03T21:41"},
            ]
        )
    )
    compacted = llm.ok("compact", str(turns), "--wait", "--now", TWO_DAYS_LATER)

    assert queued["queued"] and "1 jobs run" in ran
    turn, batch_request = [r for r in server.requests if r.method == "POST"]
    assert conversation(turn).startswith(
        "The turn happened on Monday 2026-11-30 at 18:05, Europe/Lisbon.\n<conversation>\n"
        "Owner: Had dinner with Ana\n"
    )
    # Summer time: 21:40 in Lisbon is 20:40 UTC, shown as the owner's 21:40.
    assert conversation(batch_request).startswith(
        "The turns below happened from Friday 2026-07-03 at 21:40 to Friday 2026-07-03 at 21:41,"
        " Europe/Lisbon; each line starts with its own local time.\n<conversation>\n"
        "[Fri 2026-07-03 21:40] Owner: Inês got engaged today!\n"
        "[Fri 2026-07-03 21:41] Assistant: Congratulations!\n"
    )
    memories = {m["content"]: m for m in llm.json("list")}
    assert memories[DINNER]["occurred_at"].startswith("2026-11-30")
    assert memories[DINNER]["created_at"].startswith("2026-12-02")
    assert memories[ENGAGED]["occurred_at"].startswith("2026-07-03")
    assert "event 2026-11-30" in llm.ok(
        "recall", "Who did I have dinner with?", "--now", TWO_DAYS_LATER
    )

    # The route is pinned to json_schema: the contract's schema went out, strict, and every
    # worked example the model was shown fits it.
    for request in (turn, batch_request):
        response_format = request.body["response_format"]
        assert response_format["type"] == "json_schema"
        sent = response_format["json_schema"]
        assert (sent["name"], sent["strict"]) == ("memory_proposals", True)
        examples = shown_examples(request)
        assert len(examples) >= 5  # the prompt's own and the contract's
        validator = jsonschema.Draft202012Validator(sent["schema"])
        assert [e for e in examples if not validator.is_valid(e)] == []
    assert compacted.splitlines()[0].endswith(": done, answer json_schema")
    jobs = llm.ok("jobs")
    assert jobs.count(", answer json_schema") == 2, jobs


def test_bad_turn_times_are_refused_and_nothing_is_queued(
    cli: Cli, server: FakeLLMServer, tmp_path: Path
) -> None:
    llm = lisbon_llm(cli, server)
    llm.ok("init")
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"content": "hi", "at": "last tuesday"}]))
    digest = tmp_path / "digest.json"
    digest.write_text(json.dumps({"title": "T", "outcome": "O", "finished_at": 20261130}))

    # An option value that cannot be used is a usage error (exit 2, docs/cli.md).
    at = llm.fails("observe", "--user", "Had dinner with Ana", "--at", "yesterday evening", code=2)
    turn_at = llm.fails("compact", str(turns))
    finished_at = llm.fails("mission", str(digest))
    broken_route = llm.fails("observe", "--user", "Hi", env={"MEMORYD_LLM_STRUCTURED": "grammar"})

    assert "--at 'yesterday evening' is not an ISO-8601 date or time" in at
    assert "turn 0's \"at\" 'last tuesday' is not an ISO-8601 date or time" in turn_at
    assert '"finished_at" must be an ISO-8601 time string' in finished_at
    assert "structured = 'grammar'" in broken_route and "json_schema" in broken_route
    assert llm.json("jobs")["jobs"] == []
    assert server.request_count == 0
