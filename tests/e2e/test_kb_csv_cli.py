"""``memoryd kb ingest`` of a CSV export, run as the real executable (SPEC §6): a bank
statement saved by a European bank (``;``, decimal commas, UTF-8 with its byte-order mark, as
Excel saves "CSV UTF-8") becomes a searchable table, and a file that is not one is a failed row
naming the problem."""

from __future__ import annotations

import json
from pathlib import Path

from tests.kb_statements import ELECTRICITY, bank_statement, payment

from .conftest import Cli


def test_a_bank_statement_csv_is_ingested_and_a_months_bill_found(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    text = bank_statement()
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "statement-2026.csv").write_bytes(text.encode("utf-8-sig"))
    (folder / "empty.csv").write_bytes(b"Date;Payee;Amount\r\n")
    (folder / "photo.csv").write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 8)

    result = cli.run("kb", "ingest", str(folder))

    assert result.returncode == 1, result.stderr
    assert "1 ok, 0 skipped, 0 queued, 2 failed" in result.stdout
    assert "only its header row" in result.stdout and "binary data" in result.stdout
    listed = cli.json("kb", "list")
    assert [(d["title"], d["document_type"]) for d in listed] == [("statement-2026", "csv")]

    found = cli.json("kb", "search", "How much did I pay the electricity company in March?")
    top = found["results"][0]
    assert top["breadcrumb"] == "statement-2026 › March 2026"
    row = payment(text, ELECTRICITY, 3)
    assert "| " + " | ".join(row.split(";")) + " |" in top["content"]
    shown = cli.ok("kb", "search", "electricity bill June")
    assert payment(text, ELECTRICITY, 6).split(";")[2] in shown


def test_the_unsupported_type_message_names_csv(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    (tmp_path / "budget.numbers").write_bytes(b"plain words")

    result = cli.run("kb", "ingest", str(tmp_path / "budget.numbers"), "--json")

    assert result.returncode == 1
    failed = json.loads(result.stdout)
    assert "unsupported file type (.numbers)" in failed[0]["reason"]
    assert "XLSX, CSV, TSV" in failed[0]["reason"]
