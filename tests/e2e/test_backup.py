"""``memoryd backup`` while the service runs and writes, and ``memoryd restore``: a consistent
copy with every write acknowledged before it began, on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

import memoryd
from memoryd.providers.embedder import LocalMiniLM
from tests.pg import TestPostgres

from .conftest import Cli, running_server

TOKEN = "backup-test-token"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_online_backup_holds_every_acknowledged_write_and_restores(
    cli: Cli, tmp_path: Path, postgres_server: TestPostgres, embedder: LocalMiniLM, backend: str
) -> None:
    url = postgres_server.create_database() if backend == "postgres" else None
    db = url or str(tmp_path / "live.db")
    env = {**cli.env, "MEMORYD_DB": db, "MEMORYD_TOKEN": TOKEN}
    assert cli.run("init", env=env).returncode == 0
    acknowledged: list[tuple[float, str]] = []
    stop = threading.Event()

    def writer(base: str) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            number = 0
            while not stop.is_set() and number < 2000:
                answer = http.post("/v1/memories", json={
                    "content": f"Owner noted item {number} of the inventory walk",
                    "kind": "event"})  # fmt: skip
                assert answer.status_code == 200, answer.text
                acknowledged.append((time.monotonic(), answer.json()["memory"]["id"]))
                number += 1

    with running_server(env, cli.cwd) as base:
        thread = threading.Thread(target=writer, args=(base,))
        try:
            thread.start()
            # The backup starts once the writer is writing (a busy machine takes a while).
            deadline = time.monotonic() + 60
            while len({m for _, m in acknowledged}) < 5 and thread.is_alive():
                assert time.monotonic() < deadline, "the writer did not get going"
                time.sleep(0.05)
            out = tmp_path / ("backup.db" if backend == "sqlite" else "backup.jsonl")
            started = time.monotonic()
            made = cli.json("backup", str(out), env=env)
            time.sleep(1.0)
        finally:
            stop.set()
            thread.join()
    before = {memory_id for at, memory_id in acknowledged if at < started}
    assert len(before) >= 5, "the writer was not writing while the backup ran"
    assert made["kind"] == ("sqlite" if backend == "sqlite" else "export")

    target = tmp_path / "restored.db"
    restored = cli.json("--db", str(target), "restore", str(out), env=env)
    assert restored["memories"] == made["memories"]
    copy = memoryd.open(target, embedder=embedder)
    try:
        ids = {m.id for m in copy.list_memories()}
        assert before <= ids, "an acknowledged write is missing from the backup"
        assert len(ids) == made["memories"]
        assert copy.store.integrity_errors() == []
        assert copy.search_memory("inventory walk item").items
    finally:
        copy.close()
    if url:
        postgres_server.drop_database(url)


def test_restore_refuses_to_overwrite_data_or_a_damaged_backup(
    cli: Cli, tmp_path: Path, embedder: LocalMiniLM
) -> None:
    live = tmp_path / "live.db"
    service = memoryd.open(live, embedder=embedder)
    service.remember("Owner keeps the spare key under the blue pot")
    service.close()
    backup = tmp_path / "b.db"
    cli.ok("--db", str(live), "backup", str(backup))
    assert "exists" in cli.fails("--db", str(live), "backup", str(backup))

    other = tmp_path / "other.db"
    service = memoryd.open(other, embedder=embedder)
    service.remember("Owner's bike is green")
    service.close()
    assert "--force" in cli.fails("--db", str(other), "restore", str(backup))
    cli.ok("--db", str(other), "restore", str(backup), "--force")
    service = memoryd.open(other, embedder=embedder)
    assert [m.content for m in service.list_memories()] == [
        "Owner keeps the spare key under the blue pot"
    ]
    service.close()

    damaged = tmp_path / "damaged.db"
    data = bytearray(backup.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\xff" * 4096
    damaged.write_bytes(bytes(data))
    error = cli.fails("--db", str(tmp_path / "fresh.db"), "restore", str(damaged))
    assert "damaged" in error or "malformed" in error or "not a memoryd store" in error
    assert not (tmp_path / "fresh.db").exists()
