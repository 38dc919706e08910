"""Export, import and migrate-store (SPEC §9): SQLite → PostgreSQL → SQLite gives the same
export, byte for byte; imports are all or nothing; a damaged file is refused clearly."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import memoryd
from memoryd.consolidation.policy import ConsolidationPolicy
from memoryd.errors import InvalidInputError
from memoryd.jobs.model import Job, JobStatus
from memoryd.memory.model import Importance, Kind, Source
from memoryd.ops.portability import ImportError_, export_store, import_store
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from tests.pg import TestPostgres

from .conftest import Cli


def at(day: int, month: int = 1, year: int = 2026) -> datetime:
    return datetime(year, month, day, 12, 0, tzinfo=UTC)


def fill(service: MemoryService) -> None:
    """A little of everything: chains (edit, confirm over a slot, decay), a purge, aliases,
    documents with chunks, a queued job, retrieval stats and the consolidation stamp."""
    lives = service.remember(
        "Owner lives in Lisbon", subject="owner", predicate="lives in", object="Lisbon",
        now=at(1, 1, 2024),
    ).memory  # fmt: skip
    assert lives is not None
    service.edit(lives.id, "Owner lives in Porto", object="Porto", now=at(2, 1, 2024))
    service.remember("Ana cooks mushroom risotto on Sundays", entities=["Ana"], now=at(3))
    service.add_alias("Ana", "Annie")
    secret = service.remember("Owner is secretly learning the theremin", now=at(4)).memory
    assert secret is not None
    service.purge(secret.id, now=at(5))
    pending = service.propose(
        {"memories": [{"kind": "lesson", "content": "Always answer in French",
                       "confidence": 0.9, "changes_behavior": True, "importance": "high"}]},
        source=Source.TURN, now=at(6),
    )  # fmt: skip
    assert pending[0].memory is not None
    service.confirm(pending[0].memory.id, now=at(7))
    service.remember("Lunch with Marco at Taberna Sal", kind=Kind.EVENT, now=at(8))
    service.remember("Keep replies short", kind=Kind.LESSON, importance=Importance.LOW, now=at(8))
    service.recall("Where do I live and what does Ana cook?", now=at(9))
    service.settle()
    service.consolidate(now=at(10, 6), policy=ConsolidationPolicy())
    service.kb.ingest_bytes(
        b"# Boat Log\n\n## Engine\n\nThe outboard engine needs new spark plugs every spring.\n",
        "boat.md",
        collection="boat",
        now=at(11),
    )
    service.kb.ingest_bytes(b"just a note about the garden", "garden.txt", now=at(12))
    with service.store.transaction():
        service.store.jobs.enqueue(
            Job("01JOBJOBJOBJOBJOBJOBJOBJOB", "turn", {"user": "hello"}, JobStatus.QUEUED, 0,
                at(13), at(13))
        )  # fmt: skip


def exported(service: MemoryService, *, with_vectors: bool = True) -> str:
    buffer = io.StringIO()
    export_store(service.store, buffer, with_vectors=with_vectors)
    return buffer.getvalue()


@pytest.fixture
def open_store(tmp_path: Path, embedder: LocalMiniLM, postgres_server: TestPostgres) -> Any:
    opened: list[MemoryService] = []
    databases: list[str] = []

    def factory(kind: str) -> MemoryService:
        if kind == "postgres":
            url = postgres_server.create_database()
            databases.append(url)
            service = memoryd.open(url, embedder=embedder)
        else:
            service = memoryd.open(tmp_path / f"store-{len(opened)}.db", embedder=embedder)
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()
    for url in databases:
        postgres_server.drop_database(url)


def test_sqlite_to_postgres_to_sqlite_exports_the_same_bytes(
    open_store: Callable[[str], MemoryService],
) -> None:
    first = open_store("sqlite")
    fill(first)
    original = exported(first)

    middle = open_store("postgres")
    import_store(middle.store, io.StringIO(original), middle.embedder)
    through_postgres = exported(middle)
    last = open_store("sqlite")
    import_store(last.store, io.StringIO(through_postgres), last.embedder)

    assert through_postgres == original
    assert exported(last) == original
    records = [json.loads(line) for line in original.splitlines()]
    kinds = {r["type"] for r in records}
    assert kinds == {"header", "memory", "audit", "alias", "document", "chunk", "job", "meta",
                     "footer"}  # fmt: skip
    assert "theremin" not in original
    assert all("vector" in r for r in records if r["type"] == "chunk")
    # The copy behaves like the original, not just exports like it.
    assert (
        last.recall("Where do I live?", now=at(20)).text
        == first.recall("Where do I live?", now=at(20)).text
    )
    assert [h.chunk.text for h in last.kb.search("spark plugs").hits] == [
        h.chunk.text for h in first.kb.search("spark plugs").hits
    ]
    chain = last.show(last.list_memories(kind=Kind.FACT)[0].id).chain
    assert [m.content for m in chain][:2] == ["Owner lives in Lisbon", "Owner lives in Porto"]
    assert last.store.integrity_errors() == []


def test_without_vectors_the_import_embeds_again(
    open_store: Callable[[str], MemoryService],
) -> None:
    first = open_store("sqlite")
    fill(first)
    plain = exported(first, with_vectors=False)
    assert '"vector"' not in plain

    copy = open_store("postgres")
    import_store(copy.store, io.StringIO(plain), copy.embedder)

    assert exported(copy, with_vectors=False) == plain
    hits = copy.kb.search("when do the spark plugs need changing").hits
    assert hits and "spark plugs" in hits[0].chunk.text
    assert copy.search_memory("risotto").items[0].memory.content.startswith("Ana cooks")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_damaged_file_or_a_full_store_is_refused_and_nothing_is_written(
    open_store: Callable[[str], MemoryService], backend: str
) -> None:
    first = open_store("sqlite")
    fill(first)
    original = exported(first)
    target = open_store(backend)

    lines = original.splitlines(keepends=True)
    with pytest.raises(ImportError_, match="truncated"):
        import_store(target.store, io.StringIO("".join(lines[:-3])), target.embedder)
    edited = original.replace("Owner lives in Porto", "Owner lives in Paris")
    with pytest.raises(ImportError_, match="checksum"):
        import_store(target.store, io.StringIO(edited), target.embedder)
    with pytest.raises(ImportError_, match="not a memoryd export"):
        import_store(target.store, io.StringIO('{"type": "memory"}\n'), target.embedder)
    assert target.store.memories.count() == 0

    import_store(target.store, io.StringIO(original), target.embedder)
    with pytest.raises(InvalidInputError, match="empty store"):
        import_store(target.store, io.StringIO(original), target.embedder)
    assert exported(target) == original


def test_migrate_store_and_export_import_from_the_command_line(
    cli: Cli, tmp_path: Path, embedder: LocalMiniLM, postgres_server: TestPostgres
) -> None:
    source = tmp_path / "source.db"
    service = memoryd.open(source, embedder=embedder)
    fill(service)
    stored = len(service.list_memories())
    service.close()
    url = postgres_server.create_database()
    try:
        migrated = cli.json("migrate-store", str(source), url)
        assert migrated["verified"] is True
        assert migrated["source"]["sha256"] == migrated["destination"]["sha256"]
        assert migrated["source"]["counts"]["memory"] == stored

        dump = tmp_path / "dump.jsonl"
        result = cli.run("--db", url, "export", "--out", str(dump), "--with-vectors")
        assert result.returncode == 0, result.stderr
        assert "sha256" in result.stderr
        back = tmp_path / "back.db"
        imported = cli.json("--db", str(back), "import", str(dump))
        assert imported["counts"]["memory"] == stored
        again = cli.run("--db", str(back), "export", "--with-vectors")
        assert again.stdout == dump.read_text(encoding="utf-8")
        refused = cli.fails("--db", str(back), "import", str(dump))
        assert "empty store" in refused
    finally:
        postgres_server.drop_database(url)


def test_importing_a_file_that_is_not_an_export_says_so(cli: Cli, tmp_path: Path) -> None:
    """`memoryd import` (or `restore`) given a PDF (or any binary file) by mistake: one line
    naming the problem and what to give instead, exit code 1, no traceback, nothing written:
    not even an empty store where there was none."""
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%\xd3\xeb\xe9\xe1\n1 0 obj\n<< /Type /Catalog >>\nendobj\n")
    store = tmp_path / "fresh.db"

    result = cli.run("--db", str(store), "import", str(pdf))

    assert result.returncode == 1
    assert result.stderr.startswith("error: this is not a memoryd export"), result.stderr
    assert "UTF-8" in result.stderr and "memoryd export" in result.stderr
    assert "Traceback" not in result.stderr
    # The store the import would have filled is not left behind empty, nor is a restore's.
    assert not store.exists() and not list(tmp_path.glob("fresh.db*"))
    restored = cli.run("--db", str(store), "restore", str(pdf))
    assert restored.returncode == 1 and "not a memoryd export" in restored.stderr
    assert not list(tmp_path.glob("fresh.db*"))
    # A store that was there is left as it was.
    cli.ok("--db", str(store), "init")
    cli.ok("--db", str(store), "remember", "The owner is allergic to penicillin")
    assert cli.run("--db", str(store), "import", str(pdf)).returncode == 1
    assert [m["content"] for m in cli.json("--db", str(store), "list")] == [
        "The owner is allergic to penicillin"
    ]
