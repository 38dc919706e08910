"""A synced folder's pass killed with SIGKILL at random points, twice (during the first sync,
then during a pass over edits, deletions, renames and new files), on SQLite and PostgreSQL: the
next pass loses nothing and doubles nothing — one document per readable file holding exactly
that file's bytes, every chunk once with its vector, every file's row current."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.jobs.model import JobStatus
from memoryd.kb.sync.model import FileState
from memoryd.wiring import open_service
from tests.crash_child import CrashEmbedder, markdown_document

ROOT = Path(__file__).resolve().parents[2]
NOTES = 40


def _kill_after(store: str, folder: Path, writes: int, log: Path) -> int:
    """Run the victim until it printed ``writes`` WROTE lines (or its pass ended), then SIGKILL
    it; how many files it reported written."""
    with log.open("w") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.sync_crash_child", store, str(folder)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 240
        try:
            while time.monotonic() < deadline:
                lines = log.read_text().splitlines()
                wrote = sum(line.startswith("WROTE") for line in lines)
                if wrote >= writes or any(line.startswith("DONE") for line in lines):
                    break
                assert child.poll() is None, log.read_text()
                time.sleep(0.01)
            else:  # pragma: no cover - a stuck victim
                raise AssertionError("the victim never reached its kill point:\n" + log.read_text())
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(30)
    return sum(line.startswith("WROTE") for line in log.read_text().splitlines())


def _write_note(path: Path, rng: random.Random, title: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(markdown_document(rng, title, rng.randint(1, 4)))


@pytest.mark.parametrize("seed", [1])
def test_a_pass_killed_twice_loses_nothing_and_doubles_nothing(
    location: str, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    folder = tmp_path / "notes"
    for number in range(NOTES):
        _write_note(folder / f"topic{number % 4}" / f"note{number}.md", rng, f"Note {number}")

    first = _kill_after(location, folder, rng.randint(5, NOTES - 10), tmp_path / "first.log")
    assert 0 < first < NOTES

    # Edits, deletions, renames and new files, then a second pass killed midway.
    paths = sorted(folder.rglob("*.md"))
    looked = open_service(resolve_settings(location), embedder=CrashEmbedder())
    try:
        before = {p: looked.store.kb.document_by_uri(str(p)) for p in paths[10:14]}
    finally:
        looked.close()
    for path in paths[:6]:
        _write_note(path, rng, f"Edited {path.stem}")
    for path in paths[6:10]:
        path.unlink()
    for path in paths[10:14]:
        path.rename(path.with_name("renamed-" + path.name))
    for number in range(5):
        _write_note(folder / "inbox" / f"new{number}.md", rng, f"New {number}")
    second = _kill_after(location, folder, rng.randint(2, 10), tmp_path / "second.log")
    assert second >= 1

    service = open_service(resolve_settings(location), embedder=CrashEmbedder())
    try:
        [source] = service.sync.sources()
        report = service.sync.run_pass(source, wait=True)
        assert report.error is None and report.failed == 0, report
        service.kb.run_vector_jobs()

        files = sorted(folder.rglob("*.md"))
        documents = service.kb.list_documents()
        assert sorted(d.source_uri for d in documents) == sorted(str(p) for p in files)
        by_uri = {d.source_uri: d for d in documents}
        total = 0
        for path in files:
            document = by_uri[str(path)]
            assert document.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()
            chunks = service.store.kb.chunks(document.id)
            assert [c.position for c in chunks] == list(range(document.chunk_count))
            assert document.embedded_chunks == document.chunk_count
            total += document.chunk_count
        assert service.store.kb.chunk_count() == total

        rows = service.store.sync.files(source.id)
        relative = sorted(p.relative_to(folder).as_posix() for p in files)
        assert sorted(r.path for r in rows) == relative
        assert {r.state for r in rows} == {FileState.CURRENT}
        assert all(by_uri[str(folder / r.path)].id == r.document_id for r in rows)
        # A renamed note that had its document keeps it (the rename runs before any read).
        for old, had in before.items():
            if had is not None:
                renamed = by_uri[str(old.with_name("renamed-" + old.name))]
                assert renamed.id == had.id
        # Every vector job ended.
        assert not [j for j in service.store.jobs.recent(500)
                    if j.kind == "kb_embed" and j.status is JobStatus.QUEUED]  # fmt: skip
        assert service.store.integrity_errors() == []
    finally:
        service.close()
