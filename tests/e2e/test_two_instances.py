"""Two ``memoryd serve`` processes on one PostgreSQL database (SPEC §9), both receiving turns:
every queued turn is extracted exactly once, and the daily consolidation runs once."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

from memoryd.providers.embedder import LocalMiniLM
from tests.distinct_texts import distinct, event_candidates
from tests.fake_llm import FakeLLMServer, Recorded, Reply
from tests.pg import TestPostgres

from .conftest import Cli, running_server

TURNS = 24
TOKEN = "two-instances-test-token"


def extractor(sentences: list[str]) -> Callable[[Recorded], Reply]:
    """The fake model: turn N (it mentions "turn N") yields the N-th distinct event."""

    def extract(request: Recorded) -> Reply:
        match = re.search(r"turn (\d+)", json.dumps(request.body))
        number = int(match.group(1)) if match else 0
        event = {"kind": "event", "content": sentences[number], "confidence": 0.9,
                 "changes_behavior": False}  # fmt: skip
        return Reply(json.dumps({"memories": [event]}))

    return extract


def test_two_servers_on_one_database_extract_each_turn_once_and_consolidate_once(
    cli: Cli, postgres_server: TestPostgres, tmp_path: Path, embedder: LocalMiniLM
) -> None:
    sentences = distinct(event_candidates(), TURNS, embedder, 0.9)
    url = postgres_server.create_database()
    llm = FakeLLMServer("openai", default=extractor(sentences))
    env = {
        **cli.env,
        "MEMORYD_DB": url,
        "MEMORYD_TOKEN": TOKEN,
        "MEMORYD_LLM_PROVIDER": "openai",
        "MEMORYD_LLM_MODEL": "fake-model",
        "MEMORYD_LLM_BASE_URL": llm.sdk_base_url,
        "MEMORYD_LLM_API_KEY": "k",
        "MEMORYD_LLM_MAX_RETRIES": "0",
    }
    try:
        assert cli.run("init", env=env).returncode == 0
        with running_server(env, cli.cwd) as first_url, running_server(env, cli.cwd) as second_url:
            check_both(first_url, second_url, sentences, url, llm)
    finally:
        llm.stop()
        postgres_server.drop_database(url)


def check_both(
    first_url: str, second_url: str, sentences: list[str], url: str, llm: FakeLLMServer
) -> None:
    """Send the turns to both servers, then check the database."""
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def send(base: str, numbers: range) -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            for number in numbers:
                answer = http.post("/v1/observe", json={
                    "user": f"This is turn {number}: {sentences[number]}"})  # fmt: skip
                assert answer.status_code == 200 and answer.json()["queued"] is True

    senders = [
        threading.Thread(target=send, args=(first_url, range(0, TURNS, 2))),
        threading.Thread(target=send, args=(second_url, range(1, TURNS, 2))),
    ]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()

    deadline = time.monotonic() + 120
    with psycopg.connect(url) as db:
        while True:
            counts: dict[str, int] = dict(db.execute(
                "SELECT status, count(*) FROM jobs GROUP BY status").fetchall())  # fmt: skip
            db.commit()
            if counts.get("done", 0) == TURNS or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        attempts = [row[0] for row in db.execute("SELECT attempts FROM jobs").fetchall()]
        contents = [row[0] for row in db.execute(
            "SELECT content FROM memories").fetchall()]  # fmt: skip
        runs = db.execute("SELECT value FROM meta WHERE key = 'consolidation_runs'").fetchone()

    assert counts == {"done": TURNS}
    assert attempts == [1] * TURNS, "a job was claimed twice"
    completions = [r for r in llm.requests if r.path.endswith("/chat/completions")]
    assert len(completions) == TURNS, "a turn was sent to the model twice"
    assert sorted(contents) == sorted(sentences)
    assert runs is not None and runs[0] == "1", f"daily consolidation ran {runs} times"
