"""``memoryd kb ingest --wait/--no-wait``, its progress lines, and ``kb list``'s "embedding
n/m" (issue 16), run as the real executable: a document is keyword-searchable as soon as its
chunks are written, and its vectors are filled here (the default, ``--wait``) or by the worker.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memoryd.clock import utc_now
from memoryd.kb.model import ChunkKey
from memoryd.kb.vector_fill import EMBED_RETRY
from tests.kb_corpus import filler_paragraph

from .conftest import Cli
from .server import MEMORYD

RARE = "quillomantic"


def _long_notes(path: Path, sections: int = 3) -> Path:
    body = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(filler_paragraph(i * 10 + j) for j in range(6))
        for i in range(sections)
    )
    path.write_text(f"# Field Notes\n\n{body}\n\nThe {RARE} survey ends here.\n")
    return path


def test_no_wait_leaves_vectors_to_the_worker_and_list_shows_the_progress(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok("init")
    notes = _long_notes(tmp_path / "notes.md")
    out = cli.ok("kb", "ingest", str(notes), "--no-wait")
    assert "keyword-searchable now" in out and "memoryd worker" in out

    listed = cli.json("kb", "list")
    total = listed[0]["chunks"]
    assert total >= 3
    assert listed[0]["embedded_chunks"] == 0
    assert listed[0]["embedding"] == f"embedding 0/{total}"
    assert f"embedding 0/{total}" in cli.ok("kb", "list")
    # Keyword-searchable before any vector landed.
    found = cli.json("kb", "search", f"{RARE} survey", "--explain")["results"]
    assert found and RARE in found[0]["content"]

    worked = cli.ok("worker", "--once")
    assert f"1 jobs run ({total} document vectors embedded)" in worked
    listed = cli.json("kb", "list")
    assert listed[0]["embedded_chunks"] == total and listed[0]["embedding"] is None
    assert "embedding" not in cli.ok("kb", "list")


def test_wait_embeds_here_with_progress_by_pages_and_chunks(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    notes = _long_notes(tmp_path / "notes.md", sections=4)
    cli.ok("kb", "ingest", str(notes), "--no-wait")
    total = cli.json("kb", "list")[0]["chunks"]

    # The same file again with --wait: unchanged, so skipped, but its vectors are embedded.
    again = cli.run("kb", "ingest", str(notes), "--wait", "--progress")
    assert again.returncode == 0, again.stderr
    assert "1 skipped" in again.stdout
    lines = again.stderr.splitlines()
    assert any(line.startswith(f"embedding notes.md {total}/{total} chunks") for line in lines), (
        again.stderr
    )
    assert any("chunks/s" in line for line in lines), again.stderr
    assert cli.json("kb", "list")[0]["embedding"] is None

    other = _long_notes(tmp_path / "other.md", sections=2)
    fresh = cli.run("kb", "ingest", str(other), "--progress")
    assert fresh.returncode == 0, fresh.stderr
    assert "other.md:" in fresh.stderr and "chunks written in" in fresh.stderr, fresh.stderr
    assert "keyword-searchable" in fresh.stderr
    assert "embedding other.md" in fresh.stderr
    # Without --progress and off a terminal, stderr stays quiet.
    quiet = cli.run("kb", "ingest", str(_long_notes(tmp_path / "third.md", 1)))
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert all(d["embedding"] is None for d in cli.json("kb", "list"))


def test_sigkill_mid_fill_then_a_rerun_finishes_with_nothing_lost_or_doubled(
    cli: Cli, tmp_path: Path, seeded: Callable[[], Any]
) -> None:
    cli.ok("init")
    big = _long_notes(tmp_path / "big.md", sections=70)
    victim = subprocess.Popen(
        [str(MEMORYD), "kb", "ingest", str(big), "--progress"],
        env=cli.env,
        cwd=cli.cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert victim.stderr is not None
        for line in victim.stderr:
            if line.startswith("embedding big.md "):
                done, total = (int(n) for n in line.split()[2].split("/"))
                if done < total:
                    break  # one batch committed, more to come: kill it now
        else:
            pytest.fail("the ingest ended before its vectors were half filled")
        victim.send_signal(signal.SIGKILL)
    finally:
        victim.kill()
        victim.wait()

    with seeded() as service:
        (document,) = service.kb.list_documents()
        assert document.chunk_count == total
        assert len(service.store.kb.chunks(document.id)) == total
        assert done <= document.embedded_chunks < total  # committed batches survived
        assert document.embedding_label == f"embedding {document.embedded_chunks}/{total}"
        hits = service.kb.search(f"{RARE} survey").hits  # keyword-searchable all along
        assert hits and hits[0].document.id == document.id

    rerun = cli.json("kb", "ingest", str(big))
    assert rerun[0]["outcome"] == "skipped"
    assert rerun[0]["document"]["embedded_chunks"] == total

    with seeded() as service:
        kb = service.store.kb
        assert kb.vector_counts([document.id]) == {document.id: total}
        chunks = kb.chunks(document.id)
        vectors = service.kb.embedder.embed([c.embedded_text for c in chunks])
        for chunk, vector in zip(chunks, vectors, strict=True):
            nearest = kb.nearest_chunks(vector, 1)
            assert nearest[0][0] == ChunkKey(document.id, chunk.position)
            assert nearest[0][1] > 0.999  # the chunk's own vector, not a neighbour's
        # The dead process's job is re-claimed after its lease and finds nothing left.
        later = utc_now() + timedelta(seconds=EMBED_RETRY.lease_seconds + 1)
        reports = service.kb.run_vector_jobs(now=later)
        assert [(r.embedded, r.remaining) for r in reports] == [(0, 0)]
