"""A CSV or TSV file is a table in the knowledge base (SPEC §6): a bank statement exported by a
European bank is ingested and an owner's question about one month's bill finds its row, once
per storage backend; a TSV is read by tabs; a synced folder picks up a .csv; the document's
type round-trips through export and import."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

from memoryd.kb.sync.model import FileState
from memoryd.ops.portability import export_store, import_store
from memoryd.service import MemoryService
from tests.kb_statements import ELECTRICITY, bank_statement, payment

from .conftest import Backend
from .kb_support import NOW, only_ok

CONTACTS = (
    "Name\tPhone\tCity\tNote\n"
    "Ana Silva\t+351 21 555 0101\tLisbon\tmet at the pottery class, likes green tea\n"
    "Bjørn Dahl\t+47 22 55 01 02\tOslo\tsails a wooden ketch, call after six\n"
    "Chiara Russo\t+39 06 5550 103\tRome\tplumber, fixed the boiler in 2025\n"
)


def _cells(row: str) -> str:
    """A statement row as its Markdown table line."""
    return "| " + " | ".join(row.split(";")) + " |"


def test_an_owner_question_about_a_months_bill_finds_its_row(service: MemoryService) -> None:
    text = bank_statement()
    result = service.kb.ingest_bytes(text.encode("utf-8"), "statement-2026.csv", now=NOW)
    document = only_ok(result)
    assert (document.document_type, document.title) == ("csv", "statement-2026")

    electricity = service.kb.search("How much did I pay the electricity company in March?")
    first = electricity.hits[0]
    assert first.document.id == document.id
    assert _cells(payment(text, ELECTRICITY, 3)) in first.text
    assert "March 2026" in first.chunk.breadcrumb

    # March's rows fill two chunks: both come first, and they hold every grocery bought then.
    groceries = service.kb.search("What did I spend on groceries in March?", limit=5).hits
    assert all("March 2026" in hit.chunk.breadcrumb for hit in groceries[:2])
    march = [r for r in text.splitlines() if ".03.2026;" in r and r.endswith(";Groceries")]
    assert len(march) >= 3
    assert all(any(_cells(r) in hit.text for hit in groceries[:2]) for r in march)

    june = service.kb.search("Vattenfall bill June").hits[0]
    assert _cells(payment(text, ELECTRICITY, 6)) in june.text


def test_a_tsv_is_read_by_its_tabs(service: MemoryService) -> None:
    document = only_ok(service.kb.ingest_bytes(CONTACTS.encode(), "contacts.tsv", now=NOW))
    assert document.document_type == "csv"

    hit = service.kb.search("Bjørn Dahl phone number Oslo").hits[0]
    assert "| Bjørn Dahl | +47 22 55 01 02 | Oslo | sails a wooden ketch, call after six |" in (
        hit.text
    )


def test_a_synced_folder_picks_up_a_csv(service: MemoryService, tmp_path: Path) -> None:
    root = tmp_path / "finance"
    root.mkdir()
    (root / "statement-2026.csv").write_bytes(bank_statement().encode())
    (root / "contacts.tsv").write_text(CONTACTS, encoding="utf-8")
    source = service.sync.add(str(root), collection="finance", now=NOW)

    service.sync.run_pass(source, now=NOW + timedelta(minutes=1), wait=True)

    states = {f.file.path: f.file.state for f in service.sync.files(source.id)}
    assert states == {"statement-2026.csv": FileState.CURRENT, "contacts.tsv": FileState.CURRENT}
    found = service.store.kb.document_by_uri(str(root / "statement-2026.csv"))
    assert found is not None and found.document_type == "csv"


def test_a_csv_documents_type_survives_export_and_import(
    service: MemoryService, backend: Backend
) -> None:
    document = only_ok(service.kb.ingest_bytes(CONTACTS.encode(), "contacts.tsv", now=NOW))
    exported = io.StringIO()
    export_store(service.store, exported, with_vectors=True)
    target = backend.open_fresh()

    import_store(target.store, io.StringIO(exported.getvalue()).readlines(), target.embedder)

    copied = target.store.kb.get_document(document.id)
    assert copied is not None and copied.document_type == "csv"
    assert target.kb.search("Chiara Russo plumber Rome").hits[0].document.id == document.id
