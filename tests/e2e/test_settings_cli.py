"""One settings file for every process, through the real executable: ``config set`` in one
shell configures a worker started in another; ``config show`` says where every value comes from
and never shows a key; ``config set`` refuses bad keys and values and changes nothing then;
``status`` reports the store, the routes and whether they answered, and the queues."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.builders import batch, item
from tests.fake_llm import FakeLLMServer, Reply
from tests.pg import TestPostgres

from .conftest import Cli

KEY = "sk-test-DO-NOT-LEAK-1234567890abcdef"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(days: float = 0) -> str:
    return (T0 + timedelta(days=days)).isoformat()


def test_the_file_configures_a_worker_started_without_any_variable(
    cli: Cli, tmp_path: Path
) -> None:
    key_file = tmp_path / "llm.key"
    key_file.write_text(KEY + "\n")
    with FakeLLMServer("openai", api_key=KEY) as server:
        cli.ok("init")
        cli.ok("config", "set", "llm.base_url", server.sdk_base_url)
        cli.ok("config", "set", "llm.model", "fake-extractor")
        cli.ok("config", "set", "llm.api_key_file", str(key_file))
        cli.ok("config", "set", "llm.max_retries", "0")

        # The trigger and the worker are separate processes; neither has an MEMORYD_LLM_*.
        queued = cli.json("observe", "--user", "I ran the Porto half marathon", "--now", at())
        server.script(Reply(batch(item("The owner ran the Porto half marathon"))))
        worked = cli.ok("worker", "--once", "--now", at())

        assert f"job {queued['job_id']} (turn): done" in worked
        [request] = server.requests
        assert request.body["model"] == "fake-extractor" and request.api_key == KEY
        status = cli.json("status", "--now", at(0.5))
        extract = status["llm"]["extract"]
        assert extract["model"] == "fake-extractor" and extract["base_url"] == server.sdk_base_url
        assert extract["health"]["answered_recently"] is True
        assert (
            status["llm"]["caption"]["health"]["note"] == "the same model and endpoint as extract"
        )
        assert status["memories"] == {"active": 1, "pending": 0, "reconfirm_due": 0}

        # A day later the answer is no longer recent; a failing route shows its error.
        assert (
            cli.json("status", "--now", at(2))["llm"]["extract"]["health"]["answered_recently"]
            is False
        )
        server.down()
        cli.ok("observe", "--user", "I booked dinner at Taberna", "--now", at(2))
        cli.ok("worker", "--once", "--now", at(2))
        failing = cli.json("status", "--now", at(2))
        assert failing["llm"]["extract"]["health"]["retrying"] == 1
        assert failing["jobs"]["queued"] == 1 and failing["jobs"]["done"] == 1
        text = cli.ok("status", "--now", at(2))
        assert "failing:" in text and "1 jobs waiting to retry" in text


def test_config_show_names_every_source_and_hides_keys(cli: Cli, db_path: Path) -> None:
    cli.ok("config", "set", "tz", "Europe/Lisbon")
    cli.ok("config", "set", "serve.port", "8799")
    cli.ok("config", "set", "llm.model", "file-model")
    cli.ok("config", "set", "llm.caption.model", "llava")
    stored = cli.run("config", "set", "llm.api_key", "-", input=KEY + "\n")
    env = {"MEMORYD_LLM_MODEL": "env-model", "MEMORYD_SERVE_PORT": "8800"}

    shown = cli.json("config", "show", env=env)
    text = cli.ok("config", "show", env=env)

    home = Path(cli.env["MEMORYD_HOME"])
    file = home / "memoryd.toml"
    assert stored.returncode == 0 and KEY not in stored.stdout + stored.stderr
    assert "readable by you only" in stored.stdout
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert KEY not in json.dumps(shown) and KEY not in text
    settings = shown["settings"]
    assert settings["db"] == {"value": str(db_path), "source": "environment", "where": "MEMORYD_DB"}
    assert settings["tz"] == {"value": "Europe/Lisbon", "source": "file", "where": str(file)}
    assert settings["serve.port"]["value"] == "8800"
    assert settings["serve.port"]["where"] == "MEMORYD_SERVE_PORT"
    assert settings["serve.host"] == {"value": "127.0.0.1", "source": "default"}
    assert settings["llm.extract.model"] == {
        "value": "env-model",
        "source": "environment",
        "where": "MEMORYD_LLM_MODEL",
        "given_as": "llm.model",
    }
    assert settings["llm.caption.model"]["value"] == "llava"  # the specific one wins
    assert settings["llm.merge.api_key"] == {
        "value": "****",
        "source": "file",
        "where": str(file),
        "given_as": "llm.api_key",
    }
    assert settings["embed.provider"]["value"] == "local"
    assert shown["problems"] == []
    assert "environment MEMORYD_LLM_MODEL (llm.model)" in text

    # The edit told the owner the environment still overrides the file here.
    told = cli.ok("config", "set", "llm.model", "other", env=env)
    assert "MEMORYD_LLM_MODEL is set in this environment and overrides the file" in told
    assert "llm.caption.model" in told and "still decides it for caption" in told


def test_bad_keys_and_values_are_refused_and_change_nothing(cli: Cli) -> None:
    home = Path(cli.env["MEMORYD_HOME"])
    home.mkdir(parents=True)
    file = home / "memoryd.toml"
    file.write_text('# mine\n[llm]\nmodel = "m"\nmodle = "typo"\n')
    before = file.read_bytes()

    unknown = cli.fails("config", "set", "llm.modle", "x")
    zone = cli.fails("config", "set", "tz", "Europe/Lisbn")
    port = cli.fails("config", "set", "serve.port", "http")
    url = cli.fails("config", "set", "embed.base_url", "localhost:11434")

    assert "did you mean 'llm.model'" in unknown
    assert "serve.{host,port,daily_at,allowed_hosts}" in unknown
    listed = {key["key"]: key for key in cli.json("config", "keys")}
    # db, tz, serve.* (4); 8 settings for the default route, each of 4 operations and the chat
    # proxy's upstream; 10 for embed (the endpoint's 9 and int8_queries); 5 for the chat
    # proxy; 2 for converting documents.
    assert len(listed) == 6 + 8 * 6 + 10 + 5 + 2
    assert listed["kb.convert_seconds"]["env"] == "MEMORYD_KB_CONVERT_SECONDS"
    assert listed["llm.extract.structured"]["env"] == "MEMORYD_LLM_EXTRACT_STRUCTURED"
    assert listed["serve.port"]["env"] == "MEMORYD_SERVE_PORT"
    assert listed["serve.port"]["flag"] == "--port"
    assert "Europe/Lisbn" in zone and "IANA" in zone
    assert "serve.port" in port and "whole number" in port
    assert "http://" in url
    assert file.read_bytes() == before
    problems = cli.json("config", "show")["problems"]
    assert any("unknown key llm.modle" in problem for problem in problems)

    # A tz the file holds but that is wrong stops the commands that need it, naming the file;
    # config still works, so the owner can fix it.
    file.write_text('tz = "Mars/Olympus"\n')
    broken = cli.fails("recall", "anything")
    assert "Mars/Olympus" in broken and str(file) in broken
    assert any("Mars/Olympus" in p for p in cli.json("config", "show")["problems"])
    cli.ok("config", "unset", "tz")
    assert cli.ok("config", "unset", "tz").startswith("tz is not set in")


def test_status_on_postgresql_masks_the_password_and_sizes_the_database(
    cli: Cli, postgres_server: TestPostgres
) -> None:
    url = postgres_server.create_database()
    with_password = url.replace("postgres:@", "postgres:s3cret-pw@", 1)
    assert "s3cret-pw" in with_password, url
    try:
        env = {k: v for k, v in cli.env.items() if k != "MEMORYD_DB"}
        plain = Cli(env=env, cwd=cli.cwd)
        plain.ok("config", "set", "db", with_password)
        plain.ok("init")
        plain.ok("remember", "The owner keeps bees on the roof", "--now", at())
        plain.ok("remember", "Owner lives in Porto", "--subject", "owner", "--predicate",
                 "lives in", "--object", "Porto", "--now", at())  # fmt: skip
        plain.ok("consolidate", "--now", at(400))  # both facts decay: reconfirm them
        [bees, _] = plain.json("reconfirm")
        plain.ok("reconfirm", bees["id"], "--now", at(401))

        status = plain.json("status", "--now", at(401))
        shown = plain.ok("config", "show") + plain.ok("status")

        assert status["store"]["backend"] == "postgresql" and status["store"]["ok"]
        assert "****" in status["store"]["location"]
        assert status["store"]["size_bytes"] > 1_000_000
        assert status["memories"] == {"active": 2, "pending": 0, "reconfirm_due": 1}
        assert status["last_consolidation_at"].startswith("2027-04-06")
        assert status["server"] == {"running": False}
        assert "s3cret-pw" not in json.dumps(status) and "s3cret-pw" not in shown
        file = Path(cli.env["MEMORYD_HOME"]) / "memoryd.toml"
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
    finally:
        postgres_server.drop_database(url)


def test_config_show_has_the_proxy_and_conversion_settings_with_their_defaults(
    cli: Cli,
) -> None:
    # configuration.md: `config show` prints every value and where it came from.
    cli.ok("config", "set", "proxy.budget", "500")
    cli.ok("config", "set", "kb.convert_seconds", "60")

    shown = cli.json("config", "show", env={"MEMORYD_PROXY_INJECT": "memories"})

    file = str(Path(cli.env["MEMORYD_HOME"]) / "memoryd.toml")
    settings = shown["settings"]
    assert settings["proxy.budget"] == {"value": 500, "source": "file", "where": file}
    assert settings["kb.convert_seconds"] == {"value": 60, "source": "file", "where": file}
    assert settings["proxy.inject"] == {
        "value": "memories",
        "source": "environment",
        "where": "MEMORYD_PROXY_INJECT",
    }
    assert settings["proxy.enabled"] == {"value": "on", "source": "default"}
    assert settings["proxy.observe"] == {"value": "on", "source": "default"}
    assert settings["proxy.recall_timeout"] == {"value": 1.5, "source": "default"}
    assert settings["kb.convert_memory_mb"] == {"value": 1024, "source": "default"}
    assert settings["serve.allowed_hosts"]["source"] == "default"
    assert shown["problems"] == []


def test_config_show_has_the_chat_proxys_upstream_and_each_routes_structured_setting(
    cli: Cli,
) -> None:
    # configuration.md: `llm.chat.<setting>` is the chat proxy's upstream (else the default
    # route's), and `structured` is one of every route's settings; `config show` prints them.
    off = cli.ok("config", "show")
    assert "no model configured; the chat proxy answers 503" in off

    cli.ok("config", "set", "llm.model", "tiny")
    cli.ok("config", "set", "llm.base_url", "http://127.0.0.1:9/v1")
    cli.ok("config", "set", "llm.chat.model", "big-chat")
    cli.ok("config", "set", "llm.extract.structured", "json_object")
    settings = cli.json("config", "show")["settings"]

    file = str(Path(cli.env["MEMORYD_HOME"]) / "memoryd.toml")
    assert settings["llm.chat.model"] == {"value": "big-chat", "source": "file", "where": file}
    assert settings["llm.chat.base_url"]["value"] == "http://127.0.0.1:9/v1"
    assert settings["llm.extract.model"]["value"] == "tiny"
    assert settings["llm.extract.structured"]["value"] == "json_object"
    assert settings["llm.chat.structured"] == {"value": "auto", "source": "default"}
    # A default-route change says which routes keep their own value, the chat route too.
    told = cli.ok("config", "set", "llm.model", "other")
    assert "still decides it for chat" in told
