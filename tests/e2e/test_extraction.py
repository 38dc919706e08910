"""Extraction from the command line: ``observe``, ``compact``, ``mission``, ``worker``, ``jobs``
and ``doctor`` run as the real executable against scripted OpenAI / Anthropic servers.

Every process is a fresh one, so a job that a later command finds was persisted by an earlier
one. Times are given with ``--now``; the retry ladder is walked by moving ``--now`` forward.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoryd.errors import ProposalBatchError
from memoryd.memory.proposal_policy import parse_batch_text
from tests.builders import batch, item
from tests.fake_llm import Delay, FakeLLMServer, Reply, Status

from .conftest import Cli
from .server import MEMORYD

KEY = "sk-test-DO-NOT-LEAK-1234567890abcdef"
MODEL = "fake-extractor-7b"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RACE = "The owner ran the Porto half marathon in 1:52."
DINNER = "The owner booked dinner at Taberna da Rua for Friday."


def at(seconds: float = 0) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


def reply(server: FakeLLMServer, text: str) -> Reply:
    """Anthropic answers are primed with "{", so the model's text continues after it."""
    if server.flavor == "anthropic" and text.startswith("{"):
        return Reply(text[1:])
    return Reply(text)


def with_llm(cli: Cli, server: FakeLLMServer, **settings: str) -> Cli:
    """The same CLI with every LLM route pointing at ``server``."""
    env = {
        **cli.env,
        "MEMORYD_LLM_PROVIDER": server.flavor,
        "MEMORYD_LLM_MODEL": MODEL,
        "MEMORYD_LLM_BASE_URL": server.sdk_base_url,
        "MEMORYD_LLM_API_KEY": KEY,
        "MEMORYD_LLM_TIMEOUT": "1",
        "MEMORYD_LLM_MAX_RETRIES": "0",
        **settings,
    }
    return Cli(env=env, cwd=cli.cwd)


def store_bytes(db_path: Path) -> bytes:
    """The store file and its -wal/-shm companions."""
    return b"".join(p.read_bytes() for p in sorted(db_path.parent.glob(db_path.name + "*")))


def validation_error(text: str) -> str:
    try:
        parse_batch_text(text)
    except ProposalBatchError as error:
        return str(error)
    raise AssertionError(f"{text!r} is a valid batch")


def only_job(cli: Cli) -> dict[str, Any]:
    listed = cli.json("jobs")
    assert len(listed["jobs"]) == 1, listed
    job: dict[str, Any] = listed["jobs"][0]
    return job


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """An OpenAI-compatible provider that insists on the test key. (Both wire formats are
    covered in-process by tests/contract/test_extraction_queue.py; importing the anthropic SDK
    costs each CLI process about two seconds, so the CLI tests use it only where it matters.)"""
    with FakeLLMServer("openai", api_key=KEY) as fake:
        yield fake


# ---------------------------------------------------------- fire-and-forget turns


def test_observe_returns_a_job_id_at_once_and_the_worker_drains_it(
    cli: Cli, server: FakeLLMServer
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")

    queued = llm.json("observe", "--user", "Ran Porto in 1:52!", "--now", at())
    text = llm.ok("observe", "--user", "Booked Taberna da Rua for Friday", "--now", at(1))

    assert queued["queued"] is True and queued["notice"] is None
    job_id = queued["job_id"]
    assert isinstance(job_id, str) and job_id
    assert text.startswith("queued ") and "memoryd worker" in text
    assert server.request_count == 0  # nothing asked of the model yet
    listed = llm.json("jobs")
    assert listed["counts"] == {"queued": 2}
    assert {j["status"] for j in listed["jobs"]} == {"queued"}

    server.script(reply(server, batch(item(RACE))), reply(server, batch(item(DINNER))))
    out = llm.ok("worker", "--once", "--now", at(2))

    assert "2 jobs run" in out
    assert server.request_count == 2
    assert llm.json("jobs")["counts"] == {"done": 2}
    memories = {m["content"]: m for m in llm.json("list")}
    assert set(memories) == {RACE, DINNER}
    race = memories[RACE]
    assert (race["status"], race["source"], race["source_ref"]) == (
        "active",
        "turn",
        f"job:{job_id}",
    )
    assert (race["extractor_model"], race["prompt_version"]) == (MODEL, "extract.v3")
    assert RACE in llm.ok("recall", "How did my Porto half marathon go?", "--now", at(3))


def test_observe_wait_extracts_before_returning(cli: Cli, server: FakeLLMServer) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    server.script(Reply(batch(item(RACE))))

    results = llm.json(
        "observe", "--user", "Ran Porto in 1:52!", "--summary", "Race report", "--wait"
    )

    assert [(r["outcome"], r["memory"]["content"]) for r in results] == [("activated", RACE)]
    assert only_job(llm)["status"] == "done"


def test_the_model_writes_cues_that_recall_searches_and_never_shows(
    cli: Cli, server: FakeLLMServer
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    cues = ["running", "race time", "personal best"]
    server.script(Reply(batch(item(RACE, cues=cues))))

    results = llm.json("observe", "--user", "Ran Porto in 1:52!", "--wait")

    assert [r["memory"]["cues"] for r in results] == [cues]
    sent = server.requests[0].body
    schema = json.dumps(sent.get("response_format") or sent)
    assert '"cues"' in schema and "a person would use when asking" in json.dumps(sent)
    [listed] = llm.json("list")
    assert (listed["content"], listed["cues"]) == (RACE, cues)
    assert "personal best" not in llm.ok("list")
    # `show` lists them on their own line, never in the content.
    shown = llm.ok("show", listed["id"]).splitlines()
    assert f"           content: {RACE}" in shown
    assert "              cues: ['running', 'race time', 'personal best']" in shown
    # "personal best" is only in the cues: the text leg finds the race through them.
    answer = llm.ok("recall", "what is my personal best?")
    assert RACE in answer and "personal best" not in answer.replace("what is my personal best?", "")


# ------------------------------------------------------- outages and process exits


def test_a_turn_queued_while_the_llm_is_down_survives_the_process_and_lands_later(
    cli: Cli, server: FakeLLMServer
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    server.down()

    job_id = llm.json("observe", "--user", "Ran Porto in 1:52!", "--now", at())["job_id"]
    out = llm.ok("worker", "--once", "--now", at())

    # The error ends the line: no "0 proposals" after it, as if the error had proposed them.
    [line] = [x for x in out.splitlines() if x.startswith(f"job {job_id} (turn): queued — ")]
    assert "proposals" not in line
    job = only_job(llm)
    assert (job["id"], job["status"], job["attempts"]) == (job_id, "queued", 1)
    assert "extract" in job["last_error"]
    assert job["next_attempt_at"] == at(30)
    assert llm.json("list") == []

    server.up()
    server.script(reply(server, batch(item(RACE))))
    assert "0 jobs run" in llm.ok("worker", "--once", "--now", at(29))
    assert server.request_count == 0
    out = llm.ok("worker", "--once", "--now", at(30))
    assert f"job {job_id} (turn): done, 1 proposals\n1 jobs run" in out

    job = only_job(llm)
    assert (job["status"], job["attempts"], job["last_error"]) == ("done", 2, None)
    [memory] = llm.json("list")
    assert (memory["content"], memory["status"]) == (RACE, "active")
    assert memory["source_ref"] == f"job:{job_id}"


def test_observe_wait_while_the_llm_is_down_keeps_the_turn_queued(
    cli: Cli, server: FakeLLMServer
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    server.down()

    result = llm.run("observe", "--user", "Ran Porto in 1:52!", "--wait", "--now", at())

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "stays queued" in result.stderr and "memoryd worker" in result.stderr
    assert only_job(llm)["status"] == "queued"

    server.up()
    server.script(Reply(batch(item(RACE))))
    llm.ok("worker", "--once", "--now", at(30))
    assert [m["content"] for m in llm.json("list", "--status", "active")] == [RACE]


def test_a_worker_killed_mid_request_loses_no_turn(cli: Cli, server: FakeLLMServer) -> None:
    llm = with_llm(cli, server, MEMORYD_LLM_TIMEOUT="30")
    llm.ok("init")
    job_id = llm.json("observe", "--user", "Ran Porto in 1:52!", "--now", at())["job_id"]
    server.script(Delay(30, then=Reply(batch(item(RACE)))), Reply(batch(item(RACE))))

    worker = subprocess.Popen(
        [str(MEMORYD), "worker", "--once", "--now", at()],
        env=llm.env,
        cwd=llm.cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        server.wait_for_requests(1, timeout=30)
    finally:
        worker.kill()
        worker.wait(timeout=30)

    assert only_job(llm)["status"] == "running"
    # Another worker leaves a claimed job alone until its lease runs out, then takes it over.
    assert "0 jobs run" in llm.ok("worker", "--once", "--now", at(60))
    assert "1 jobs run" in llm.ok("worker", "--once", "--now", at(601))

    job = only_job(llm)
    assert (job["id"], job["status"]) == (job_id, "done")
    assert [m["content"] for m in llm.json("list", "--status", "active")] == [RACE]
    assert server.request_count == 2


# ---------------------------------------------------------------- broken answers


def test_a_twice_broken_answer_fails_the_job_with_the_error_in_jobs(
    cli: Cli, server: FakeLLMServer
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    first = batch(item(RACE, mood="elated"))
    second = json.dumps({"memories": [{"kind": "event", "content": RACE, "confidence": 0.9}]})
    server.script(reply(server, first), reply(server, second), reply(server, batch(item(RACE))))

    result = llm.run("observe", "--user", "Ran Porto in 1:52!", "--wait", "--now", at())

    assert result.returncode == 1
    assert "failed" in result.stderr and validation_error(second) in result.stderr
    assert server.request_count == 2 and server.remaining == 1
    assert llm.ok("list") == "no memories\n"
    job = only_job(llm)
    assert job["status"] == "failed"
    assert validation_error(second) in job["last_error"]
    table = llm.ok("jobs")
    assert job["id"] in table and "failed" in table
    assert validation_error(second) in table


def test_an_answer_cut_at_the_token_limit_says_so_not_a_json_error(
    cli: Cli, server: FakeLLMServer
) -> None:
    """A small model's batch stopped at the server's cap on generated tokens (llama.cpp's
    --n-predict): the job's error names the limit, where "Unterminated string" sent the owner
    looking for a broken model, and the turn is kept for `jobs retry` (it was dropped)."""
    llm = with_llm(cli, server)
    llm.ok("init")
    whole = batch(item(RACE))
    cut = Reply(whole[:40], truncated=True)
    server.script(cut, cut)

    result = llm.run("observe", "--user", "Ran Porto in 1:52!", "--wait", "--now", at())

    assert result.returncode == 1
    assert "cut off at its output token limit after 40 characters" in result.stderr
    assert "n-predict" in result.stderr and "Unterminated" not in result.stderr
    assert "cut off at its output token limit" in only_job(llm)["last_error"]

    # The turn is kept: once the limit is raised, `jobs retry` runs it again.
    server.script(Reply(whole))
    llm.ok("jobs", "retry", only_job(llm)["id"])
    llm.ok("worker", "--once")
    assert RACE in llm.ok("list")

    server.script(cut, Reply(whole))  # and a retry that answers in full is kept at once
    llm.ok("observe", "--user", "Ran Porto in 1:52 again!", "--wait", "--now", at(120))


def test_the_prompts_own_example_answer_is_dropped_unless_the_turn_spoke_of_it(
    cli: Cli, server: FakeLLMServer
) -> None:
    """SmolLM2 answered a mission about a dentist with the contract's worked example, "The
    owner is allergic to peanuts.": it waited on the review page as if the owner had said it."""
    llm = with_llm(cli, server)
    llm.ok("init")
    echo = batch(item("The owner is allergic to peanuts.", kind="fact"), item(RACE))
    server.script(reply(server, echo), reply(server, echo))

    llm.ok("observe", "--user", "Ran Porto in 1:52!", "--wait", "--now", at())
    assert [m["content"] for m in llm.json("list", "--status", "pending")] == []
    assert RACE in llm.ok("list")

    llm.ok("observe", "--user", "Peanuts make me ill; I ran Porto", "--wait", "--now", at(60))
    pending = [m["content"] for m in llm.json("list", "--status", "pending")]
    assert pending == ["The owner is allergic to peanuts."]


# ---------------------------------------------------------- compaction and missions


def test_compact_extracts_from_the_turns_about_to_be_summarised(
    cli: Cli, server: FakeLLMServer, tmp_path: Path
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    turns = tmp_path / "turns.json"
    turns.write_text(
        json.dumps(
            [
                {"role": "user", "content": "My sister Ana moved to Berlin last week."},
                {"role": "assistant", "content": "That is a big move! How is she settling in?"},
            ]
        )
    )
    moved = "The owner's sister Ana moved to Berlin."
    server.script(Reply(batch(item(moved, entities=["Ana", "Berlin"]))))

    [result] = llm.json("compact", str(turns), "--wait", "--now", at())

    assert result["outcome"] == "activated"
    memory = result["memory"]
    assert (memory["source"], memory["prompt_version"]) == ("compaction", "compaction.v2")
    [request] = server.requests
    system, conversation = (m["content"] for m in request.body["messages"])
    assert "about to be summarised away" in system
    assert "Owner: My sister Ana moved to Berlin last week." in conversation
    assert "Assistant: That is a big move!" in conversation


def test_a_mission_digest_never_becomes_its_own_memory(
    cli: Cli, server: FakeLLMServer, tmp_path: Path
) -> None:
    llm = with_llm(cli, server)
    llm.ok("init")
    title = "Find a quiet coworking space in Lisbon"
    goal = "Find a quiet coworking space in Lisbon with good wifi near the owner's flat"
    discovery = "Heden coworking in Santos is open around the clock for members."
    digest = tmp_path / "digest.json"
    digest.write_text(
        json.dumps(
            {
                "title": title,
                "goal": goal,
                "outcome": "Visited four spaces. Heden in Santos is open 24/7 for members; "
                "Second Home closes at 7pm.",
                "finished_at": "2026-03-01T18:00",
            }
        )
    )
    server.script(
        reply(
            server,
            batch(
                item(title, kind="fact", confidence=0.95),
                item(
                    "The owner wants a quiet coworking space in Lisbon with good wifi.",
                    kind="fact",
                ),
                item(discovery, kind="fact", entities=["Heden", "Santos"]),
            ),
        )
    )

    results = llm.json("mission", str(digest), "--wait", "--now", at())

    assert [r["memory"]["content"] for r in results] == [discovery]
    [memory] = llm.json("list")
    assert (memory["content"], memory["source"]) == (discovery, "mission")
    assert memory["status"] == "pending"  # mission output never activates alone
    assert (memory["prompt_version"], memory["extractor_model"]) == ("mission.v2", MODEL)
    assert only_job(llm)["result"]["echoes_dropped"] == 2
    [request] = server.requests
    prompt = request.body.get("system") or request.body["messages"][0]["content"]
    assert "keep only discoveries" in prompt
    conversation = request.body["messages"][-1]["content"]
    # Dated by when it finished (no MEMORYD_TZ: UTC), not by when the job ran.
    assert conversation.startswith("The mission finished on Sunday 2026-03-01 at 18:00, UTC.\n")
    assert f"Mission title: {title}" in conversation


# ------------------------------------------------------------------ no LLM at all


def test_with_no_llm_extraction_is_off_but_memory_still_works(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    turns = tmp_path / "turns.json"
    turns.write_text('[{"role": "user", "content": "I moved to Lisbon"}]')
    digest = tmp_path / "digest.json"
    digest.write_text('{"title": "Find a flat", "goal": "", "outcome": "Found one in Alfama."}')

    for command in (
        ("observe", "--user", "I moved to Lisbon"),
        ("observe", "--user", "I moved to Lisbon", "--wait"),
        ("compact", str(turns)),
        ("mission", str(digest)),
    ):
        error = cli.fails(*command)
        assert "off" in error and "MEMORYD_LLM_PROVIDER" in error, command

    assert cli.json("jobs")["counts"] == {}
    cli.ok("remember", "Owner lives in Lisbon", "--subject", "owner", "--predicate", "lives in")
    assert [m["content"] for m in cli.json("list")] == ["Owner lives in Lisbon"]
    assert "Owner lives in Lisbon" in cli.ok("recall", "Where do I live these days, Lisbon?")
    doctor = cli.run("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    [llm_line] = [line for line in doctor.stdout.splitlines() if " llm" in line]
    assert llm_line.startswith("ok") and "no LLM configured" in llm_line


# ------------------------------------------------------------------------ doctor


def test_doctor_calls_each_distinct_route_once(cli: Cli, tmp_path: Path) -> None:
    with FakeLLMServer("openai", api_key=KEY, default=Reply('{"ok": true}')) as healthy:
        llm = with_llm(cli, healthy, MEMORYD_LLM_CAPTION_MODEL="vision-model")
        llm.ok("init")

        result = llm.run("doctor")

        assert result.returncode == 0, result.stdout + result.stderr
        lines = {line.split(":")[0]: line for line in result.stdout.splitlines()}
        assert MODEL in lines["ok   llm extract, merge, reflect, chat"], result.stdout
        assert "vision-model" in lines["ok   llm caption"]
        # The fake is no Ollama: whether the caption model reads images cannot be told.
        assert "could not tell" in lines["info llm caption vision"]
        completions = [r for r in healthy.requests if r.path.endswith("/chat/completions")]
        assert sorted(r.body["model"] for r in completions) == [MODEL, "vision-model"]
        assert all(r.api_key == KEY for r in completions)


def test_doctor_passes_a_route_whose_ping_is_cut_at_the_token_cap(cli: Cli) -> None:
    """A server capped at a few tokens (llama.cpp --n-predict 16) cuts even the ping's answer:
    it answered, and the ping's text is not judged."""
    with FakeLLMServer("openai", api_key=KEY, default=Reply('{"ok": tr', truncated=True)) as cut:
        llm = with_llm(cli, cut)
        llm.ok("init")
        result = llm.run("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ok   llm extract, merge, reflect, caption, chat: openai model '{MODEL}'" in (
        result.stdout
    )


def test_doctor_fails_clearly_when_a_route_is_down(cli: Cli) -> None:
    with (
        FakeLLMServer("openai", api_key=KEY, default=Reply('{"ok": true}')) as healthy,
        FakeLLMServer("anthropic") as gone,
    ):
        gone.down()
        llm = with_llm(
            cli,
            healthy,
            MEMORYD_LLM_CAPTION_PROVIDER="anthropic",
            MEMORYD_LLM_CAPTION_MODEL="claude-eyes",
            MEMORYD_LLM_CAPTION_BASE_URL=gone.sdk_base_url,
        )
        llm.ok("init")

        result = llm.run("doctor")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    verdicts = {
        rest.strip().split(":")[0]: verdict
        for verdict, _, rest in (line.partition(" ") for line in result.stdout.splitlines())
        if verdict
    }
    assert verdicts == {
        "store": "ok",
        "embedder": "ok",
        "tokenizer": "ok",
        "llm extract, merge, reflect, chat": "ok",
        "llm caption": "FAIL",
    }, result.stdout
    lines = result.stdout.splitlines()
    [caption] = [index for index, line in enumerate(lines) if "llm caption" in line]
    assert "claude-eyes" in lines[caption] and gone.base_url in lines[caption]
    assert lines[caption + 1].strip() == f"next: is the server running? (tried {gone.base_url})"


def test_a_broken_llm_config_is_named_as_such(cli: Cli) -> None:
    broken = {"MEMORYD_LLM_PROVIDER": "gemini", "MEMORYD_LLM_MODEL": "g"}
    cli.ok("init")

    error = cli.fails("observe", "--user", "I moved to Lisbon", env=broken)
    doctor = cli.run("doctor", "--json", env=broken)

    assert "gemini" in error and "openai" in error and "anthropic" in error
    assert doctor.returncode == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)}
    assert not checks["llm"]["ok"] and "gemini" in checks["llm"]["detail"]
    # The store itself is fine: doctor must not blame it for the LLM settings.
    assert checks["store"]["ok"], checks["store"]


def test_an_anthropic_route_without_a_key_fails_clearly(cli: Cli) -> None:
    with FakeLLMServer("anthropic") as server:
        llm = with_llm(cli, server)
        del llm.env["MEMORYD_LLM_API_KEY"]
        llm.ok("init")

        result = llm.run("observe", "--user", "Ran Porto in 1:52!", "--wait", "--now", at())

    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: ") and "key" in result.stderr.lower()
    assert only_job(llm)["status"] != "running"


# ------------------------------------------------------------------ the API key


def test_the_api_key_never_appears_in_output_errors_or_the_store(
    cli: Cli, db_path: Path, server: FakeLLMServer
) -> None:
    llm = with_llm(cli, server)
    llm.env["OPENAI_LOG"] = "debug"  # the SDK's own logging, to stderr
    server.script(
        reply(server, batch(item(RACE))),
        Status(500),
        reply(server, "{not json"),
        reply(server, "{still not json"),
        Status(401),
    )
    runs = [
        llm.run("init"),
        llm.run("observe", "--user", "Ran Porto in 1:52!", "--wait", "--now", at()),
        llm.run("observe", "--user", "Booked Taberna da Rua", "--wait", "--now", at(1)),
        llm.run("observe", "--user", "Painted the hall green", "--wait", "--now", at(2)),
        llm.run("worker", "--once", "--now", at(60)),
        llm.run("jobs"),
        llm.run("jobs", "--json"),
        llm.run("doctor"),
    ]

    assert [r.returncode for r in runs] == [0, 0, 1, 1, 0, 0, 0, 1]
    assert all(r.api_key == KEY for r in server.requests)  # the key was really sent
    assert any("HTTP Request" in r.stderr for r in runs)  # the SDK's debug log was on
    for run in runs:
        assert "DO-NOT-LEAK" not in run.stdout, run.args
        assert "DO-NOT-LEAK" not in run.stderr, run.args
    on_disk = store_bytes(db_path)
    assert RACE.encode() in on_disk
    key_on_disk = b"DO-NOT-LEAK" in on_disk
    assert not key_on_disk
