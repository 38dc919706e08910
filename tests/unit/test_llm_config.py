"""LLM routes per operation from ``MEMORYD_LLM_*`` and ``$MEMORYD_HOME/memoryd.toml``."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.config.settings import SettingsError
from memoryd.errors import MemorydError
from memoryd.providers.llm import (
    OPERATIONS,
    Gateway,
    LLMConfigError,
    LLMUnavailableError,
    Provider,
    Route,
    load_routes,
)

KEY = "sk-test-DO-NOT-LEAK-1234567890abcdef"
BASE = {
    "MEMORYD_LLM_PROVIDER": "openai",
    "MEMORYD_LLM_MODEL": "qwen2.5:7b",
    "MEMORYD_LLM_BASE_URL": "http://127.0.0.1:11434/v1",
}


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "memoryd.toml").write_text(text, encoding="utf-8")


def test_nothing_configured_means_every_operation_is_off(tmp_path: Path) -> None:
    routes = load_routes(tmp_path, {})

    assert routes == {}
    gateway = Gateway(routes)
    assert not any(gateway.configured(op) for op in OPERATIONS)
    with pytest.raises(LLMUnavailableError, match="MEMORYD_LLM_PROVIDER"):
        gateway.route("extract")


def test_the_default_route_serves_every_operation(tmp_path: Path) -> None:
    routes = load_routes(
        tmp_path, {**BASE, "MEMORYD_LLM_TIMEOUT": "1.5", "MEMORYD_LLM_MAX_RETRIES": "2"}
    )

    assert sorted(routes) == sorted(OPERATIONS)
    for operation, route in routes.items():
        assert route.operation == operation
        assert route.provider is Provider.OPENAI
        assert route.model == "qwen2.5:7b"
        assert route.base_url == "http://127.0.0.1:11434/v1"
        assert route.timeout == 1.5
        assert route.max_retries == 2


def test_an_operation_variable_overrides_only_that_operation(tmp_path: Path) -> None:
    routes = load_routes(
        tmp_path,
        {
            **BASE,
            "MEMORYD_LLM_CAPTION_PROVIDER": "anthropic",
            "MEMORYD_LLM_CAPTION_MODEL": "claude-vision",
            "MEMORYD_LLM_CAPTION_BASE_URL": "https://api.anthropic.example",
            "MEMORYD_LLM_EXTRACT_TIMEOUT": "7",
        },
    )

    caption = routes["caption"]
    assert (caption.provider, caption.model, caption.base_url) == (
        Provider.ANTHROPIC,
        "claude-vision",
        "https://api.anthropic.example",
    )
    assert routes["extract"].timeout == 7.0
    for operation in ("extract", "merge", "reflect"):
        route = routes[operation]
        assert (route.provider, route.model) == (Provider.OPENAI, "qwen2.5:7b")
        assert route.base_url == "http://127.0.0.1:11434/v1"
    assert routes["merge"].timeout == routes["caption"].timeout != 7.0


def test_one_operation_alone_can_be_configured(tmp_path: Path) -> None:
    routes = load_routes(
        tmp_path,
        {"MEMORYD_LLM_EXTRACT_PROVIDER": "openai", "MEMORYD_LLM_EXTRACT_MODEL": "small"},
    )

    assert list(routes) == ["extract"]
    assert routes["extract"].model == "small"


def test_the_toml_file_has_a_default_table_and_per_operation_tables(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
[llm]
provider = "openai"
model = "llama3.1:8b"
base_url = "http://127.0.0.1:8080/v1"
timeout = 20
max_retries = 1

[llm.extract]
model = "qwen2.5:14b"
timeout = 45

[llm.caption]
provider = "anthropic"
model = "claude-with-eyes"
base_url = "https://anthropic.example"
""",
    )

    routes = load_routes(tmp_path, {})

    assert sorted(routes) == sorted(OPERATIONS)
    extract = routes["extract"]
    assert (extract.provider, extract.model, extract.base_url) == (
        Provider.OPENAI,
        "qwen2.5:14b",
        "http://127.0.0.1:8080/v1",
    )
    assert (extract.timeout, extract.max_retries) == (45.0, 1)
    assert (routes["merge"].model, routes["merge"].timeout) == ("llama3.1:8b", 20.0)
    caption = routes["caption"]
    assert (caption.provider, caption.model) == (Provider.ANTHROPIC, "claude-with-eyes")
    assert caption.base_url == "https://anthropic.example"


def test_the_environment_beats_the_file(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
[llm]
provider = "openai"
model = "file-default"
base_url = "http://file.example/v1"

[llm.extract]
model = "file-extract"
""",
    )

    routes = load_routes(
        tmp_path,
        {
            "MEMORYD_LLM_MODEL": "env-default",
            "MEMORYD_LLM_BASE_URL": "http://env.example/v1",
            "MEMORYD_LLM_EXTRACT_MODEL": "env-extract",
        },
    )

    assert routes["extract"].model == "env-extract"
    assert routes["merge"].model == "env-default"
    assert {route.base_url for route in routes.values()} == {"http://env.example/v1"}


def test_the_key_can_come_from_a_file(tmp_path: Path) -> None:
    key_file = tmp_path / "secrets" / "llm.key"
    key_file.parent.mkdir()
    key_file.write_text(KEY + "\n", encoding="utf-8")

    from_env = load_routes(tmp_path, {**BASE, "MEMORYD_LLM_API_KEY_FILE": str(key_file)})
    write_config(
        tmp_path / "home",
        f'[llm]\nprovider = "anthropic"\nmodel = "claude"\napi_key_file = "{key_file}"\n',
    )
    from_toml = load_routes(tmp_path / "home", {})

    assert {route.api_key for route in from_env.values()} == {KEY}
    assert {route.api_key for route in from_toml.values()} == {KEY}


def test_an_unreadable_key_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.key"

    with pytest.raises(LLMConfigError) as caught:
        load_routes(tmp_path, {**BASE, "MEMORYD_LLM_API_KEY_FILE": str(missing)})

    assert "API key file" in str(caught.value)
    assert isinstance(caught.value, MemorydError)


def test_a_key_file_is_read_as_its_first_line(tmp_path: Path) -> None:
    """As configuration.md says: the key alone on the first line; a byte-order mark, a comment
    line after it or a trailing newline are not part of the key."""
    key_file = tmp_path / "llm.key"
    key_file.write_bytes(b"\xef\xbb\xbf" + KEY.encode() + b"\n# rotated 2026-11\n")

    routes = load_routes(tmp_path, {**BASE, "MEMORYD_LLM_API_KEY_FILE": str(key_file)})

    assert {route.api_key for route in routes.values()} == {KEY}


def test_a_key_file_that_is_not_text_is_a_clear_error(tmp_path: Path) -> None:
    key_file = tmp_path / "llm.key"
    key_file.write_bytes(b"\x8a\x00\xffnot a key")

    with pytest.raises(LLMConfigError) as caught:
        load_routes(tmp_path, {**BASE, "MEMORYD_LLM_API_KEY_FILE": str(key_file)})

    assert "is not UTF-8 text" in str(caught.value) and str(key_file) in str(caught.value)


@pytest.mark.parametrize(
    ("environ", "toml", "named"),
    [
        ({"MEMORYD_LLM_PROVIDER": "gemini", "MEMORYD_LLM_MODEL": "g"}, None, "gemini"),
        (
            {},
            '[llm]\nprovider = "openai"\nmodel = "m"\n[llm.merge]\nprovider = "cohere"\n',
            "cohere",
        ),
    ],
    ids=["env", "toml-operation"],
)
def test_an_unknown_provider_is_a_clear_error(
    tmp_path: Path, environ: dict[str, str], toml: str | None, named: str
) -> None:
    if toml is not None:
        write_config(tmp_path, toml)

    with pytest.raises(LLMConfigError) as caught:
        load_routes(tmp_path, environ)

    message = str(caught.value)
    assert named in message
    assert "openai" in message and "anthropic" in message


def test_a_provider_without_a_model_says_which_variable_to_set(tmp_path: Path) -> None:
    with pytest.raises(LLMConfigError, match="MEMORYD_LLM_MODEL"):
        load_routes(tmp_path, {"MEMORYD_LLM_PROVIDER": "openai"})


def test_provider_names_are_case_insensitive(tmp_path: Path) -> None:
    routes = load_routes(tmp_path, {"MEMORYD_LLM_PROVIDER": "Anthropic", "MEMORYD_LLM_MODEL": "c"})

    assert routes["extract"].provider is Provider.ANTHROPIC


def test_non_numeric_timeout_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LLMConfigError, match="timeout"):
        load_routes(tmp_path, {**BASE, "MEMORYD_LLM_TIMEOUT": "soon"})


def test_broken_toml_names_the_file(tmp_path: Path) -> None:
    write_config(tmp_path, "[llm\nprovider = openai\n")

    with pytest.raises(SettingsError, match=r"memoryd\.toml.*line 1"):
        load_routes(tmp_path, {})


def test_the_route_repr_and_description_never_show_the_key(tmp_path: Path) -> None:
    routes = load_routes(tmp_path, {**BASE, "MEMORYD_LLM_API_KEY": KEY})
    route = routes["extract"]

    assert route.api_key == KEY
    for text in (repr(route), str(route), route.describe(), repr(routes), repr(Gateway(routes))):
        assert KEY not in text
        assert "DO-NOT-LEAK" not in text
    assert "qwen2.5:7b" in repr(route)


def test_a_direct_route_hides_its_key_too() -> None:
    route = Route("extract", Provider.ANTHROPIC, "claude", api_key=KEY)

    assert KEY not in repr(route)
    assert KEY not in route.describe()


def test_structured_is_a_route_setting_defaulting_to_auto(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
[llm]
provider = "openai"
model = "llama3.1:8b"
structured = "json_object"

[llm.merge]
structured = "OFF"
""",
    )

    routes = load_routes(tmp_path, {"MEMORYD_LLM_EXTRACT_STRUCTURED": "json_schema"})
    defaults = load_routes(tmp_path / "elsewhere", BASE)

    assert {op: r.structured.value for op, r in routes.items()} == {
        "extract": "json_schema",
        "merge": "off",
        "reflect": "json_object",
        "caption": "json_object",
    }
    assert {r.structured.value for r in defaults.values()} == {"auto"}
    with pytest.raises(LLMConfigError, match="structured = 'grammar' for the reflect route"):
        load_routes(tmp_path, {"MEMORYD_LLM_REFLECT_STRUCTURED": "grammar"})
