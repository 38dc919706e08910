"""The SQLite entity leg answers alike whether it leaves inactive memories out by a set of their
ids (when they are few) or by joining every tagged row to its memory: same ids in the same
order, ties of the summed weight included (broken by id).

SQLite only (the two forms are the SQLite store's), on a real store file.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.ids import IdGenerator
from memoryd.memory.keys import ROW_KEYS
from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.storage.sqlite import SqliteStore
from memoryd.storage.sqlite_memories import SqliteEntityIndex
from tests.retired_memories import insert_then_retire

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
# Few names, many memories each: weights tie often, and many tagged memories are not active.
NAMES = ("Anna", "Bob", "Chiara", "Dmitri", "Lisbon", "Paris")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "entities.db", create=True, keys=ROW_KEYS)
    chooser = random.Random(28)
    ids = IdGenerator()
    memories = []
    for _ in range(1500):
        names = tuple(chooser.sample(NAMES, chooser.randint(1, 3)))
        memories.append(Memory(
            id=ids.new_id(NOW), kind=chooser.choice(list(Kind)), status=Status.ACTIVE,
            content="met " + " and ".join(names), source=Source.OWNER, created_at=NOW,
            last_confirmed_at=NOW, confidence=0.9, entities=names,
        ))  # fmt: skip
    insert_then_retire(opened, memories, chooser, NOW)
    yield opened
    opened.close()


def _entities(store: SqliteStore) -> SqliteEntityIndex:
    entities = store.entities
    assert isinstance(entities, SqliteEntityIndex)
    return entities


def test_both_forms_give_the_same_ranking(store: SqliteStore) -> None:
    entities = _entities(store)
    known = [entities.entity_id(name) for name in NAMES]
    chooser = random.Random(7)
    compared = 0
    for _ in range(60):
        chosen = chooser.sample(known, chooser.randint(1, 4))
        weights = {entity: chooser.choice([1.0, 0.5, 1 / 300, 1 / 700]) for entity in chosen}
        for limit in (1, 5, 100, 2000):
            entities.inactive_ids_max = 0  # 300+ not active: every tagged row is joined
            joined = entities.rank_by_entities(weights, limit)
            entities.inactive_ids_max = 10_000  # they are left out by id
            by_ids = entities.rank_by_entities(weights, limit)
            assert by_ids == joined
            assert by_ids  # 1,170 active memories carry these names
            compared += 1
    assert compared == 240
    everything = entities.rank_by_entities(dict.fromkeys(known, 1.0), 5000)
    statuses = {m.status for m in store.memories.get_many(everything).values()}
    assert statuses == {Status.ACTIVE}


def test_the_ids_are_used_only_when_the_inactive_are_few(store: SqliteStore) -> None:
    entities = _entities(store)
    entities.inactive_ids_max = 299
    assert not entities._few_inactive()
    entities.inactive_ids_max = 300
    assert entities._few_inactive()
