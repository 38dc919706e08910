"""A store where many memories are no longer active, for the tests that compare a SQLite
store's two forms of one read (inactive memories left out by id, or by joining their rows)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime

from memoryd.memory.model import Memory, Status
from memoryd.storage.sqlite import SqliteStore


def insert_then_retire(
    store: SqliteStore,
    memories: Sequence[Memory],
    chooser: random.Random,
    at: datetime,
    *,
    retired: int = 300,
    purged: int = 30,
) -> None:
    """Insert ``memories``, then move ``retired`` of them (chosen by ``chooser``) to a status
    that is not active and purge ``purged``, in one transaction."""
    memory_ids = [memory.id for memory in memories]
    with store.transaction():
        for memory in memories:
            store.memories.insert(memory, None)
        for memory_id in chooser.sample(memory_ids, retired):
            status = chooser.choice([Status.PENDING, Status.REJECTED, Status.ARCHIVED])
            store.memories.set_status(memory_id, status)
        for memory_id in chooser.sample(memory_ids, purged):
            store.memories.purge(memory_id, at)
