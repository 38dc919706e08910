"""`memoryd consolidate`: the dry run prints the plan and changes nothing; the real run does
exactly what the plan said, and running it again does nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memoryd.http.server import free_port
from memoryd.memory.model import Importance, Kind, Source
from tests.builders import item
from tests.e2e.conftest import Cli

T0 = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)
LATER = (T0 + timedelta(days=370)).isoformat()


def test_a_dry_run_prints_the_plan_and_the_real_run_carries_it_out(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    with seeded() as service:
        fact = service.remember(
            "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon",
            now=T0,
        ).memory  # fmt: skip
        event = service.remember("Owner ran a half marathon in Porto", kind=Kind.EVENT, now=T0)
        lesson = service.remember(
            "Send files with the file marker, not base64", kind=Kind.LESSON,
            importance=Importance.HIGH, now=T0,
        )  # fmt: skip
        weak, hunch = (
            r.memory
            for r in service.propose(
                {"memories": [
                    item("Owner might like jazz", kind="fact", confidence=0.3),
                    item("Owner seems to prefer trains over planes", kind="inference",
                         confidence=0.8),
                ]},
                source=Source.TURN, now=T0,
            )
        )  # fmt: skip
        assert fact and event.memory and lesson.memory and weak and hunch
        service.confirm(hunch.id, now=T0)
    expected = {
        ("archive-episodic", event.memory.id, "archive"),
        ("decay-semantic", fact.id, "supersede"),
        ("decay-inferences", hunch.id, "archive"),  # 0.8 after four half-lives is under 0.3
        ("demote-pending", weak.id, "archive"),
    }

    before = cli.json("list")
    plan = cli.json("consolidate", "--dry-run", "--now", LATER)
    assert plan["dry_run"] is True
    assert {(s["stage"], s["memory_id"], s["action"]) for s in plan["steps"]} == expected
    [decay] = [s for s in plan["steps"] if s["stage"] == "decay-semantic"]
    assert abs(decay["new_confidence"] - 0.8) < 1e-9
    assert plan["stages"]["archive-episodic"] == "1 planned"
    assert plan["stages"]["dedupe-pending"] == "0 planned"
    text = cli.ok("consolidate", "--dry-run", "--now", LATER)
    for stage, memory_id, action in expected:
        assert any(stage in line and memory_id in line and action in line
                   for line in text.splitlines()), (stage, memory_id, text)  # fmt: skip
    assert cli.json("list") == before, "a dry run changed the store"

    done = cli.json("consolidate", "--now", LATER)
    assert done["dry_run"] is False
    assert {(s["stage"], s["memory_id"], s["action"]) for s in done["steps"]} == expected
    after = {m["id"]: m for m in cli.json("list")}
    assert {i: after[i]["status"] for i in (event.memory.id, fact.id, hunch.id, weak.id)} == {
        event.memory.id: "archived", fact.id: "archived", hunch.id: "archived",
        weak.id: "archived",
    }  # fmt: skip
    successor = after[after[fact.id]["superseded_by"]]
    assert (successor["status"], successor["content"], successor["confidence"]) == (
        "active", "Owner lives in Lisbon", 0.8)  # fmt: skip
    assert after[lesson.memory.id] == {m["id"]: m for m in before}[lesson.memory.id]
    assert len(after) == len(before) + 1

    again = cli.json("consolidate", "--now", LATER)
    assert again["steps"] == []
    assert [m["id"] for m in cli.json("reconfirm")] == [successor["id"]]


def test_a_model_that_does_not_answer_fails_its_stages_in_one_line_without_a_traceback(
    cli: Cli,
) -> None:
    """The model server stopped (or too slow for its timeout): the stages that ask it say so
    on their line, the others still run, and the owner sees no traceback."""
    away = f"http://127.0.0.1:{free_port()}/v1"
    llm = Cli(
        env={**cli.env, "MEMORYD_LLM_BASE_URL": away, "MEMORYD_LLM_MODEL": "smollm2",
             "MEMORYD_LLM_MAX_RETRIES": "0", "MEMORYD_LLM_TIMEOUT": "2"},
        cwd=cli.cwd,
    )  # fmt: skip
    llm.ok("init")
    llm.ok("remember", "My sister Ana lives in Faro")

    result = llm.run("consolidate")

    assert "Traceback" not in result.stderr, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines["write-cues"].startswith("failed: the extract LLM route cannot reach " + away)
    assert lines["archive-episodic"] == "0 applied"
