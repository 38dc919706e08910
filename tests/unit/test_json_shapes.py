"""One declaration per JSON shape: what a record's ``to_json`` builds (the CLI's ``--json``) and
what the HTTP API returns and documents come from the same ``TypedDict``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, NotRequired, TypedDict, get_args, get_origin, get_type_hints

import pytest

from memoryd.http import response_models as out
from memoryd.json_shapes import CliOnly, Default, Described
from memoryd.kb.model import Document, DocumentJson, DocumentStatus, SourceType
from memoryd.kb.sync.model import FileState, FileStatus, SourceKind, SyncFile, SyncSource
from memoryd.memory.model import (
    Actor,
    AuditEntry,
    Importance,
    Kind,
    Memory,
    MemoryJson,
    ShowResult,
    Source,
    Status,
)
from memoryd.memory.promotion_policy import Outcome
from memoryd.results import ReviewItem, SplitResult, WriteResult

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MEMORY = Memory(
    "01MEMORY", Kind.FACT, Status.PENDING, "I live in Lisbon", Source.TURN, NOW, NOW,
    subject="owner", predicate="lives_in", object="Lisbon", slot="slot_1",
    entities=("Lisbon",), cues=("home", "city"), importance=Importance.HIGH, occurred_at=NOW,
)  # fmt: skip
DOCUMENT = Document(
    "01DOC", "/notes/tides.md", "default", SourceType.CURATED, "Tides", DocumentStatus.READY,
    NOW, NOW, chunk_count=4, embedded_chunks=2, metadata={"tags": ["sea"]},
)  # fmt: skip
SOURCE = SyncSource("01SRC", "/notes", SourceKind.FOLDER, "default", NOW)
AUDIT = AuditEntry("01MEMORY", NOW, Actor.OWNER, "create", None, Status.PENDING, "waits")
FILE = SyncFile("01SRC", "a.md", FileState.CURRENT, NOW, document_id="01DOC", size=10)

# (what the CLI prints, the HTTP model made from its shape)
CASES: list[tuple[str, Any, Any]] = [
    ("memory", MEMORY.to_json(), out.MemoryOut),
    ("document", DOCUMENT.to_json(), out.DocumentOut),
    ("show", ShowResult(MEMORY, (MEMORY,), (AUDIT,)).to_json(), out.ShowOut),
    ("write", WriteResult(Outcome.ACTIVATED, "r", "x", MEMORY, (MEMORY,)).to_json(), out.WriteOut),
    ("review", ReviewItem(MEMORY, MEMORY, "waits", "rule").to_json(), out.ReviewItemOut),
    ("split", SplitResult(MEMORY, "lives_in", None).to_json(), out.SplitOut),
    (
        "source",
        {**SOURCE.to_json(), "files": [FileStatus(FILE, "current").to_json()]},
        out.SyncSourceOut,
    ),
]


def _marks(hint: Any) -> tuple[Any, list[Any]]:
    if get_origin(hint) is NotRequired:
        hint = get_args(hint)[0]
    if get_origin(hint) is Annotated:
        base, *marks = get_args(hint)
        return base, marks
    return hint, []


def _cli_only(shape: type) -> set[str]:
    hints = get_type_hints(shape, include_extras=True)
    return {k for k, h in hints.items() if any(isinstance(m, CliOnly) for m in _marks(h)[1])}


@pytest.mark.parametrize(("name", "printed", "model"), CASES, ids=[c[0] for c in CASES])
def test_http_returns_what_the_cli_prints_less_the_cli_only_keys(
    name: str, printed: dict[str, Any], model: Any
) -> None:
    returned = model.model_validate(printed).model_dump(mode="json")

    assert set(printed) - set(returned) <= _cli_only(MemoryJson)
    for key, value in returned.items():
        if key in printed:
            assert value == _without_cli_only(printed[key]), (name, key)


def _without_cli_only(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_cli_only(v) for v in value]
    if isinstance(value, dict) and "cues" in value and "kind" in value:
        return {k: _without_cli_only(v) for k, v in value.items() if k != "cues"}
    return value


def test_a_model_keeps_its_shapes_keys_in_order_with_their_defaults_and_descriptions() -> None:
    hints = get_type_hints(DocumentJson, include_extras=True)
    fields = out.DocumentOut.model_fields

    assert list(fields) == list(hints)
    for key, hint in hints.items():
        _, marks = _marks(hint)
        described = [m.text for m in marks if isinstance(m, Described)]
        assert fields[key].description == (described[0] if described else None), key
        assert fields[key].is_required() == (not any(isinstance(m, Default) for m in marks)), key


def test_a_cli_only_key_is_printed_but_neither_returned_nor_documented() -> None:
    assert "cues" in MEMORY.to_json()
    assert "cues" not in out.MemoryOut.model_fields
    assert "cues" not in out.MemoryOut.model_json_schema()["properties"]


def test_each_shape_is_one_model_wherever_it_is_nested() -> None:
    chain = out.ShowOut.model_fields["chain"].annotation
    replaced = out.WriteOut.model_fields["replaced"].annotation

    assert get_args(chain) == (out.MemoryOut,)
    assert get_args(replaced) == (out.MemoryOut,)
    assert out.response_model(MemoryJson) is out.MemoryOut


def test_a_shape_docstring_is_the_documented_description() -> None:
    class NoteJson(TypedDict):
        """A note."""

        text: Annotated[str, Described("what it says")]
        tags: NotRequired[Annotated[list[str], Default(factory=list)]]

    model = out.response_model(NoteJson)
    schema = model.model_json_schema(mode="serialization")

    assert model.__name__ == "NoteOut"
    assert schema["description"] == "A note."
    assert schema["properties"]["text"]["description"] == "what it says"
    assert schema["required"] == ["text"]
    assert model.model_validate({"text": "hi"}).model_dump() == {"text": "hi", "tags": []}
