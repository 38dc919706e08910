"""``memoryd doctor`` against loopback fakes and a closed port: quick, one line per distinct
failure, and a next step for each (is the server running, which key, which models exist, a
caption model that cannot read images)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from memoryd.http.server import free_port
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import Delay, FakeLLMServer, Reply, Status

from .conftest import Cli

KEY = "sk-test-DO-NOT-LEAK-1234567890abcdef"


def test_an_unreachable_endpoint_is_reported_once_and_quickly(cli: Cli) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    cli.ok("init")
    cli.ok("config", "set", "llm.base_url", closed)
    cli.ok("config", "set", "llm.model", "llama3.1:8b")
    cli.ok("config", "set", "llm.caption.model", "llava")
    cli.ok("config", "set", "embed.base_url", closed)
    cli.ok("config", "set", "embed.model", "nomic-embed-text")

    started = time.monotonic()
    result = cli.run("doctor")
    took = time.monotonic() - started

    assert result.returncode == 1, result.stdout + result.stderr
    # Generous: the old doctor took 16 s (retries); this one connects once, side by side.
    assert took < 10, f"doctor took {took:.1f} s"
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failures == [
        f"FAIL embedder: embedding model 'nomic-embed-text': cannot reach {closed} (connection "
        "refused)",
        f"FAIL llm extract, merge, reflect, caption, chat: openai models 'llama3.1:8b', 'llava' at "
        f"{closed}: cannot reach {closed} (connection refused)",
    ], result.stdout
    assert f"     next: is the server running? (tried {closed})" in result.stdout.splitlines()
    assert "caption vision" not in result.stdout  # nothing to ask a server that is down


def test_each_failure_gets_its_next_step(cli: Cli, tmp_path: Path) -> None:
    wrong_key = tmp_path / "wrong.key"
    wrong_key.write_text("sk-wrong\n")
    right_key = tmp_path / "right.key"
    right_key.write_text(KEY + "\n")
    home = Path(cli.env["MEMORYD_HOME"])
    with (
        FakeEmbeddingServer() as embeddings,
        FakeLLMServer("openai", default=Status(404), models=("llama3.1:8b", "qwen2.5:7b")) as no,
        FakeLLMServer(
            "openai",
            api_key=KEY,
            default=Reply('{"ok": true}'),
            capabilities={
                "llama3.1:8b": ["completion", "tools"],
                "llava": ["completion", "vision"],
            },
        ) as keyed,
    ):
        cli.ok("init")
        cli.ok("config", "set", "llm.base_url", no.sdk_base_url)
        cli.ok("config", "set", "llm.model", "ghost")
        cli.ok("config", "set", "llm.caption.base_url", keyed.sdk_base_url)
        cli.ok("config", "set", "llm.caption.model", "llama3.1:8b")
        cli.ok("config", "set", "llm.caption.api_key_file", str(wrong_key))
        embed = {**embeddings.env(), "MEMORYD_EMBED_MODEL": "nomic-embed-text"}

        first = cli.run("doctor", "--json", env=embed)
        cli.ok("config", "set", "llm.caption.api_key_file", str(right_key))
        cli.ok("config", "set", "llm.base_url", keyed.sdk_base_url)
        cli.ok("config", "set", "llm.api_key_file", str(right_key))
        cli.ok("config", "set", "llm.model", "llava")
        second = cli.run("doctor")

    assert first.returncode == 1 and KEY not in first.stdout
    checks = {check["name"]: check for check in json.loads(first.stdout)}
    assert checks["llm extract, merge, reflect, chat"]["detail"] == (
        f"openai model 'ghost' at {no.sdk_base_url}: model 'ghost' not found (HTTP 404)"
    )
    assert checks["llm extract, merge, reflect, chat"]["next_step"] == (
        f"the server has: llama3.1:8b, qwen2.5:7b; GET {no.sdk_base_url}/models lists the "
        "models the server has"
    )
    assert checks["llm caption"]["detail"].endswith("the endpoint refused the API key (HTTP 401)")
    assert checks["llm caption"]["next_step"] == (
        f"check the key from the file {wrong_key} (llm.caption.api_key_file in "
        f"{home / 'memoryd.toml'})"
    )
    assert checks["embedder"]["detail"] == (
        "embedding model 'nomic-embed-text': model 'nomic-embed-text' not found (HTTP 404)"
    )
    assert checks["embedder"]["next_step"] == (
        f"GET {embeddings.base_url}/models lists the models the server has"
    )
    assert checks["store"]["ok"] and checks["tokenizer"]["ok"]

    # Everything answers now; the caption model is not a vision model, which Ollama says.
    assert second.returncode == 0, second.stdout
    lines = second.stdout.splitlines()
    assert "ok   llm extract, merge, reflect, chat: openai model 'llava'" in second.stdout
    [vision] = [index for index, line in enumerate(lines) if "caption vision" in line]
    assert lines[vision].startswith("warn llm caption vision: 'llama3.1:8b' does not read images")
    assert "capabilities: completion, tools" in lines[vision]
    assert "memoryd config set llm.caption.model" in lines[vision + 1]


def test_a_model_that_takes_the_call_but_never_answers_gets_a_next_step(cli: Cli) -> None:
    """A model server that accepts the connection and then says nothing within doctor's 4 s
    (Ollama loading a model, a busy machine): the failure says so and what to do, as every
    other failure does, instead of a bare timeout with no next step."""
    with FakeLLMServer("openai", default=Delay(30)) as slow:
        cli.ok("init")
        cli.ok("config", "set", "llm.base_url", slow.sdk_base_url)
        cli.ok("config", "set", "llm.model", "llama3.1:8b")
        result = cli.run("doctor", "--json")

    assert result.returncode == 1
    [check] = [c for c in json.loads(result.stdout) if c["name"].startswith("llm extract")]
    assert check["detail"] == (
        f"openai model 'llama3.1:8b' at {slow.sdk_base_url}: no answer within 4 s"
    )
    step = check["next_step"]
    assert step is not None and "a model may be loading" in step and "run doctor again" in step
    assert slow.sdk_base_url in step
