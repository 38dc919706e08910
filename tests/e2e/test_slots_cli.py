"""``memoryd show`` and ``memoryd split`` through the real executable: a fact placed in
another predicate's slot says so, and the owner gives it its own slot back."""

from __future__ import annotations

from .conftest import Cli

NOW = "2026-05-04T09:00:00+00:00"


def test_show_says_which_slot_a_fact_joined_and_split_gives_it_its_own(cli: Cli) -> None:
    cli.ok("init")
    lisbon = cli.json(
        "remember", "The owner lives in Lisbon", "--subject", "The owner", "--predicate",
        "lives_in", "--object", "Lisbon", "--now", NOW,
    )  # fmt: skip
    porto = cli.json(
        "remember", "The owner's home city is Porto", "--subject", "owner", "--predicate",
        "home city", "--object", "Porto", "--now", NOW,
    )  # fmt: skip
    assert porto["same_slot_as"] == "lives_in" and porto["supersedes"] == lisbon["id"]

    shown = cli.ok("show", porto["id"])
    assert "same_slot_as: lives_in" in shown
    assert "treated as the same slot as 'lives_in' (predicate similarity 0." in shown

    split = cli.ok("split", porto["id"], "--now", NOW)
    assert split.startswith(f"split: {porto['id']}  fact      active")
    assert split.splitlines()[1:] == [
        "  'home city' has its own slot again (no longer the same slot as 'lives_in')",
        f"  active again: {lisbon['id']}  fact      active   1.00  The owner lives in Lisbon",
    ]
    active = cli.json("list", "--status", "active")
    assert sorted(m["object"] for m in active) == ["Lisbon", "Porto"]
    assert "same_slot_as" not in cli.ok("show", porto["id"]).split("chain (oldest first)")[0]
    audit = cli.ok("show", lisbon["id"])
    assert "restore archived→active  by owner" in audit

    again = cli.fails("split", porto["id"])
    assert again == (
        f"error: memory {porto['id']} is already in its own slot (nothing to split): only a "
        "fact treated as the same slot as another predicate can be split"
    )
    assert cli.fails("split", "01NOSUCHMEMORY000000000000").endswith(
        "; list ids with `memoryd list`"
    )
    assert cli.json("list", "--status", "active") == active
