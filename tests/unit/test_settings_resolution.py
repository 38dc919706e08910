"""One resolver for every setting: a flag beats the environment, which beats memoryd.toml, and
each value knows where it came from; bad values are refused naming their source."""

from __future__ import annotations

from datetime import UTC, time
from pathlib import Path

import pytest

from memoryd.config.settings import (
    KEYS,
    Origin,
    SettingsError,
    masked_location,
    parse_value,
    resolve_settings,
    setting_values,
)
from memoryd.providers.llm import routes_of
from memoryd.providers.remote_embedder import embed_settings_of

KEY = "sk-test-DO-NOT-LEAK-1234567890abcdef"


def home_with(tmp_path: Path, toml: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "memoryd.toml").write_text(toml, encoding="utf-8")
    return {"MEMORYD_HOME": str(home)}


def test_flags_beat_the_environment_which_beats_the_file(tmp_path: Path) -> None:
    env = home_with(
        tmp_path,
        'tz = "Europe/Lisbon"\ndb = "stores/mine.db"\n'
        '[serve]\nhost = "127.0.0.2"\nport = 8800\ndaily_at = "04:15"\n',
    )
    home = Path(env["MEMORYD_HOME"])

    from_file = resolve_settings(environ=env)
    from_env = resolve_settings(
        environ={**env, "MEMORYD_SERVE_PORT": "8801", "MEMORYD_TZ": "Asia/Tokyo"}
    )
    from_flags = resolve_settings(
        "/elsewhere/flag.db",
        {**env, "MEMORYD_SERVE_PORT": "8801", "MEMORYD_DB": "/env/env.db"},
        flags={"serve.port": 8802, "tz": "America/New_York", "serve.host": None},
    )

    # A relative store path in the file is relative to the file's folder.
    assert from_file.db == str(home / "stores" / "mine.db")
    assert str(from_file.zone) == "Europe/Lisbon"
    serve = from_file.serve()
    assert (serve.host, serve.port, serve.daily_at) == ("127.0.0.2", 8800, time(4, 15))
    assert str(serve.zone) == "Europe/Lisbon"
    port = from_file.setting("serve.port")
    assert port is not None and port.origin is Origin.FILE
    assert port.source() == f"serve.port in {home / 'memoryd.toml'}"

    assert from_env.serve().port == 8801 and str(from_env.zone) == "Asia/Tokyo"
    assert from_env.setting("serve.port").source() == "MEMORYD_SERVE_PORT"  # type: ignore[union-attr]

    assert from_flags.db == "/elsewhere/flag.db"
    assert from_flags.serve().port == 8802
    assert from_flags.serve().host == "127.0.0.2"  # a flag left out leaves the file's value
    assert from_flags.setting("tz").source() == "--tz"  # type: ignore[union-attr]
    assert resolve_settings(environ={**env, "MEMORYD_DB": "/env/env.db"}).db == "/env/env.db"


def test_defaults_without_any_setting(tmp_path: Path) -> None:
    settings = resolve_settings(environ={"MEMORYD_HOME": str(tmp_path)})

    assert settings.db == str(tmp_path / "memoryd.db")
    assert settings.zone is UTC
    assert settings.values == {} and settings.unknown == ()
    serve = settings.serve()
    assert (serve.host, serve.port, serve.daily_at_text) == ("127.0.0.1", 8765, "03:30")
    assert routes_of(settings) == {} and embed_settings_of(settings) is None


@pytest.mark.parametrize(
    ("toml", "environ", "words"),
    [
        ('tz = "Mars/Olympus"\n', {}, ["Mars/Olympus", "tz in", "memoryd.toml", "Europe/Lisbon"]),
        ("", {"MEMORYD_TZ": "Mars/Olympus"}, ["Mars/Olympus", "MEMORYD_TZ"]),
        ("[serve]\nport = 70000\n", {}, ["serve.port", "65535", "memoryd.toml"]),
        ("", {"MEMORYD_SERVE_DAILY_AT": "25:00"}, ["serve.daily_at", "HH:MM", "MEMORYD_SERVE"]),
        ("serve = 3\n", {}, ["[serve] must be a table"]),
    ],
    ids=["file-zone", "env-zone", "file-port", "env-daily", "not-a-table"],
)
def test_a_bad_value_names_itself_and_its_source(
    tmp_path: Path, toml: str, environ: dict[str, str], words: list[str]
) -> None:
    env = {**home_with(tmp_path, toml), **environ}

    with pytest.raises(SettingsError) as caught:
        resolve_settings(environ=env).serve()

    assert all(word in str(caught.value) for word in words), str(caught.value)


def test_unknown_keys_in_the_file_are_reported_not_used(tmp_path: Path) -> None:
    env = home_with(tmp_path, '[llm]\nmodle = "typo"\n[serve]\nport = 8800\n[extra]\nx = 1\n')

    values = setting_values(env)

    assert values.unknown == ("llm.modle", "extra.x")
    assert values.get("serve.port") == 8800
    assert routes_of(values) == {}


def test_a_route_takes_its_own_values_first_then_the_default_routes(tmp_path: Path) -> None:
    key_file = tmp_path / "caption.key"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    env = home_with(
        tmp_path,
        '[llm]\nmodel = "file-default"\napi_key = "file-default-key"\n'
        f'[llm.caption]\nmodel = "llava"\napi_key_file = "{key_file}"\n',
    )
    values = setting_values({**env, "MEMORYD_LLM_MODEL": "env-default"})

    routes = routes_of(values)

    # The more specific setting wins, whatever its source; at one level the environment wins.
    assert routes["caption"].model == "llava"
    assert routes["extract"].model == "env-default"
    assert routes["caption"].api_key == KEY
    assert routes["caption"].key_source == (
        f"the file {key_file} (llm.caption.api_key_file in {env['MEMORYD_HOME']}/memoryd.toml)"
    )
    assert routes["merge"].api_key == "file-default-key"
    assert routes["merge"].key_source == f"llm.api_key in {env['MEMORYD_HOME']}/memoryd.toml"
    env_key = routes_of(setting_values({**env, "MEMORYD_LLM_CAPTION_API_KEY": "k2"}))["caption"]
    assert (env_key.api_key, env_key.key_source) == ("k2", "MEMORYD_LLM_CAPTION_API_KEY")
    for route in routes.values():
        assert KEY not in repr(route) and "file-default-key" not in repr(route)


def test_every_key_has_its_variable_and_the_flags_are_the_commands() -> None:
    assert KEYS["llm.extract.api_key_file"].env == "MEMORYD_LLM_EXTRACT_API_KEY_FILE"
    assert KEYS["serve.daily_at"].env == "MEMORYD_SERVE_DAILY_AT"
    assert {k.name: k.flag for k in KEYS.values() if k.flag} == {
        "db": "--db",
        "tz": "--tz",
        "serve.host": "--host",
        "serve.port": "--port",
        "serve.daily_at": "--daily-at",
    }
    assert {k.name for k in KEYS.values() if k.secret} == {
        "llm.api_key",
        "embed.api_key",
        *(f"llm.{op}.api_key" for op in ("extract", "merge", "reflect", "caption", "chat")),
    }


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("serve.port", "8766", 8766),
        ("llm.timeout", "20", 20),
        ("llm.timeout", "2.5", 2.5),
        ("llm.max_retries", "0", 0),
        ("embed.provider", "OpenAI", "openai"),
        ("tz", "Europe/Lisbon", "Europe/Lisbon"),
        ("serve.daily_at", "04:05", "04:05"),
        ("llm.base_url", "http://localhost:11434/v1", "http://localhost:11434/v1"),
        ("db", "postgresql://u:pw@db.example/m", "postgresql://u:pw@db.example/m"),
    ],
)
def test_values_are_checked_and_typed(key: str, text: str, expected: object) -> None:
    assert parse_value(key, text) == expected


@pytest.mark.parametrize(
    ("key", "text", "words"),
    [
        ("serve.port", "eighty", ["serve.port", "whole number"]),
        ("serve.port", "0", ["between 1 and 65535"]),
        ("llm.timeout", "-1", ["more than 0"]),
        ("llm.provider", "gemini", ["'openai' or 'anthropic'"]),
        ("embed.provider", "cohere", ["'local' or 'openai'"]),
        ("serve.daily_at", "3pm", ["HH:MM"]),
        ("serve.daily_at", "25:00", ["HH:MM"]),
        ("serve.daily_at", "3", ["HH:MM"]),
        ("llm.base_url", "localhost:11434", ["http://"]),
        ("db", "mysql://x/y", ["postgresql://"]),
        ("llm.api_key_file", "/nonexistent/key", ["readable file"]),
        ("llm.model", "  ", ["llm.model is empty"]),
        ("llm.modle", "x", ["did you mean 'llm.model'", "valid keys", "serve.{host,port"]),
    ],
)
def test_bad_values_are_refused_with_what_is_expected(
    key: str, text: str, words: list[str]
) -> None:
    with pytest.raises(SettingsError) as caught:
        parse_value(key, text)
    assert all(word in str(caught.value) for word in words), str(caught.value)


def test_store_passwords_are_masked() -> None:
    assert masked_location("postgresql://me:s3cret@db:5432/m") == "postgresql://me:****@db:5432/m"
    assert "s3cret" not in masked_location("postgres://db/m?user=me&password=s3cret")
    assert masked_location("/home/me/memoryd.db") == "/home/me/memoryd.db"
