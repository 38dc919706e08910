"""The store keeps no domain rule: a fact's subject key and an entity name's key come from the
domain (memory/keys.py) when the store is opened; a store opened without them reads and
copies, and refuses a write that needs a key. A backup's file copy is the backend's own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.errors import InvalidOperationError
from memoryd.memory.keys import ROW_KEYS
from memoryd.memory.model import Kind, Memory, Source, Status, fact_slot
from memoryd.service import MemoryService
from memoryd.storage.postgres import PostgresStore
from memoryd.storage.protocols import FileCopy, Store
from memoryd.storage.sqlite import SqliteStore

from .conftest import Backend

AT = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


def _fact(memory_id: str, subject: str, entities: tuple[str, ...]) -> Memory:
    return Memory(
        id=memory_id,
        kind=Kind.FACT,
        status=Status.ACTIVE,
        content=f"{subject} lives in Porto",
        source=Source.REMEMBER,
        created_at=AT,
        last_confirmed_at=AT,
        subject=subject,
        predicate="lives in",
        object="Porto",
        slot=fact_slot(subject, "lives in"),
        entities=entities,
    )


def _reopened_without_keys(store: Store) -> Store:
    url = getattr(store, "url", None)
    if url is not None:
        return PostgresStore(url, create=False)
    return SqliteStore(Path(store.path), create=False)  # type: ignore[attr-defined]


def test_subjects_and_names_are_stored_under_the_domains_keys(service: MemoryService) -> None:
    store = service.store
    with store.transaction():
        store.memories.insert(_fact("mem_a", "The owner's sister", ("Ana's",)), None)
        store.entities.add_alias("Ana", "ANA’s friend")

    assert ROW_KEYS.subject("my sister") == "sister"
    assert [m.id for m in store.memories.live_facts_about(["sister"])] == ["mem_a"]
    assert store.memories.fact_subjects() == ["sister"]
    ids = dict(store.entities.aliases())
    assert ids["Ana's"] == ids["ANA’s friend"]


def test_a_store_opened_without_the_keys_reads_but_refuses_a_keyed_write(
    service: MemoryService,
) -> None:
    kept = _fact("mem_kept", "Marta", ("Marta",))
    with service.store.transaction():
        service.store.memories.insert(kept, None)
    reader = _reopened_without_keys(service.store)
    try:
        assert reader.memories.get(kept.id) == kept
        with pytest.raises(InvalidOperationError, match="open_store"), reader.transaction():
            reader.memories.insert(_fact("mem_new", "Kofi", ()), None)
        assert reader.memories.get("mem_new") is None
        assert reader.memories.count() == 1
    finally:
        reader.close()


def test_a_backup_copy_is_a_checked_file_or_none(backend: Backend, tmp_path: Path) -> None:
    service = backend.open_fresh()
    with service.store.transaction():
        service.store.memories.insert(_fact("mem_b", "Lars", ("Lars",)), None)
    target = tmp_path / "copy.db"

    copied = service.store.copy_to_file(target)

    if backend.name == "sqlite":
        assert copied == FileCopy(memories=1, documents=0)
        copy = SqliteStore(target, create=False)
        try:
            assert copy.memories.get("mem_b") is not None
        finally:
            copy.close()
    else:
        assert copied is None
        assert not target.exists()
