"""`memoryd forget`: the list first; erased only when the owner confirms (--yes or a terminal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .conftest import Cli


def test_forget_lists_asks_then_erases(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        service.add_alias("Ana", "Annie")
        ana = service.remember("Annie's flat is above the Pimenta bakery").memory
        tagged = service.remember("She swims at the Olhao lido", entities=["Ana"]).memory
        bruno = service.remember("Bruno collects Portuguese azulejo tiles").memory
        kept = service.remember("The owner prefers green tea").memory
        service.kb.ingest_bytes(b"# Notes\n\nAna lent me the Saramago novel.\n", "notes.md")
    ana_ids = {ana.id, tagged.id}

    listed = cli.ok("forget", "--entity", "Ana", "--dry-run")
    piped = cli.run("forget", "--entity", "Ana", input="y\n")
    erased = cli.json("forget", "--entity", "Ana", "--yes")
    asked = cli.in_terminal("forget", "--entity", "Bruno", answers="y\n")
    after = {m["id"]: m for m in cli.json("list")}

    assert "would erase: forget entity 'Ana': 2 memories, 1 chunk in 1 document" in listed
    assert ana.id in listed and "Annie's flat is above the Pimenta" in listed
    assert "Ana lent me the Saramago novel." in listed and bruno.id not in listed
    assert piped.returncode == 1 and "--yes" in piped.stderr and ana.id in piped.stdout
    # Still listed by the next run: the unconfirmed one erased nothing.
    assert {m["id"] for m in erased["memories"]} == ana_ids and erased["erased"]
    assert asked.returncode == 0, asked.stderr
    assert "Erase all of this?" in asked.stdout and "erased: forget entity 'Bruno'" in asked.stdout
    for memory_id in (*ana_ids, bruno.id):
        assert (after[memory_id]["content"], after[memory_id]["purged"]) == ("", True)
    assert after[kept.id]["content"] == "The owner prefers green tea"
    assert "--entity" in cli.misused("forget", "--entity", "Ana", "--query", "tea")
