"""The disk fills (issue 20): a real ``memoryd serve`` whose SQLite store sits on a small
filesystem of its own (a size-limited tmpfs this test mounts and removes). While it is full,
writes are refused with 507 and one message saying what to do, reads answer, a large document
leaves no half of itself, the CLI and the model's tools say the same, and the file stays sound;
once space is freed the next write succeeds without a restart, and every write acknowledged
before the fault is still there."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
import pytest
import sqlean as sqlite3

import memoryd
from memoryd.errors import StoreFullError
from memoryd.providers.embedder import LocalMiniLM
from memoryd.storage.full_disk import WRITE_RESERVE_BYTES
from memoryd.storage.sqlite_connection import sqlite_vec_extension

from .conftest import Cli
from .server import serving, store_env

DISK_SIZE = "16m"
# Enough to start a write; a large document's text alone (1.5 MB) outgrows it, so its one
# transaction fails part-way through.
NEARLY_FULL_BYTES = WRITE_RESERVE_BYTES + (64 << 10)
# How soon the first write after space is freed must succeed (measured: under 0.1 s).
RECOVERY_SECONDS = 5.0
FULL = re.compile(
    r"the disk holding (?P<path>\S+) is full \((?P<free>\d+) bytes free\): free space, then "
    r"retry; nothing was changed"
)
FACTS = [
    f"Owner's {thing} is kept in the {place}"
    for thing in ("passport", "bike pump", "spare key", "tax folder")
    for place in ("garage", "attic", "hall cupboard")
]


@contextmanager
def small_disk(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``mount_point`` for the block, unmounted afterwards."""
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, (
        "this test mounts a small tmpfs of its own, which needs root (CI runs the suite as "
        f"root); mount said: {mounted.stderr.strip()}"
    )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


def fill(disk: Path, name: str, *, leave: int = 0) -> Path:
    """A file taking all the disk's free space but ``leave`` bytes."""
    filler = disk / name
    with filler.open("wb", buffering=0) as handle:
        free = shutil.disk_usage(disk).free
        if free > leave:
            os.posix_fallocate(handle.fileno(), 0, free - leave)
        if leave == 0:
            try:  # whatever allocation left over, page by page
                while True:
                    handle.write(b"\0" * 4096)
            except OSError as error:
                assert error.errno == errno.ENOSPC
    return filler


def document(size: int) -> str:
    """A Markdown handbook of about ``size`` characters, every paragraph different."""
    parts, total, section = [], 0, 0
    while total < size:
        section += 1
        part = f"## Section {section}\n\n" + " ".join(
            f"Clause {section}.{n} sets the budget of project {section * 31 + n} at "
            f"{(section * 7919 + n * 104729) % 99991} euros for the year {1990 + n % 30}."
            for n in range(12)
        )
        parts.append(part)
        total += len(part) + 2
    return "# Operations handbook\n\n" + "\n\n".join(parts)


def read_only(db: Path) -> sqlite3.Connection:
    """A read-only connection to the store that cannot change it (no checkpoint on close)."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    connection.enable_load_extension(True)
    connection.load_extension(sqlite_vec_extension())
    return connection


def kb_rows(db: Path) -> dict[str, int]:
    """How many rows the knowledge base holds, table by table, and the file's integrity."""
    with closing(read_only(db)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("documents", "chunks", "chunk_fts", "chunk_vectors", "jobs")
        }


def test_a_full_disk_refuses_writes_keeps_reads_and_recovers_without_a_restart(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    with small_disk(tmp_path / "disk", DISK_SIZE) as disk:
        db = disk / "memoryd.db"
        spool = disk / "spool"  # where the server spools uploads over 1 MB
        spool.mkdir()
        env = {**store_env(tmp_path / "user"), "MEMORYD_DB": str(db), "TMPDIR": str(spool)}
        cli = Cli(env=env, cwd=tmp_path)
        cli.ok("init")
        token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
        with (
            serving(env, tmp_path) as server,
            httpx.Client(
                base_url=server.base_url,
                headers={"Authorization": f"Bearer {token}"},
                timeout=60.0,
            ) as http,
        ):

            def remember(content: str) -> httpx.Response:
                return http.post("/v1/memories", json={"content": content})

            acknowledged = []
            for fact in FACTS[:6]:
                answer = remember(fact)
                assert answer.status_code == 200, answer.text
                acknowledged.append(answer.json()["memory"]["id"])
            empty_kb = kb_rows(db)
            handbook = document(1_500_000)
            handbook_file = tmp_path / "handbook.md"  # on the machine's disk, not the small one
            handbook_file.write_text(handbook, encoding="utf-8")
            # Python settles on its temporary directory at its first use (the spool's, while
            # its disk has room): an upload over 1 MB, refused for its form after spooling.
            answer = http.post(
                "/v1/kb/upload",
                files={"file": ("handbook.md", handbook.encode() * 2, "text/markdown")},
                data={"source_type": "scribbles"},
            )
            assert answer.status_code == 400, answer.text

            # Nearly full: a large document's one transaction starts, runs out part-way and
            # is undone whole.
            fill(disk, "filler-1", leave=NEARLY_FULL_BYTES)
            answer = http.post("/v1/kb/ingest", json={"sources": [str(handbook_file)]})
            assert answer.status_code == 507, answer.text
            refused = FULL.fullmatch(answer.json()["error"])
            assert refused is not None, answer.text
            assert refused["path"] == str(db)
            assert kb_rows(db) == empty_kb, "the refused document left rows behind"
            assert http.get("/v1/kb/documents").json() == []

            # Full: every write is refused before it starts, the same way each time.
            fill(disk, "filler-2")
            for number in range(3):
                answer = remember(f"Meeting note {number}: the roof needs new tiles")
                assert answer.status_code == 507, answer.text
                refused = FULL.fullmatch(answer.json()["error"])
                assert refused is not None and int(refused["free"]) < WRITE_RESERVE_BYTES

            # An upload too big to hold in memory finds the spool's disk full.
            answer = http.post(
                "/v1/kb/upload",
                files={"file": ("handbook.md", handbook.encode() * 2, "text/markdown")},
            )
            assert answer.status_code == 507, answer.text
            refused = FULL.fullmatch(answer.json()["error"])
            assert refused is not None and refused["path"] == str(spool), answer.text

            # Reads answer (their retrieval stamps are lost quietly), the file is sound.
            for _ in range(3):
                recalled = http.post("/v1/recall", json={"message": "where is the passport?"})
                assert recalled.status_code == 200, recalled.text
                assert "passport" in recalled.json()["text"]
            listed = http.get("/v1/memories", params={"limit": 100})
            assert listed.status_code == 200
            assert {m["id"] for m in listed.json()} == set(acknowledged)
            kb_search = http.post("/v1/kb/search", json={"query": "budget of project"})
            assert kb_search.status_code == 200, kb_search.text
            assert kb_rows(db) == empty_kb

            # The CLI and the model's tools say the same, with no stack trace.
            line = cli.fails("remember", "Owner's drill is kept in the shed")
            assert FULL.fullmatch(line.removeprefix("error: ")), line
            service = memoryd.open(db, embedder=embedder)
            try:
                with pytest.raises(StoreFullError) as backup:
                    service.admin.backup_to(disk / "backup.db")
                assert FULL.fullmatch(str(backup.value)), backup.value
                assert backup.value.path == disk / "backup.db"
                assert [p.name for p in disk.iterdir() if "backup" in p.name] == []
                tool = service.call_tool("remember", {"content": "The tent is in the loft"})
                assert FULL.fullmatch(tool["error"]), tool
                found = json.dumps(service.call_tool("search_memory", {"query": "the passport"}))
                assert "passport" in found and "loft" not in found, found
            finally:
                service.close()

            # Space freed: the next write succeeds at once, the same server answering.
            for filler in disk.glob("filler-*"):
                filler.unlink()
            freed = time.monotonic()
            answer = remember("Owner's tent is kept in the loft")
            recovery = time.monotonic() - freed
            assert answer.status_code == 200, answer.text
            assert recovery < RECOVERY_SECONDS
            acknowledged.append(answer.json()["memory"]["id"])
            print(f"the first write after space was freed answered in {recovery:.3f} s")
            for memory_id in acknowledged:
                assert http.get(f"/v1/memories/{memory_id}").status_code == 200, memory_id
            recalled = http.post("/v1/recall", json={"message": "where is the tent?"})
            assert "loft" in recalled.json()["text"]

        log = server.output()
        assert "Traceback" not in log, log
        # Said once for the whole spell, however many reads could not stamp what they used.
        assert log.count("writing retrieval stamps failed") == 1, log
        with closing(read_only(db)) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            stored = {row[0] for row in connection.execute("SELECT id FROM memories")}
        assert set(acknowledged) <= stored
