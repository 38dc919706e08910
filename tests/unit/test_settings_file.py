"""``config set`` / ``unset`` edit memoryd.toml: the file always parses to exactly the intended
values, comments survive a line edit, the file is replaced atomically and is 0600 once it holds
a secret."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.config.settings import KEYS, SettingsError
from memoryd.config.settings_file import dumps, set_value, unset_value, value_for_file

COMMENTED = """\
# my memoryd
tz = "Europe/Lisbon"   # where I live

[llm]
# the local Ollama
model = "llama3.1:8b"
base_url = "http://localhost:11434/v1"

[llm.caption]
model = "llava"

[serve]
port = 8766
"""


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_line_edit_keeps_comments_and_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text(COMMENTED, encoding="utf-8")

    changed = set_value(path, "llm.model", "qwen2.5:7b")
    added = set_value(path, "llm.extract.timeout", 30)
    top = set_value(path, "db", "/data/memoryd.db")
    removed = unset_value(path, "llm.caption.model")

    text = path.read_text(encoding="utf-8")
    assert changed.previous == "llama3.1:8b" and added.previous is None
    assert all(c is not None and c.kept_layout for c in (changed, added, top, removed))
    assert "# the local Ollama" in text and "# where I live" in text
    assert "[llm.caption]" not in text  # an emptied table goes with its last key
    assert tomllib.loads(text) == {
        "tz": "Europe/Lisbon",
        "db": "/data/memoryd.db",
        "llm": {
            "model": "qwen2.5:7b",
            "base_url": "http://localhost:11434/v1",
            "extract": {"timeout": 30},
        },
        "serve": {"port": 8766},
    }
    assert unset_value(path, "serve.host") is None
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_a_key_that_cannot_be_edited_in_place_rewrites_the_file_from_its_values(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text('# a comment\nllm = { model = "a", extract = { model = "b" } }\n')

    change = set_value(path, "llm.extract.model", "c")

    assert not change.kept_layout
    assert tomllib.loads(path.read_text()) == {"llm": {"model": "a", "extract": {"model": "c"}}}


def test_the_file_is_the_owners_alone_secret_or_not(tmp_path: Path) -> None:
    path = tmp_path / "home" / "memoryd.toml"

    plain = set_value(path, "llm.model", "m")
    assert mode_of(path) == 0o600 and not plain.holds_secret
    keyed = set_value(path, "llm.caption.api_key", "sk-secret")
    assert mode_of(path) == 0o600 and keyed.holds_secret
    unset_value(path, "llm.caption.api_key")
    assert mode_of(path) == 0o600  # never loosened behind the owner's back

    other = tmp_path / "other.toml"
    set_value(other, "db", "postgresql://me:pw@db.example/memoryd")
    assert mode_of(other) == 0o600


def test_a_broken_file_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text("[llm\nmodel = 1\n")

    with pytest.raises(SettingsError, match=r"memoryd\.toml"):
        set_value(path, "llm.model", "m")
    assert path.read_text() == "[llm\nmodel = 1\n"


def test_values_for_the_file_are_typed_and_paths_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "key").write_text("k\n")

    assert value_for_file("serve.port", "8766") == 8766
    assert value_for_file("db", "stores/m.db") == str(tmp_path / "stores" / "m.db")
    assert value_for_file("llm.api_key_file", "key") == str(tmp_path / "key")
    assert value_for_file("db", "postgresql://x/y") == "postgresql://x/y"
    with pytest.raises(SettingsError, match="valid keys"):
        value_for_file("serve.prot", "1")


# Any value TOML can hold, so the writer is checked beyond the keys memoryd knows.
_scalars = (
    st.text(max_size=20)
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.booleans()
)
_names = st.text(min_size=1, max_size=8)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
_documents = st.recursive(
    st.dictionaries(_names, _values, max_size=4),
    lambda inner: st.dictionaries(_names, _values | inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(_documents)
def test_any_document_is_written_back_as_itself(document: dict[str, Any]) -> None:
    assert tomllib.loads(dumps(document)) == document


_known = sorted(KEYS)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_known), st.none() | st.text(min_size=1, max_size=12)),
        min_size=1,
        max_size=8,
    )
)
def test_any_sequence_of_sets_and_unsets_leaves_exactly_those_values(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, str | None]]
) -> None:
    path = tmp_path_factory.mktemp("edits") / "memoryd.toml"
    path.write_text(COMMENTED, encoding="utf-8")
    expected = tomllib.loads(COMMENTED)
    for key, value in edits:
        *tables, leaf = key.split(".")
        table = expected
        if value is None:
            for name in tables:
                table = table.get(name, {})
            unset_value(path, key)
            table.pop(leaf, None)
        else:
            for name in tables:
                table = table.setdefault(name, {})
            set_value(path, key, value)
            table[leaf] = value

    assert _without_empty_tables(tomllib.loads(path.read_text())) == _without_empty_tables(expected)


def _without_empty_tables(document: dict[str, Any]) -> dict[str, Any]:
    pruned = {
        k: _without_empty_tables(v) if isinstance(v, dict) else v for k, v in document.items()
    }
    return {k: v for k, v in pruned.items() if v != {}}
