"""The trust holes found by trying memoryd as an attacker and as a new user would, each tried
again the same way: against the real ``memoryd`` executable and, where the hole is a server
behaviour, a real ``memoryd serve`` on loopback. SECURITY.md names this module under each
promise it holds memoryd to.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from tests.e2e.conftest import Cli
from tests.e2e.server import MEMORYD, login_env

TOKEN_LINE = "Bearer"


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_with_umask(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memoryd ARGS`` under the permissive umask many systems ship (022)."""
    return subprocess.run(
        [str(MEMORYD), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
        preexec_fn=lambda: os.umask(0o022),
    )


def home_env(root: Path) -> dict[str, str]:
    """A login shell with memoryd's home (and so its default store) under ``root``."""
    (root / "login").mkdir(parents=True, exist_ok=True)
    return {**login_env(root / "login"), "MEMORYD_HOME": str(root / "memoryd-home")}


# ----------------------------------------------------------------------- files on disk


def test_every_file_memoryd_writes_is_the_owners_alone_whatever_the_umask(tmp_path: Path) -> None:
    env = home_env(tmp_path)
    home = Path(env["MEMORYD_HOME"])
    assert run_with_umask(env, tmp_path, "init").returncode == 0
    assert run_with_umask(env, tmp_path, "remember", "my bank PIN hint is the dog").returncode == 0
    backup = tmp_path / "copy.db"
    export = tmp_path / "all.jsonl"
    assert run_with_umask(env, tmp_path, "backup", str(backup)).returncode == 0
    assert run_with_umask(env, tmp_path, "export", "--out", str(export)).returncode == 0
    assert run_with_umask(env, tmp_path, "config", "set", "llm.model", "m").returncode == 0

    assert mode_of(home) == 0o700
    written = [home / "memoryd.db", home / "token", home / "memoryd.toml", backup, export]
    written += [p for p in (home / "memoryd.db-wal", home / "memoryd.db-shm") if p.exists()]
    assert {str(p): oct(mode_of(p)) for p in written} == {str(p): "0o600" for p in written}


def test_a_loose_store_is_tightened_on_open_said_once_and_doctor_reports_it(
    tmp_path: Path,
) -> None:
    env = home_env(tmp_path)
    home = Path(env["MEMORYD_HOME"])
    cli = Cli(env=env, cwd=tmp_path)
    cli.ok("init")
    cli.ok("remember", "the spare key is under the blue pot")
    for path in [home / "memoryd.db", *home.glob("memoryd.db-*")]:
        path.chmod(0o644)
    home.chmod(0o755)

    first = cli.run("list")
    second = cli.run("list")

    assert first.returncode == 0 and "made owner-only" in first.stderr
    assert str(home / "memoryd.db") in first.stderr
    assert "made owner-only" not in second.stderr
    assert mode_of(home) == 0o700 and mode_of(home / "memoryd.db") == 0o600

    (home / "memoryd.db").chmod(0o644)
    report = json.loads(cli.run("doctor", "--json").stdout)
    files = [c for c in report if c["name"] == "files"]
    assert files and files[0]["status"] == "warn" and "memoryd.db (mode 644)" in files[0]["detail"]
    assert mode_of(home / "memoryd.db") == 0o600


# ------------------------------------------------------------------ symlinks in a folder


def test_a_folder_ingest_follows_no_link_out_and_never_reads_memoryds_home(tmp_path: Path) -> None:
    env = home_env(tmp_path)
    home = Path(env["MEMORYD_HOME"])
    cli = Cli(env=env, cwd=tmp_path)
    cli.ok("init")
    token = (home / "token").read_text().strip()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("the neighbour's diary: nothing to do with this folder\n")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plan.md").write_text("# Garden plan\n\nPlant the tulips in October.\n")
    (folder / "token.txt").symlink_to(home / "token")
    (folder / "diary.txt").symlink_to(outside)
    (folder / "inside.md").symlink_to(folder / "plan.md")

    result = cli.run("kb", "ingest", str(folder), "--json")
    results = json.loads(result.stdout)
    by_name = {Path(r["source"]).name: r for r in results}

    assert result.returncode == 1  # some files were refused
    # A link inside the folder is fine (the same file: read once, then skipped as unchanged).
    assert len(results) == 4
    assert sorted(r["outcome"] for r in results if Path(r["source"]).name == "plan.md") == [
        "ok",
        "skipped",
    ]
    assert by_name["token.txt"]["outcome"] == "failed"
    assert "memoryd's own home" in by_name["token.txt"]["reason"]
    assert by_name["diary.txt"]["outcome"] == "failed"
    assert "outside the folder" in by_name["diary.txt"]["reason"]
    listed = cli.ok("kb", "list")
    assert "token" not in listed and "elsewhere" not in listed
    assert token not in cli.ok("kb", "search", "token")
    # Not by its own path either, nor by naming the home itself.
    assert "memoryd's own home" in cli.run("kb", "ingest", str(home / "token"), "--json").stdout
    assert "memoryd's own home" in cli.run("kb", "ingest", str(home), "--json").stdout
