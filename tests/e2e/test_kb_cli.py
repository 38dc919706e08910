"""``memoryd kb ingest|search|read|list|delete|reingest``, run as the real executable (SPEC §6,
§7): a folder with good and bad files, the summary table, JSON, and the fenced answers."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

from tests.kb_corpus import write_bad_inputs

from .conftest import Cli
from .server import MEMORYD

NOTES = """# Garden Journal

## Tomatoes

The heirloom tomatoes in the east bed need staking before the June storms arrive.

## Compost

Turn the compost heap every second Saturday and keep it as damp as a wrung sponge.
"""

SHOPPING = """# Shopping Lists

## Hardware

Galvanised wire, twelve bamboo canes and a bag of horticultural grit from the co-op.
"""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "nested").mkdir(parents=True)
    (folder / "garden.md").write_text(NOTES, encoding="utf-8")
    (folder / "nested" / "shopping.md").write_text(SHOPPING, encoding="utf-8")
    (folder / ".hidden.md").write_text("# Hidden\n\nnever ingested", encoding="utf-8")
    bad = write_bad_inputs(tmp_path / "bad")
    for key in ("truncated_pdf", "encrypted_pdf", "unknown_type"):
        target = folder / bad[key].name
        target.write_bytes(bad[key].read_bytes())
    return folder


def test_ingest_a_folder_prints_a_summary_and_fails_for_the_bad_files(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok("init")
    folder = _folder(tmp_path)

    result = cli.run("kb", "ingest", str(folder), "--collection", "home")

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["outcome", "chunks", "source", "detail"]
    assert "2 ok, 0 skipped, 0 queued, 3 failed" in result.stdout
    assert any("truncated" in line for line in lines), result.stdout
    assert any("encrypted" in line for line in lines), result.stdout
    assert any("unsupported file type (.xyz)" in line for line in lines), result.stdout
    assert "hidden" not in result.stdout
    ok_rows = [line for line in lines[1:] if line.startswith("ok ")]
    assert sorted(Path(line.split()[2]).name for line in ok_rows) == ["garden.md", "shopping.md"]

    # The bad files are reported, not kept: nothing to delete by hand.
    listed = cli.json("kb", "list")
    assert sorted((d["status"], Path(d["source_uri"]).name) for d in listed) == [
        ("ready", "garden.md"),
        ("ready", "shopping.md"),
    ]
    assert all(d["collection"] == "home" for d in listed)

    again = cli.json("kb", "ingest", str(folder / "garden.md"), "--collection", "home")
    assert [r["outcome"] for r in again] == ["skipped"]


def test_search_read_and_delete(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    folder = _folder(tmp_path)
    cli.run("kb", "ingest", str(folder / "garden.md"), str(folder / "nested"))

    found = cli.json("kb", "search", "when should I turn the compost heap", "--explain")
    top = found["results"][0]
    assert top["breadcrumb"] == "Garden Journal › Compost"
    assert top["content"].startswith(f'<untrusted_content source="{folder / "garden.md"}"')
    assert top["content"].rstrip().endswith("</untrusted_content>")
    assert top["explain"]["cosine"] >= 0.25
    text = cli.ok("kb", "search", "bamboo canes galvanised wire")
    assert "Shopping Lists › Hardware" in text
    assert "horticultural grit" in text

    doc = top["doc"]
    section = cli.ok("kb", "read", doc, "--section", "Tomatoes")
    assert "heirloom tomatoes" in section and "compost heap" not in section
    assert re.search(rf'doc="{doc}"', section)
    whole = cli.json("kb", "read", doc)
    assert "heirloom" in whole["content"] and "compost heap" in whole["content"]
    missing = cli.fails("kb", "read", doc, "--section", "Roses")
    assert "no section 'Roses'" in missing and "Tomatoes" in missing
    assert "no document with id" in cli.fails("kb", "read", "NOPE")
    assert "chunk" in cli.misused("kb", "read", doc, "--chunks", "x-y")
    # Digits that are not 0-9, and a number too long to be a page, are usage errors, quoted short.
    assert "pages must be a number" in cli.misused("kb", "read", doc, "--pages", "²")
    too_long = cli.misused("kb", "read", doc, "--chunks", "7" * 5000)
    assert "chunks must be a number" in too_long and len(too_long) < 200

    renamed = cli.json("kb", "rename", doc, "Allotment Notebook")
    assert renamed["title"] == "Allotment Notebook"
    found = cli.json("kb", "search", "when should I turn the compost heap")["results"][0]
    assert found["breadcrumb"] == "Allotment Notebook › Garden Journal › Compost"
    assert "no pages" in cli.fails("kb", "read", doc, "--pages", "1-2")

    deleted = cli.json("kb", "delete", doc)
    assert deleted[0]["id"] == doc
    after = cli.json("kb", "search", "when should I turn the compost heap")
    assert all(r["doc"] != doc for r in after["results"])


def test_a_pdf_is_read_by_pages_and_results_cite_them(cli: Cli, tmp_path: Path) -> None:
    from tests.kb_pdfs import page_sentence, write_paged

    cli.ok("init")
    path = tmp_path / "harbour.pdf"
    write_paged(path)
    cli.ok("kb", "ingest", str(path))

    found = cli.json("kb", "search", page_sentence(2, 1))
    top = next(r for r in found["results"] if page_sentence(2, 1) in r["content"])
    read = cli.json("kb", "read", top["doc"], "--pages", "2")
    shown = cli.ok("kb", "read", top["doc"], "--pages", "2-3")

    assert top["pages"][0] <= 2 <= top["pages"][1] and top["cite"].startswith("p")
    assert read["pages"] == [2, 2] and read["cite"] == "p. 2"
    assert page_sentence(2, 1) in read["content"] and page_sentence(3, 0) not in read["content"]
    assert 'pages="2-3"' in shown and page_sentence(3, 2) in shown
    assert "page" in cli.fails("kb", "read", top["doc"], "--pages", "9-12")


def test_ingest_refuses_file_urls_mistyped_paths_and_oversized_files(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok("init")
    big = tmp_path / "big.txt"
    big.write_text("lorem ipsum " * 200_000, encoding="utf-8")

    result = cli.run("kb", "ingest", "file:///etc/passwd", str(big), "--max-size", "1", "--json")
    typo = cli.run("kb", "ingest", "nope.pdf")

    assert result.returncode == 1
    assert "error:" not in result.stderr
    outcomes = json.loads(result.stdout)
    assert [o["outcome"] for o in outcomes] == ["failed", "failed"]
    assert [o["document"] for o in outcomes] == [None, None]
    assert "only http and https" in outcomes[0]["reason"]
    assert "over the 1 MB limit" in outcomes[1]["reason"]
    assert typo.returncode == 1
    assert f"no such file: {tmp_path / 'nope.pdf'}" in typo.stdout
    assert "0 ok, 0 skipped, 0 queued, 1 failed" in typo.stdout
    assert cli.json("kb", "list") == []
    assert cli.json("kb", "search", "lorem ipsum")["results"] == []


def test_explain_says_which_documents_the_query_names(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    folder = tmp_path / "reports"
    folder.mkdir()
    for year, capex in ((2021, "410"), (2022, "655")):
        (folder / f"acme_{year}.md").write_text(
            f"# Acme Pumps Inc. — Form 10-K {year}\n\n## Cash Flows\n\n"
            f"| (in millions) | {year} | {year - 1} |\n|---|---|---|\n"
            f"| Purchases of property and equipment | ({capex}) | (300) |\n",
            encoding="utf-8",
        )
    cli.run("kb", "ingest", str(folder))

    text = cli.ok("kb", "search", "Acme FY2022 purchases of property and equipment", "--explain")

    assert text.splitlines()[0] == (
        "the question names: Acme Pumps Inc. — Form 10-K 2022 (names 'acme', fiscal 2022)"
    )
    assert "within named documents: vector rank 1" in text
    # Every rank after "within named documents:" is theirs; the library's come before it.
    for line in (x for x in text.splitlines() if x.startswith("score ")):
        library, named = line.split("within named documents:")
        assert "table row rank" in library and "row label rank" in library
        assert "table row" not in named
    first = text.index("<untrusted_content")
    assert "(655)" in text[first : text.index("</untrusted_content>")]
    plain = cli.ok("kb", "search", "purchases of property and equipment", "--explain")
    assert "the question names" not in plain


def test_ctrl_c_during_an_ingest_says_what_was_kept_and_how_to_finish(
    cli: Cli, tmp_path: Path
) -> None:
    """Ctrl-C while a long note is being embedded: one error line saying the document is kept
    (keyword-searchable, waiting for its vectors) and to run the ingest again, not click's
    bare "Aborted!"; running it again finishes the vectors."""
    cli.ok("init")
    paragraphs = (
        f"## Trip day {day}\n\nWe walked {day} kilometres along the coast from village "
        f"number {day}, stopped for grilled sardines and watched the fishing boats come in.\n"
        for day in range(1, 1500)
    )
    note = tmp_path / "journal.md"
    note.write_text("# Travel journal\n\n" + "\n".join(paragraphs), encoding="utf-8")
    process = subprocess.Popen(
        [str(MEMORYD), "kb", "ingest", "--progress", str(note)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.env,
        cwd=cli.cwd,
    )
    assert process.stderr is not None
    for line in process.stderr:  # the chunks are committed: vectors come next
        if "keyword-searchable" in line:
            break
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)

    assert process.returncode == 1
    assert stderr.startswith("error: stopped (Ctrl-C)"), stderr
    assert "Travel journal (embedding " in stderr and "memoryd kb ingest" in stderr
    assert "Aborted" not in stderr and "Traceback" not in stderr
    [kept] = cli.json("kb", "list")
    assert kept["title"] == "Travel journal" and kept["embedding"]
    again = cli.ok("kb", "ingest", str(note))
    assert "unchanged since the last ingest; its " in again
    assert " missing vectors embedded now" in again
    [finished] = cli.json("kb", "list")
    assert finished["embedded_chunks"] == finished["chunks"] and finished["embedding"] is None
