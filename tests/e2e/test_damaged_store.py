"""A damaged SQLite store (a corrupted page, a write-ahead log cut short): ``serve`` and every
command refuse it with one line naming the file, the check's finding and ``memoryd restore``;
``doctor`` says the same; nothing they do changes a byte of it; ``restore --force`` puts the
backup back and keeps the damaged file beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

import memoryd
from memoryd.http.server import free_port
from memoryd.providers.embedder import LocalMiniLM

from .conftest import Cli

FACTS = [
    f"Owner's {thing} is kept in the {place}"
    for thing in ("passport", "bike pump", "spare key", "tax folder", "drill", "tent")
    for place in ("garage", "attic", "hall cupboard", "blue box", "car boot")
]


def _files(db: Path) -> dict[str, bytes]:
    """The store's file and its write-ahead log, byte for byte (an empty log as absent)."""
    found = {"db": db.read_bytes()}
    wal = Path(f"{db}-wal")
    if wal.exists() and wal.stat().st_size:
        found["wal"] = wal.read_bytes()
    return found


def _assert_refused_everywhere(cli: Cli, db: Path, finding: str) -> None:
    """serve, a read, a write and doctor each refuse the store with the same clear words."""
    before = _files(db)
    serve = cli.run("serve", "--port", str(free_port()))
    assert serve.returncode == 1, (serve.stdout, serve.stderr)
    lines = [serve.stderr.strip().splitlines()[-1]]
    lines.append(cli.fails("list"))
    lines.append(cli.fails("recall", "where is the tent"))
    lines.append(cli.fails("remember", "Owner keeps the ladder in the shed"))
    doctor = cli.run("doctor")
    assert doctor.returncode == 1
    store_line = next(line for line in doctor.stdout.splitlines() if " store: " in line)
    assert store_line.startswith("FAIL")
    lines.append(store_line)
    for line in lines:
        assert f"store {db} is damaged" in line, line
        assert finding in line, line
        assert "`memoryd restore BACKUP --force`" in line, line
    for output in (serve.stdout, serve.stderr, doctor.stdout, doctor.stderr):
        assert "Traceback" not in output
    assert _files(db) == before, "refusing the store changed its files"


def _restore_keeps_the_damaged_file(cli: Cli, db: Path, backup: Path) -> None:
    damaged = _files(db)
    assert "--force" in cli.fails("restore", str(backup))
    assert _files(db) == damaged
    restored = cli.json("restore", str(backup), "--force")
    kept = Path(restored["kept_damaged"])
    assert kept.parent == db.parent and kept.name.startswith(f"{db.name}.damaged-")
    assert _files(kept) == damaged, "the damaged store was not kept as it was"
    listed = cli.json("list", "--limit", "100")
    assert restored["memories"] == len(listed) >= 20
    assert "integrity ok" in cli.ok("doctor")


def test_a_corrupted_page_is_refused_by_every_command_and_left_as_it_is(
    cli: Cli, db_path: Path, tmp_path: Path, embedder: LocalMiniLM
) -> None:
    service = memoryd.open(db_path, embedder=embedder)
    for fact in FACTS:
        service.remember(fact)
    service.close()
    backup = tmp_path / "good.db"
    cli.ok("backup", str(backup))

    data = bytearray(db_path.read_bytes())
    page = 4096
    middle = (len(data) // page // 2) * page
    data[middle : middle + page] = bytes(range(256)) * (page // 256)
    db_path.write_bytes(bytes(data))

    _assert_refused_everywhere(cli, db_path, "quick_check: ")
    _restore_keeps_the_damaged_file(cli, db_path, backup)


def test_a_cut_short_write_ahead_log_is_refused_and_left_as_it_is(
    cli: Cli, db_path: Path, tmp_path: Path, embedder: LocalMiniLM
) -> None:
    source = tmp_path / "source.db"
    service = memoryd.open(source, embedder=embedder)
    try:
        for fact in FACTS:
            service.remember(fact)
        backup = tmp_path / "good.db"
        service.admin.backup_to(backup)
        # What a crash mid-copy (or a full disk) leaves: the file and a log holding the last
        # transactions, the log cut short in the middle of a frame.
        shutil.copyfile(source, db_path)
        log = Path(f"{source}-wal").read_bytes()
        assert len(log) > 4096, "the writes were checkpointed; the log holds nothing to cut"
    finally:
        service.close()
    Path(f"{db_path}-wal").write_bytes(log[: len(log) - 1000])

    _assert_refused_everywhere(cli, db_path, "write-ahead log")
    _restore_keeps_the_damaged_file(cli, db_path, backup)
