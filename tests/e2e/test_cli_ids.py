"""Command-line ergonomics, through the real executable: shortened ids (as git takes commits),
one exit-code scheme (0 done, 1 not found / refused / failed, 2 usage) documented in --help,
and `remember` saying what it replaced."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoryd.memory.model import Source
from tests.builders import batch, item

from .conftest import Cli

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def common_length(first: str, second: str) -> int:
    """How many leading characters two ids share."""
    pairs = enumerate(zip(first, second, strict=True))
    return next((i for i, (a, b) in pairs if a != b), len(first))


def test_a_unique_start_of_an_id_names_a_memory_or_document(
    cli: Cli, seeded: Callable[[], Any], tmp_path: Path
) -> None:
    with seeded() as service:
        # Made in the same millisecond: their ids share the time part.
        figs = service.remember("Owner likes figs", now=T0).memory
        dates = service.remember("Owner likes dates", now=T0).memory
        [proposed] = service.propose(
            batch(item("Owner repainted the kitchen yellow", confidence=0.7)),
            source=Source.TURN,
            now=T0 + timedelta(days=1),
        )
    assert figs is not None and dates is not None and proposed.memory is not None
    shared = common_length(figs.id, dates.id)
    notes = tmp_path / "harbour.md"
    notes.write_text("# Harbour Notes\n\nThe ferry leaves the quay at nine.\n", encoding="utf-8")
    [ingested] = cli.json("kb", "ingest", str(notes))
    doc = ingested["document"]["id"]

    shown = cli.json("show", figs.id[: shared + 1].lower())
    confirmed = cli.json("confirm", proposed.memory.id[:10])
    read = cli.json("kb", "read", doc[:4])
    renamed = cli.json("kb", "rename", doc[:6], "Quay Timetable")
    ambiguous = cli.fails("archive", figs.id[:shared])
    too_short = cli.fails("show", figs.id[:3])
    no_document = cli.fails("kb", "delete", doc[:4], "ZZZZ")

    assert shown["id"] == figs.id
    assert (confirmed["id"], confirmed["status"]) == (proposed.memory.id, "active")
    assert read["doc"] == doc and "ferry leaves the quay" in read["content"]
    assert renamed["title"] == "Quay Timetable"
    assert f"the id '{figs.id[:shared]}' is ambiguous" in ambiguous
    assert f"{figs.id} ('Owner likes figs')" in ambiguous
    assert f"{dates.id} ('Owner likes dates')" in ambiguous
    assert "give more characters" in ambiguous
    assert "at least 4 characters" in too_short
    assert "no document with id 'ZZZZ'" in no_document
    # Nothing was archived or deleted by the refused commands (ids are checked first).
    assert {m["id"]: m["status"] for m in cli.json("list")}[figs.id] == "active"
    assert [d["id"] for d in cli.json("kb", "list")] == [doc]


def test_exit_codes_say_whose_fault_it_is_and_help_lists_them(cli: Cli) -> None:
    cli.ok("init")
    fact = cli.json("remember", "Owner likes figs")

    help_text = " ".join(cli.ok("--help").split())
    bad_kind = cli.misused("list", "--kind", "bogus")
    bad_since = cli.misused("search", "figs", "--since", "last tuesday")
    bad_now = cli.misused("remember", "Owner likes plums", "--now", "soon")
    bad_pages = cli.misused("kb", "read", "01ABSENTABSENTABSENTABSENT", "--pages", "two")
    bad_at = cli.misused("observe", "--user", "I moved to Porto", "--at", "not a date")
    unknown_option = cli.run("list", "--colour", "red")
    missing_argument = cli.run("show")
    not_found = cli.fails("confirm", "01ABSENTABSENTABSENTABSENT")
    refused = cli.fails("confirm", fact["id"])

    assert "Exit codes:" in help_text
    assert "2 usage" in help_text and "1 not found" in help_text
    assert "at least 4 characters" in help_text
    assert "unknown kind 'bogus'" in bad_kind and "(--kind)" in bad_kind
    assert "--since 'last tuesday'" in bad_since
    assert "--now 'soon'" in bad_now
    assert "(--pages)" in bad_pages
    assert "--at 'not a date'" in bad_at
    assert unknown_option.returncode == missing_argument.returncode == 2
    assert "no memory with id" in not_found
    assert "cannot confirm" in refused
    assert [m["content"] for m in cli.json("list")] == ["Owner likes figs"]


def test_remember_says_which_fact_a_new_value_replaced(cli: Cli) -> None:
    cli.ok("init")
    slot = ("--subject", "owner", "--predicate", "lives in")
    bali = cli.json("remember", "The owner lives in Bali", *slot, "--object", "Bali")

    text = cli.ok("remember", "The owner lives in Lisbon", *slot, "--object", "Lisbon")
    porto = cli.json("remember", "The owner lives in Porto", *slot, "--object", "Porto")
    again = cli.json("remember", "The owner lives in Porto", *slot, "--object", "Porto")

    lisbon = next(m for m in cli.json("list") if m["content"] == "The owner lives in Lisbon")
    assert f"replaced {bali['id']} 'The owner lives in Bali'" in text
    assert bali["replaced"] == []
    assert [m["id"] for m in porto["replaced"]] == [lisbon["id"]]
    assert porto["replaced"][0]["content"] == "The owner lives in Lisbon"
    assert porto["replaced"][0]["status"] == "archived"
    assert again["id"] == porto["id"] and again["replaced"] == []
