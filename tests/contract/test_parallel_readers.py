"""Readers run beside the writer: a read never waits for an open write transaction and never
sees half of it; a snapshot keeps one committed state while others write; a writer reads its
own uncommitted rows."""

from __future__ import annotations

import threading
from typing import Any

from memoryd.service import MemoryService

PATIENCE = 20.0


def _ids(service: MemoryService) -> set[str]:
    return {memory.id for memory in service.list_memories()}


def test_a_read_runs_beside_an_open_write_and_never_sees_half_of_it(
    service: MemoryService,
) -> None:
    store = service.store
    before = service.remember("The owner's bike is a blue Brompton").memory
    assert before is not None
    in_write, release = threading.Event(), threading.Event()
    written: dict[str, str] = {}

    def write() -> None:
        with store.transaction():
            store.set_meta("half", "written")
            added = service.remember("The owner's second bike is a red Moulton").memory
            assert added is not None
            written["id"] = added.id
            in_write.set()
            release.wait(PATIENCE)

    writer = threading.Thread(target=write)
    writer.start()
    assert in_write.wait(PATIENCE)
    seen: dict[str, Any] = {}

    def read() -> None:
        seen["meta"] = store.get_meta("half")
        seen["ids"] = _ids(service)
        seen["recall"] = service.recall("Which bike does the owner ride?").text

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(PATIENCE / 2)
    finished_while_writing = not reader.is_alive()
    release.set()
    writer.join(PATIENCE)
    reader.join(PATIENCE)

    assert finished_while_writing, "a read waited for another thread's write transaction"
    assert seen["meta"] is None
    assert seen["ids"] == {before.id}
    assert "Moulton" not in seen["recall"]
    assert store.get_meta("half") == "written"
    assert _ids(service) == {before.id, written["id"]}


def test_a_snapshot_keeps_one_state_while_another_thread_commits(
    service: MemoryService,
) -> None:
    store = service.store
    service.remember("The owner drinks oat milk")
    committed = threading.Event()

    def write() -> None:
        service.remember("The owner plays the cello on Sundays")
        committed.set()

    with store.snapshot():
        first = _ids(service)
        writer = threading.Thread(target=write)
        writer.start()
        assert committed.wait(PATIENCE), "a write waited for another thread's snapshot"
        assert _ids(service) == first
    writer.join(PATIENCE)
    assert len(_ids(service)) == len(first) + 1


def test_a_writer_reads_its_own_uncommitted_rows(service: MemoryService) -> None:
    store = service.store
    with store.transaction():
        store.set_meta("pending-value", "mine")
        added = service.remember("The owner's locker code changed to 4411").memory
        assert added is not None
        assert store.get_meta("pending-value") == "mine"
        assert store.memories.get(added.id) is not None


def test_many_readers_during_writes_see_only_whole_writes(service: MemoryService) -> None:
    service.remember("The owner keeps bees in the garden")
    stop = threading.Event()
    problems: list[str] = []

    def read() -> None:
        last = 0
        try:
            while not stop.is_set():
                memories = service.list_memories()
                if len(memories) < last:
                    problems.append(f"the count went back from {last} to {len(memories)}")
                last = len(memories)
                for memory in memories:
                    # Every listed memory is whole: its row and its vector were one commit.
                    if not service.store.memories.vectors([memory.id]):
                        problems.append(f"{memory.id} listed without its vector")
                service.recall("What does the owner keep in the garden?")
        except Exception as error:  # a reader's failure is the finding
            problems.append(repr(error))

    readers = [threading.Thread(target=read) for _ in range(6)]
    for thread in readers:
        thread.start()
    added = [
        service.remember(f"The owner's hive number {n} gave {n + 3} kilograms of honey")
        for n in range(12)
    ]
    stop.set()
    for thread in readers:
        thread.join(PATIENCE)
    assert problems == []
    assert _ids(service) >= {result.memory.id for result in added if result.memory}
