"""A memory row read back is the same object ``Memory(...)`` makes, whichever way it is built."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from memoryd.memory.model import Importance, Kind, Memory, Source, Status
from memoryd.storage import memory_rows
from memoryd.storage.memory_rows import memory_from_row, memory_params
from memoryd.storage.row_keys import RowKeys
from memoryd.storage.sqlite_connection import SQLITE_ROWS

AT = datetime(2026, 3, 14, 9, 26, 53, 589793, tzinfo=UTC)


def _every_field_set() -> Memory:
    return Memory(
        id="mem_01", kind=Kind.FACT, status=Status.ARCHIVED, content="Zoë prefers tea",
        source=Source.TURN, created_at=AT, last_confirmed_at=AT, confidence=0.875,
        subject="Zoë", predicate="prefers", object="tea", slot="zoë|prefers",
        entities=("Zoë", "Ōsaka"), importance=Importance.CRITICAL, changes_behavior=True,
        occurred_at=AT, source_ref="turn:1", extractor_model="m", prompt_version="v9",
        last_retrieved_at=AT, retrieval_hits=7, supersedes="mem_00", superseded_by="mem_02",
        purged_at=AT, same_slot_as="likes", cues=("drinks", "morning"),
    )  # fmt: skip


def _row(memory: Memory) -> tuple[object, ...]:
    return memory_params(memory, SQLITE_ROWS, RowKeys(subject=str.lower, entity=str.lower))


def test_the_fast_path_is_taken_and_makes_what_the_constructor_makes() -> None:
    memory = _every_field_set()
    assert memory_rows.PLAIN_MEMORY, "Memory changed shape: update memory_from_row's fields"
    read = memory_from_row(_row(memory), SQLITE_ROWS)
    assert type(read) is Memory
    assert read == memory and hash(read) == hash(memory) and repr(read) == repr(memory)
    assert list(vars(read)) == [f.name for f in dataclasses.fields(Memory)]
    assert vars(read) == vars(memory)


def test_the_constructor_path_reads_the_same_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = _every_field_set()
    monkeypatch.setattr(memory_rows, "PLAIN_MEMORY", False)
    assert memory_from_row(_row(memory), SQLITE_ROWS) == memory


def test_a_frozen_memory_read_from_a_row_stays_frozen() -> None:
    read = memory_from_row(_row(_every_field_set()), SQLITE_ROWS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.content = "changed"  # type: ignore[misc]
