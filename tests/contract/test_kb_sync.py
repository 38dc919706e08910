"""Synced sources (SPEC §6): a folder, a file or a URL kept current by passes — new files
ingested, changed ones re-ingested with their unchanged chunks' vectors kept, deleted and
moved-out ones removed, renamed ones kept as one document, rules and symlinks obeyed, and
forget respected — on both backends."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.errors import InvalidInputError, SyncSourceNotFoundError
from memoryd.kb.sync.model import FileState
from memoryd.service import MemoryService

from .kb_support import NOW
from .test_kb_urls import Reply, Site, site  # noqa: F401 - the local HTTP server fixture

LONG = " ".join(f"Greenhouse ledger line {i} records humidity and soil warmth." for i in range(60))


def _write(path: Path, text: str, *, tick: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    # A distinct modification time, whatever the file system's clock granularity.
    stamp = 1_700_000_000 + tick
    os.utime(path, (stamp, stamp))


def _notes(root: Path) -> None:
    _write(root / "harbour.md", "# Harbour\n\nThe harbour master logs every trawler at dawn.\n")
    ledger = f"# Ledger\n\n## Spring\n\n{LONG}\n\n## Autumn\n\nQuinces ripen by the wall.\n"
    _write(root / "garden" / "ledger.md", ledger)
    _write(root / ".obsidian" / "workspace.md", "# hidden settings\n")
    _write(root / "drafts" / "idea.md", "# Draft\n\nZeppelin mooring masts everywhere.\n")
    _write(root / "photo.raw", "not a document")
    _write(root / ".gitignore", "drafts/\n")


def _states(service: MemoryService, source_id: str) -> dict[str, str]:
    return {f.file.path: f.file.state.value for f in service.sync.files(source_id)}


def _texts(service: MemoryService, query: str) -> str:
    """Every text search_kb returns for ``query``, joined."""
    return "\n".join(hit.chunk.text for hit in service.kb.search(query).hits)


def _document_of(service: MemoryService, path: Path) -> str | None:
    found = service.store.kb.document_by_uri(str(path))
    return found.id if found else None


def test_a_synced_folder_follows_new_changed_deleted_renamed_and_ignored_files(
    service: MemoryService, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    _notes(root)
    source = service.sync.add(str(root), collection="notes", now=NOW)
    first = service.sync.run_pass(source, now=NOW, wait=True)
    assert (first.added, first.failed) == (2, 0), first
    assert _states(service, source.id) == {
        ".gitignore": "skipped", ".obsidian/": "skipped", "drafts/": "skipped",
        "garden/ledger.md": "current", "harbour.md": "current", "photo.raw": "skipped",
    }  # fmt: skip
    reasons = {f.file.path: f.file.reason for f in service.sync.files(source.id)}
    assert reasons["drafts/"] == "matches an ignore pattern"
    assert reasons[".obsidian/"] == "a hidden folder"
    assert "not a type" in (reasons["photo.raw"] or "")
    ledger = root / "garden" / "ledger.md"
    ledger_id = _document_of(service, ledger)
    assert ledger_id is not None
    assert service.kb.get(ledger_id).collection == "notes"
    assert service.kb.search("trawler harbour master dawn").hits[0].document.title == "Harbour"
    assert "Zeppelin" not in _texts(service, "zeppelin mooring masts")

    # Nothing changed: nothing is read again.
    again = service.sync.run_pass(source, now=NOW + timedelta(minutes=1))
    assert (again.added, again.updated, again.unchanged) == (0, 0, 2)

    # A changed file is re-ingested in place; its unchanged chunks keep their vectors.
    before = service.store.kb.vectors_by_position(ledger_id)
    spring = service.store.kb.chunks(ledger_id)[0].text
    _write(ledger, ledger.read_text().replace("Quinces ripen", "Medlars blet"), tick=1)
    # A new file, a deleted one and a renamed one in the same pass.
    _write(root / "garden" / "orchard.md", "# Orchard\n\nGraft the pear scions in March.\n")
    (root / "harbour.md").rename(root / "port.md")
    changed = service.sync.run_pass(source, now=NOW + timedelta(minutes=2), wait=True)
    assert (changed.updated, changed.added, changed.renamed, changed.removed) == (1, 1, 1, 0)
    assert _document_of(service, ledger) == ledger_id
    after = service.store.kb.vectors_by_position(ledger_id)
    assert service.store.kb.chunks(ledger_id)[0].text == spring
    assert (after[0] == before[0]).all()
    assert "Medlars blet" in service.kb.search("medlars blet autumn").hits[0].chunk.text
    assert "Quinces" not in _texts(service, "quinces ripen wall")
    port = _document_of(service, root / "port.md")
    assert port is not None and _document_of(service, root / "harbour.md") is None
    assert len([d for d in service.kb.list_documents() if d.title == "Harbour"]) == 1

    # Deleted, and moved out by a new ignore pattern: both documents go.
    (root / "garden" / "orchard.md").unlink()
    source = service.sync.add(str(root), collection="notes", ignore=["garden/"], now=NOW)
    gone = service.sync.run_pass(source, now=NOW + timedelta(minutes=3))
    assert gone.removed == 2, gone
    assert _document_of(service, ledger) is None
    assert _states(service, source.id)["garden/"] == "skipped"
    assert [d.source_uri for d in service.kb.list_documents()] == [str(root / "port.md")]


def test_forget_and_sync_agree_until_the_owner_readmits_the_file(
    service: MemoryService, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    _write(root / "ana.md", "# Ana\n\nAna Ferreira keeps the beehives behind the mill.\n")
    _write(root / "mill.md", "# Mill\n\nThe mill wheel turns the grindstone.\n")
    source = service.sync.add(str(root), now=NOW)
    service.sync.run_pass(source, now=NOW)
    result = service.forget(entity="Ana Ferreira", now=NOW)
    assert len(result.documents) == 1

    erased = service.sync.run_pass(source, now=NOW + timedelta(minutes=1))
    assert erased.erased == 1 and erased.added == 0
    row = service.store.sync.get_file(source.id, "ana.md")
    assert row is not None and row.state is FileState.ERASED and "forget" in (row.reason or "")
    # Edited later, still not brought back: the refusal is recorded for that path.
    _write(root / "ana.md", "# Ana\n\nAna Ferreira moved the beehives.\n", tick=5)
    service.sync.run_pass(source, now=NOW + timedelta(minutes=2))
    assert _document_of(service, root / "ana.md") is None
    assert "Ana" not in _texts(service, "Ana Ferreira beehives")

    service.sync.readmit(source.id, "ana.md")
    back = service.sync.run_pass(source, now=NOW + timedelta(minutes=3))
    assert back.added == 1
    assert _document_of(service, root / "ana.md") is not None


def test_links_out_of_the_folder_or_into_the_home_are_never_read(
    service: MemoryService, tmp_path: Path
) -> None:
    root, outside, home = tmp_path / "notes", tmp_path / "private", tmp_path / "home"
    _write(outside / "diary.md", "# Diary\n\nThe safe combination is in the blue book.\n")
    _write(home / "exports" / "memories.md", "# Export\n\nEvery memory, exported.\n")
    service.sync.home = home
    (root / "home").mkdir(parents=True)
    (root / "home" / "exports").symlink_to(home / "exports")
    _write(root / "kept.md", "# Kept\n\nLanterns line the jetty.\n")
    (root / "diary.md").symlink_to(outside / "diary.md")
    (root / "elsewhere").symlink_to(outside)
    (root / "alias.md").symlink_to(root / "kept.md")
    source = service.sync.add(str(root), now=NOW)
    report = service.sync.run_pass(source, now=NOW)
    assert report.added == 1
    reasons = {f.file.path: f.file.reason or "" for f in service.sync.files(source.id)}
    assert "outside the folder" in reasons["diary.md"]
    assert "outside the folder" in reasons["elsewhere/"]
    assert "synced as itself" in reasons["alias.md"]
    assert "memoryd's own home" in reasons["home/exports/"]
    assert "combination" not in _texts(service, "safe combination blue book")
    with pytest.raises(InvalidInputError, match="home"):
        service.sync.add(str(home / "exports"), now=NOW)


def test_a_synced_file_and_a_synced_url_are_kept_current(
    service: MemoryService,
    tmp_path: Path,
    site: Site,  # noqa: F811 - the fixture
) -> None:
    report = tmp_path / "report.md"
    _write(report, "# Report\n\nQuarterly kelp harvest rose sharply.\n")
    source = service.sync.add(str(report), now=NOW)
    assert service.sync.run_pass(source, now=NOW).added == 1
    _write(report, "# Report\n\nQuarterly kelp harvest fell back.\n", tick=3)
    assert service.sync.run_pass(source, now=NOW).updated == 1
    assert "fell back" in service.kb.search("kelp harvest quarterly").hits[0].chunk.text
    report.unlink()
    assert service.sync.run_pass(source, now=NOW).removed == 1

    page = "<html><head><title>Tide tables</title></head><body><article><h1>Tide tables</h1>"
    site.routes["/tides"] = [
        Reply(200, body=(page + "<p>High water at the estuary is 06:10 today.</p>" * 3).encode()),
        Reply(200, body=(page + "<p>High water at the estuary is 07:25 today.</p>" * 3).encode()),
    ]
    url = service.sync.add(site.url("/tides"), every_seconds=3600, now=NOW)
    assert url.every_seconds == 3600
    assert service.sync.run_pass(url, now=NOW).added == 1
    assert [s.id for s in service.sync.due(NOW + timedelta(minutes=30))] == [source.id]
    later = NOW + timedelta(hours=1)
    assert url.id in {s.id for s in service.sync.due(later)}
    assert service.sync.run_pass(url, now=later).updated == 1
    assert "07:25" in service.kb.search("high water estuary").hits[0].chunk.text
    assert "/tides" in {f.file.path[-6:] for f in service.sync.files(url.id)}


def test_sources_are_named_by_id_or_location_and_removed_with_or_without_documents(
    service: MemoryService, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    _write(root / "a.md", "# Alpha\n\nAlpacas graze the upper field.\n")
    source = service.sync.add(str(root), now=NOW)
    service.sync.run_pass(source, now=NOW)
    assert service.sync.source(str(root)).id == source.id
    assert service.sync.source(source.id[:8]).id == source.id
    with pytest.raises(SyncSourceNotFoundError):
        service.sync.source("/nowhere/at/all")
    with pytest.raises(SyncSourceNotFoundError):
        service.sync.source("~nosuchuserÝ")  # no home directory to expand: not found, not a crash
    with pytest.raises(InvalidInputError, match="does not exist"):
        service.sync.add("0" * 5000, now=NOW)  # a name too long for the file system
    with pytest.raises(InvalidInputError, match="does not exist"):
        service.sync.add(str(tmp_path / "missing"), now=NOW)
    with pytest.raises(InvalidInputError, match="credentials"):
        service.sync.add("https://owner:hunter2secret@example.org/notes.html", now=NOW)
    assert [s.id for s in service.sync.sources()] == [source.id]
    service.sync.remove(source.id)
    assert service.sync.sources() == [] and len(service.kb.list_documents()) == 1
    again = service.sync.add(str(root), now=NOW)
    service.sync.run_pass(again, now=NOW)
    service.sync.remove(str(root), delete_documents=True)
    assert service.kb.list_documents() == []
