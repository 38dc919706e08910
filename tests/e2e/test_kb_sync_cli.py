"""``memoryd kb sync`` from the real executable: add (with its first pass), list with each
file's state, `kb list` and `status` showing the source, a pass after edits, forget and
readmit, bad input, remove."""

from __future__ import annotations

from pathlib import Path

from .conftest import Cli


def test_kb_sync_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    folder = tmp_path / "notes"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "cellar.md").write_text(
        "---\ntitle: Cellar inventory\ntags: wine, cellar\n---\nTwelve bottles of Bairrada "
        "rest on the north rack. See [[Tasting notes]].\n"
    )
    (folder / "rowan.md").write_text("# Rowan\n\nRowan Abreu prunes the vines in January.\n")

    out = cli.ok("kb", "sync", "add", str(folder), "--collection", "home", "--no-wait")
    assert f"syncing {folder} (folder) into home" in out
    assert "2 added, 1 skipped" in out
    listed = cli.ok("kb", "sync", "list", "--files")
    assert "skipped         .git/  (a hidden folder)" in listed
    assert "cellar.md" in listed and ("2 embedding" in listed or "2 current" in listed)
    documents = cli.json("kb", "list")
    cellar = next(d for d in documents if d["source_uri"].endswith("cellar.md"))
    assert cellar["title"] == "Cellar inventory"
    assert cellar["metadata"]["tags"] == ["wine", "cellar"]
    assert cellar["metadata"]["links"] == ["Tasting notes"]
    assert "synced sources:" in cli.ok("kb", "list")
    status = cli.ok("status")
    assert f"synced        {folder}: " in status and "looked 20" in status

    (folder / "cellar.md").write_text("Eighteen bottles of Dão rest on the north rack.\n")
    (folder / "new.md").write_text("# New\n\nThe quince paste sets overnight.\n")
    looked = cli.ok("kb", "sync", "now", str(folder))
    assert "1 added, 1 updated" in looked
    assert "Eighteen bottles" in cli.ok("kb", "search", "bottles north rack")

    cli.ok("forget", "--entity", "Rowan Abreu", "--yes")
    assert "1 erased" in cli.ok("kb", "sync", "now")
    assert "erased          rowan.md  (its document was removed by the owner" in cli.ok(
        "kb", "sync", "list"
    )
    readmitted = cli.ok("kb", "sync", "readmit", str(folder), "rowan.md")
    assert "rowan.md readmitted" in readmitted and "1 added" in readmitted

    assert "does not exist" in cli.fails("kb", "sync", "add", str(tmp_path / "missing"))
    assert "kb sync list" in cli.fails("kb", "sync", "now", "01ABSENTABSENTABSENTABSENT")
    removed = cli.ok("kb", "sync", "remove", str(folder), "--delete-documents")
    assert "its documents removed" in removed
    assert cli.json("kb", "list") == []
    assert "no synced sources" in cli.ok("kb", "sync", "list")
