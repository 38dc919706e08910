"""Damage in a store too big to check at open: the command that meets it says what is wrong
and how to restore, instead of failing with SQLite's words (or a stack trace); and the
write-ahead log check tells a cut-short log from a whole one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import memoryd
from memoryd.cli import main
from memoryd.providers.embedder import LocalMiniLM
from memoryd.storage import sqlite as sqlite_store
from memoryd.storage.sqlite import wal_damage


def test_damage_met_mid_command_is_reported_with_the_finding(
    tmp_path: Path, embedder: LocalMiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "big.db"
    service = memoryd.open(db, embedder=embedder)
    for number in range(60):
        service.remember(f"Owner's storage crate {number} holds {'cables ' * 40}")
    service.close()
    with sqlite3.connect(db) as probe:
        leaves = [row[0] for row in probe.execute(
            "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf'")]  # fmt: skip
    assert leaves, "the memories table has no leaf page to damage"
    data = bytearray(db.read_bytes())
    start = (leaves[len(leaves) // 2] - 1) * 4096
    data[start : start + 4096] = b"\x0d" + b"\xee" * 4095
    db.write_bytes(bytes(data))
    before = db.read_bytes()
    # As if the store were bigger than what open checks (the e2e tests cover small stores).
    monkeypatch.setattr(sqlite_store, "QUICK_CHECK_BYTES", 0)
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))

    result = CliRunner().invoke(main, ["--db", str(db), "list", "--limit", "100"])

    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"error: store {db} is damaged: quick_check: " in result.output
    assert "`memoryd restore BACKUP --force`" in result.output
    assert db.read_bytes() == before


def test_the_log_check_tells_a_cut_short_log_from_a_whole_one(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert wal_damage(db) is None  # no log at all
    header = bytes.fromhex("377f0682") + (3007000).to_bytes(4, "big") + (4096).to_bytes(4, "big")
    log = Path(f"{db}-wal")
    log.write_bytes(header.ljust(32, b"\0") + b"\0" * (24 + 4096) * 3)
    assert wal_damage(db) is None
    log.write_bytes(log.read_bytes()[:-100])
    assert "truncated" in (wal_damage(db) or "")
    log.write_bytes(b"\0" * 32 + b"\0" * (24 + 4096))
    assert "not an SQLite write-ahead log" in (wal_damage(db) or "")
    log.write_bytes(b"")
    assert wal_damage(db) is None


def test_a_torn_frame_past_the_committed_end_is_not_damage_but_cut_commits_are(
    tmp_path: Path,
) -> None:
    """A process killed while appending leaves a partial frame that SQLite ignores (the
    wal-index says every committed frame is whole); a log cut short loses committed frames."""
    live = tmp_path / "live.db"
    writer = sqlite3.connect(live, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (x TEXT)")
    for n in range(5):
        writer.execute("INSERT INTO t VALUES (?)", (f"row {n} " * 200,))
    # A copy taken while the writer is open, as a SIGKILL leaves the three files.
    files = {suffix: Path(f"{live}{suffix}").read_bytes() for suffix in ("", "-wal", "-shm")}
    writer.close()

    def store_with(log: bytes) -> Path:
        db = tmp_path / f"copy{len(log)}.db"
        db.write_bytes(files[""])
        Path(f"{db}-shm").write_bytes(files["-shm"])
        Path(f"{db}-wal").write_bytes(log)
        return db

    log = files["-wal"]
    torn_header = log[32 : 32 + 24]  # any frame header: the page after it never came
    assert wal_damage(store_with(log)) is None
    assert wal_damage(store_with(log + torn_header)) is None
    assert wal_damage(store_with(log + torn_header + b"\0" * 1000)) is None
    assert "truncated" in (wal_damage(store_with(log[:-1000])) or "")
    copied = store_with(log + torn_header)
    reader = sqlite3.connect(copied, isolation_level=None)
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (5,)
    reader.close()
