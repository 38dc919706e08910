"""The ``memoryd`` command line, run as the real executable in subprocesses."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memoryd
from memoryd.memory.model import Source
from tests.builders import batch, item

from .conftest import Cli

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
MEMORY_KEYS = {
    "id",
    "kind",
    "status",
    "content",
    "confidence",
    "supersedes",
    "superseded_by",
    "created_at",
    "last_confirmed_at",
}
API_KEY = "sk-proj-Q7vXr2Lm9TzK4pWn8YbC3dHs6FjG1aEu"


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def lisbon_fact() -> dict[str, Any]:
    return item(
        "Owner lives in Lisbon", kind="fact", subject="owner", predicate="lives in", object="Lisbon"
    )


def by_id(listed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {memory["id"]: memory for memory in listed}


def store_bytes(db_path: Path) -> bytes:
    """The store file and its -wal/-shm companions, as they sit on disk."""
    return b"".join(p.read_bytes() for p in sorted(db_path.parent.glob(db_path.name + "*")))


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file in a directory, by name."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


# ---------------------------------------------------------------- store choice


def test_db_flag_beats_memoryd_db(clean_env: dict[str, str], tmp_path: Path) -> None:
    home, env_db, flag_db = tmp_path / "h", tmp_path / "env.db", tmp_path / "flag.db"
    cli = Cli({**clean_env, "MEMORYD_HOME": str(home), "MEMORYD_DB": str(env_db)}, tmp_path)

    cli.ok("--db", str(flag_db), "init")
    cli.ok("--db", str(flag_db), "remember", "Owner likes figs")

    assert [m["content"] for m in cli.json("--db", str(flag_db), "list")] == ["Owner likes figs"]
    assert not env_db.exists()
    # The home holds the API token that init writes, and no store.
    assert sorted(p.name for p in home.iterdir()) == ["token"]


def test_memoryd_db_beats_memoryd_home(clean_env: dict[str, str], tmp_path: Path) -> None:
    home, env_db = tmp_path / "h", tmp_path / "env.db"
    cli = Cli({**clean_env, "MEMORYD_HOME": str(home), "MEMORYD_DB": str(env_db)}, tmp_path)

    cli.ok("init")
    cli.ok("remember", "Owner likes figs")

    assert env_db.is_file()
    assert sorted(p.name for p in home.iterdir()) == ["token"]  # the API token, no store
    assert [m["content"] for m in cli.json("--db", str(env_db), "list")] == ["Owner likes figs"]


def test_memoryd_home_holds_the_default_store(clean_env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "not-yet" / "memoryd"
    cli = Cli({**clean_env, "MEMORYD_HOME": str(home)}, tmp_path)

    cli.ok("init")
    cli.ok("remember", "Owner likes figs")

    default = home / "memoryd.db"
    assert default.is_file()
    assert [m["content"] for m in cli.json("--db", str(default), "list")] == ["Owner likes figs"]


def test_an_empty_file_is_no_store_until_init(clean_env: dict[str, str], tmp_path: Path) -> None:
    """--db pointed at an empty file (made by `touch`, or a mistyped name): `list` says there
    is no store there and leaves the file as it was, as for a missing one; `init` makes it."""
    home, empty = tmp_path / "h", tmp_path / "notes.db"
    empty.touch()
    cli = Cli({**clean_env, "MEMORYD_HOME": str(home)}, tmp_path)

    refused = cli.fails("--db", str(empty), "list")

    assert refused.startswith(f"error: no memoryd store at {empty} (the file is empty)")
    assert "memoryd init" in refused
    assert empty.stat().st_size == 0 and not Path(f"{empty}-wal").exists()
    cli.ok("--db", str(empty), "init")
    assert cli.json("--db", str(empty), "list") == []


# ---------------------------------------------------- supersede, --now, shapes


def test_a_new_value_supersedes_and_show_prints_chain_and_audit(cli: Cli) -> None:
    cli.ok("init")
    slot = ("--subject", "owner", "--predicate", "lives in")
    bali = cli.json(
        "remember", "Owner lives in Bali", *slot, "--object", "Bali", "--now", "2026-01-05T08:00:00"
    )
    lisbon = cli.json(
        "remember",
        "Owner lives in Lisbon",
        *slot,
        "--object",
        "Lisbon",
        "--now",
        "2026-02-10T08:00Z",
    )

    assert isinstance(bali, dict) and bali.keys() >= MEMORY_KEYS
    assert bali["created_at"] == bali["last_confirmed_at"] == "2026-01-05T08:00:00+00:00"
    assert lisbon["created_at"] == "2026-02-10T08:00:00+00:00"
    assert (lisbon["kind"], lisbon["status"], lisbon["supersedes"]) == (
        "fact",
        "active",
        bali["id"],
    )

    listed = cli.json("list")
    assert isinstance(listed, list) and all(m.keys() >= MEMORY_KEYS for m in listed)
    rows = by_id(listed)
    assert rows[bali["id"]]["status"] == "archived"
    assert rows[bali["id"]]["superseded_by"] == lisbon["id"]
    assert rows[lisbon["id"]]["status"] == "active"

    text = cli.ok("show", lisbon["id"])
    chain_part, audit_part = text.split("chain (oldest first):")[1].split("audit:")
    chain = [line for line in chain_part.splitlines() if line.strip()]
    assert len(chain) == 2
    assert bali["id"] in chain[0] and "Owner lives in Bali" in chain[0]
    assert lisbon["id"] in chain[1] and "→" in chain[1]
    audit = [line for line in audit_part.splitlines() if line.strip()]
    assert len(audit) == 3
    assert bali["id"] in audit[0] and "2026-01-05T08:00:00" in audit[0] and "active" in audit[0]
    assert bali["id"] in audit[1] and "archived" in audit[1] and lisbon["id"] in audit[1]
    assert lisbon["id"] in audit[2] and "2026-02-10T08:00:00" in audit[2]

    shown = cli.json("show", bali["id"])
    assert shown.keys() >= MEMORY_KEYS and shown["id"] == bali["id"]
    assert [m["id"] for m in shown["chain"]] == [bali["id"], lisbon["id"]]
    assert [(a["memory_id"], a["to_status"]) for a in shown["audit"]] == [
        (bali["id"], "active"),
        (bali["id"], "archived"),
        (lisbon["id"], "active"),
    ]


# ------------------------------------------------------------------ proposals


def test_propose_lets_policy_decide_and_never_writes_a_key(
    cli: Cli, db_path: Path, tmp_path: Path
) -> None:
    cli.ok("init")
    turn = batch(
        item("Owner ran a half marathon in Porto", confidence=0.9),
        item("Owner repainted the kitchen yellow", confidence=0.7),
        item("From now on always answer in French", kind="lesson", confidence=0.95),
        item(f"The owner's OpenAI key is {API_KEY}", confidence=0.95),
    )
    results = cli.json("propose", "--source", "turn", input=turn)

    assert isinstance(results, list)
    assert all({"outcome", "reason", "memory"} <= r.keys() for r in results)
    assert [r["outcome"] for r in results] == ["activated", "pending", "pending", "dropped"]
    assert [r["memory"]["status"] for r in results[:3]] == ["active", "pending", "pending"]
    assert results[3]["memory"] is None
    assert all(r["memory"].keys() >= MEMORY_KEYS for r in results[:3])

    document = tmp_path / "from-document.json"
    document.write_text(batch(item("Owner flew to Nairobi for a wedding", confidence=1.0)))
    [from_document] = cli.json("propose", str(document), "--source", "document")
    [from_web] = cli.json(
        "propose",
        "--source",
        "web",
        input=batch(item("Owner adopted a cat named Miso", confidence=1.0)),
    )
    assert from_document["outcome"] == from_web["outcome"] == "pending"

    listed = cli.json("list")
    assert [m["content"] for m in listed if m["status"] == "active"] == [
        "Owner ran a half marathon in Porto"
    ]
    assert len(listed) == 5
    assert API_KEY not in json.dumps(listed)
    on_disk = store_bytes(db_path)
    assert b"Owner ran a half marathon in Porto" in on_disk
    assert API_KEY.encode() not in on_disk


def test_list_filters_by_status_and_kind(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        service.remember("Owner lives in Lisbon", now=at(0))
        service.propose(
            batch(
                item("Owner ran a half marathon in Porto", confidence=0.9),
                item("Owner repainted the kitchen yellow", confidence=0.7),
                item("Answer in French", kind="lesson", confidence=0.95),
            ),
            source=Source.TURN,
            now=at(1),
        )

    pending = cli.json("list", "--status", "pending")
    lessons = cli.json("list", "--kind", "lesson")
    active_events = cli.json("list", "--status", "active", "--kind", "event")

    assert sorted(m["content"] for m in pending) == [
        "Answer in French",
        "Owner repainted the kitchen yellow",
    ]
    assert [m["content"] for m in lessons] == ["Answer in French"]
    assert [m["content"] for m in active_events] == ["Owner ran a half marathon in Porto"]


# ------------------------------------------------------------- owner actions


def test_confirm_of_a_pending_fact_supersedes_the_active_one(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    with seeded() as service:
        bali = service.remember(
            "Owner lives in Bali", subject="owner", predicate="lives in", object="Bali", now=at(0)
        ).memory
        [pending] = service.propose(batch(lisbon_fact()), source=Source.TURN, now=at(1))
    assert pending.memory.status.value == "pending"

    confirmed = cli.json("confirm", pending.memory.id, "--now", at(2).isoformat())
    rows = by_id(cli.json("list"))

    assert confirmed["status"] == "active"
    assert confirmed["supersedes"] == bali.id
    assert rows[bali.id]["status"] == "archived"
    assert rows[bali.id]["superseded_by"] == pending.memory.id


def test_review_shows_why_each_waits_and_the_fact_a_pending_one_would_replace(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    with seeded() as service:
        bali = service.remember(
            "Owner lives in Bali", subject="owner", predicate="lives in", object="Bali", now=at(0)
        ).memory
        [lisbon] = service.propose(batch(lisbon_fact()), source=Source.TURN, now=at(1))
        [kitchen] = service.propose(
            batch(item("Owner repainted the kitchen yellow", confidence=0.7)),
            source=Source.TURN,
            now=at(2),
        )
    lisbon_id, kitchen_id = lisbon.memory.id, kitchen.memory.id
    before = cli.json("list")

    # Without a terminal nothing is asked: the error says how to review instead.
    piped = cli.fails("review", input="c\nr\n")
    after_piped = cli.json("list")
    listed = cli.ok("list", "--status", "pending")
    pending = by_id(cli.json("list", "--status", "pending"))
    shown = cli.ok("show", lisbon_id[:-4])
    result = cli.in_terminal("review", "--now", at(3).isoformat(), answers="c\nr\n")

    for command in ("memoryd confirm ID", "memoryd reject ID", "list --status pending --json"):
        assert command in piped, piped
    assert "2 pending" in piped
    assert "reason: waits for the owner: a fact never activates alone" in listed
    assert f"would replace: {bali.id}" in listed
    assert pending[lisbon_id]["reason"] == "waits for the owner: a fact never activates alone"
    assert pending[lisbon_id]["would_replace"]["id"] == bali.id
    assert "confidence 0.70 is below 0.80" in pending[kitchen_id]["reason"]
    assert pending[kitchen_id]["would_replace"] is None
    assert f"would replace: {bali.id}" in shown and "reason: waits for the owner" in shown
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.split("[2/2]")
    assert "[1/2]" in first and lisbon_id in first
    assert "reason: waits for the owner: a fact never activates alone" in first
    replace_lines = [line for line in first.splitlines() if "would replace:" in line]
    assert len(replace_lines) == 1 and bali.id in replace_lines[0]
    assert "confirmed:" in first
    assert kitchen_id in second
    assert "confidence 0.70 is below 0.80" in second
    assert "would replace:" not in second
    assert "rejected:" in second
    assert after_piped == before and len(before) == 3

    rows = by_id(cli.json("list"))
    assert rows[lisbon_id]["status"] == "active"
    assert rows[lisbon_id]["supersedes"] == bali.id
    assert rows[bali.id]["status"] == "archived"
    assert rows[kitchen_id]["status"] == "rejected"
    assert "nothing to review" in cli.ok("review")


def test_edit_supersedes_with_a_new_active_row(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        old = service.remember(
            "Owner works at Acme", subject="owner", predicate="works at", object="Acme", now=at(0)
        ).memory

    new = cli.json("edit", old.id, "Owner works at Globex", "--object", "Globex")
    rows = by_id(cli.json("list"))

    assert new["id"] != old.id
    assert (new["status"], new["content"], new["supersedes"]) == (
        "active",
        "Owner works at Globex",
        old.id,
    )
    assert rows[old.id]["status"] == "archived"
    assert rows[old.id]["content"] == "Owner works at Acme"
    assert rows[old.id]["superseded_by"] == new["id"]
    assert [m["id"] for m in rows.values() if m["status"] == "active"] == [new["id"]]


def test_archive_retires_a_memory(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        memory = service.remember("Owner likes figs", now=at(0)).memory

    archived = cli.json("archive", memory.id)

    assert (archived["id"], archived["status"]) == (memory.id, "archived")
    assert cli.json("list", "--status", "active") == []


def test_purge_erases_the_text_everywhere_but_keeps_a_tombstone(
    cli: Cli, seeded: Callable[[], Any], db_path: Path
) -> None:
    with seeded() as service:
        private = service.remember(
            "Owner is secretly training for the Quetzalcoatl marathon", now=at(0)
        ).memory
        service.remember("Owner drinks green tea in the morning", now=at(1))

    purged = cli.json("purge", private.id)
    shown = cli.ok("show", private.id)
    rows = by_id(cli.json("list"))

    assert (purged["id"], purged["status"], purged["content"]) == (private.id, "archived", "")
    assert "Quetzalcoatl" not in shown and "purge" in shown
    assert rows[private.id]["content"] == ""
    assert rows[private.id]["status"] == "archived"
    on_disk = store_bytes(db_path)
    assert b"green tea" in on_disk, "sanity: the file does hold stored text"
    assert b"quetzalcoatl" not in on_disk.lower()


# ----------------------------------------------------------------- bad input


def test_a_store_in_a_missing_directory_is_refused(cli: Cli, tmp_path: Path) -> None:
    line = cli.fails("--db", str(tmp_path / "missing" / "sub" / "memoryd.db"), "init")

    assert "missing" in line
    assert not (tmp_path / "missing").exists()


def test_a_directory_is_not_a_store(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8 not really a jpeg")

    line = cli.fails("--db", str(folder), "init")

    assert "directory" in line
    assert snapshot(folder) == {"cat.jpg": b"\xff\xd8 not really a jpeg"}


def test_a_file_that_is_not_sqlite_is_left_alone(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    notes = folder / "notes.db"
    notes.write_text("shopping list: eggs, milk, figs\n" * 20)
    before = snapshot(folder)

    line = cli.fails("--db", str(notes), "remember", "Owner likes figs")

    assert str(notes) in line
    assert snapshot(folder) == before


def test_an_sqlite_file_of_another_program_is_left_alone(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "recipes"
    folder.mkdir()
    recipes = folder / "recipes.db"
    connection = sqlite3.connect(recipes)
    with connection:
        connection.execute("CREATE TABLE recipes (name TEXT)")
        connection.execute("INSERT INTO recipes VALUES ('fig jam')")
    connection.close()
    before = snapshot(folder)

    line = cli.fails("--db", str(recipes), "remember", "Owner likes figs")

    assert "not a memoryd store" in line
    assert snapshot(folder) == before


class TinyEmbedder:
    """An 8-dimension stand-in model, to build a store the default embedder cannot read."""

    model = "tiny-test-embedder"
    dimension = 8

    def embed(self, texts: list[str]) -> Any:
        rows = np.array(
            [[(sum(map(ord, t)) * (i + 3)) % 17 + 1 for i in range(8)] for t in texts],
            dtype=np.float32,
        )
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_store_built_with_another_embedding_dimension_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "tiny.db"
    service = memoryd.open(path, embedder=TinyEmbedder())
    service.remember("Owner likes figs", now=at(0))
    before = [m.to_json() for m in service.list_memories()]
    service.close()

    line = cli.fails("--db", str(path), "remember", "Owner likes dates")

    assert "dimension" in line
    service = memoryd.open(path, embedder=TinyEmbedder(), create=False)
    try:
        assert [m.to_json() for m in service.list_memories()] == before
    finally:
        service.close()


BAD_COMMANDS: dict[str, tuple[list[str], str | None, list[str]]] = {
    "show-unknown-id": (["show", "01NOSUCHMEMORY"], None, ["01NOSUCHMEMORY"]),
    "purge-unknown-id": (["purge", "01NOSUCHMEMORY"], None, ["01NOSUCHMEMORY"]),
    "non-json-batch": (["propose", "--source", "turn"], "Owner likes figs, remember it", ["JSON"]),
    "bad-field-batch": (
        ["propose", "--source", "turn"],
        batch(
            item("Owner adopted a cat named Miso"),
            {**item("Owner bought a red bicycle"), "mood": "happy"},
        ),
        ["item 1", "mood"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_COMMANDS))
def test_bad_input_changes_nothing(cli: Cli, seeded: Callable[[], Any], case: str) -> None:
    args, stdin, mentions = BAD_COMMANDS[case]
    with seeded() as service:
        service.remember("Owner lives in Lisbon", now=at(0))
        service.propose(
            batch(item("Owner repainted the kitchen yellow", confidence=0.7)),
            source=Source.TURN,
            now=at(1),
        )
    before = cli.json("list")

    line = cli.fails(*args, input=stdin)

    assert all(word in line for word in mentions), line
    assert cli.json("list") == before
    assert len(before) == 2


def test_errors_name_the_options_at_fault_and_the_next_command(cli: Cli) -> None:
    cli.ok("init")

    half_slot = cli.misused("remember", "the owner's desk is oak", "--subject", "desk")
    unknown = cli.fails("show", "01ABSENTABSENTABSENTABSENT")

    assert half_slot.strip() == (
        "error: a fact slot needs both a subject and a predicate, or neither "
        "(--subject, --predicate)"
    )
    assert unknown.strip() == (
        "error: no memory with id '01ABSENTABSENTABSENTABSENT'; list ids with `memoryd list`"
    )


def test_a_file_argument_that_is_not_text_is_named_and_nothing_is_queued(
    cli: Cli, tmp_path: Path
) -> None:
    """A backup, a picture or a UTF-16 file passed where turns, a digest or a batch belong is a
    usage error naming the argument and the first byte that is not UTF-8 (it was a traceback);
    a UTF-8 file with a byte-order mark is read as text."""
    cli.ok("init")
    binary = tmp_path / "backup.db"
    binary.write_bytes(b"SQLite format 3\x00\x10\x00\x01\x01\x00@  \x00\x00\x00\x8a")
    utf16 = tmp_path / "batch.json"
    utf16.write_bytes('{"memories": []}'.encode("utf-16"))

    for args, argument in (
        (("compact", str(binary)), "TURNS_FILE"),
        (("mission", str(binary)), "DIGEST_FILE"),
        (("propose", "--source", "owner", str(binary)), "BATCH_FILE"),
        (("propose", "--source", "owner", str(utf16)), "BATCH_FILE"),
    ):
        refused = cli.misused(*args)
        assert refused.startswith(f"error: {argument} is not UTF-8 text (byte 0x"), refused
        assert "(--" not in refused, refused
    assert cli.json("jobs")["jobs"] == []

    with_bom = tmp_path / "bom.json"
    with_bom.write_bytes(b"\xef\xbb\xbf" + batch(item("The owner grows figs")).encode())
    cli.ok("propose", "--source", "owner", str(with_bom))
    assert "The owner grows figs" in cli.ok("list")


def test_a_limit_longer_than_any_store_is_a_usage_error(cli: Cli) -> None:
    """`list --limit 9999999999999999999999` was SQLite's overflow as a traceback."""
    cli.ok("init")
    for command in (("list",), ("jobs",), ("kb", "list")):
        result = cli.run(*command, "--limit", "9" * 22)
        assert result.returncode == 2, (command, result.stderr)
        assert "Invalid value for '--limit'" in result.stderr and "Traceback" not in result.stderr
        assert cli.run(*command, "--limit", "1000000000").returncode == 0
