"""The SQLite text leg answers alike whether it leaves inactive memories out by a set of their
rowids (when they are few) or by reading every match's row: same hits in the same order, ties
of BM25 included, same words per hit, same document frequencies.

SQLite only (the two forms are the SQLite store's), on a real store file.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.ids import IdGenerator
from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.storage.sqlite import SqliteStore
from memoryd.storage.sqlite_search import SqliteTextSearch
from tests.retired_memories import insert_then_retire

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
# A small vocabulary and short texts: many memories hold the same words, many texts repeat,
# so BM25 ties are common and decided by the order rows reach the sort.
WORDS = "anna bob coffee tea paris lisbon garden piano dentist monday friday train".split()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "text.db", create=True)
    chooser = random.Random(16)
    ids = IdGenerator()
    memories = []
    for _ in range(1500):
        memories.append(Memory(
            id=ids.new_id(NOW), kind=chooser.choice(list(Kind)), status=Status.ACTIVE,
            content=" ".join(chooser.choices(WORDS, k=chooser.randint(1, 5))),
            source=Source.OWNER, created_at=NOW, last_confirmed_at=NOW, confidence=0.9,
        ))  # fmt: skip
    insert_then_retire(opened, memories, chooser, NOW)
    yield opened
    opened.close()


def _text(store: SqliteStore) -> SqliteTextSearch:
    text = store.text
    assert isinstance(text, SqliteTextSearch)
    return text


def test_both_forms_give_the_same_result(store: SqliteStore) -> None:
    text = _text(store)
    chooser = random.Random(7)
    compared = 0
    for _ in range(150):
        terms = chooser.sample(WORDS, chooser.randint(1, 4))
        for k in (0, 1, 5, 50, 2000):
            text.inactive_set_max = 0  # 300 inactive: every match's row is read
            by_rows = text.search(terms, k)
            text.inactive_set_max = 10_000  # the 300 are left out by rowid
            by_set = text.search(terms, k)
            assert by_set == by_rows
            compared += 1
    assert compared == 750


def test_the_set_is_used_only_when_the_inactive_are_few(store: SqliteStore) -> None:
    text = _text(store)
    text.inactive_set_max = 299
    assert not text._few_inactive()
    text.inactive_set_max = 300
    assert text._few_inactive()


def test_kinds_and_a_fresh_store_answer_alike(store: SqliteStore, tmp_path: Path) -> None:
    text = _text(store)
    for kinds in ((Kind.FACT,), (Kind.EVENT, Kind.LESSON)):
        text.inactive_set_max = 0
        by_rows = text.search(["coffee", "paris"], 20, kinds)
        text.inactive_set_max = 10_000
        assert text.search(["coffee", "paris"], 20, kinds) == by_rows
        assert by_rows.hits
    empty = SqliteStore(tmp_path / "empty.db", create=True)
    try:
        assert empty.text.search(["coffee"], 10).document_frequency == {"coffee": 0}
    finally:
        empty.close()
