"""`memoryd import-chats` as the real executable against a scripted OpenAI-compatible server:
an export's turns are queued with their own times, the worker extracts events dated by them in
the owner's zone, importing again queues nothing, and a bad file stores nothing; a large
zipped export is read without growing the process by its size."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import batch, item
from tests.chat_exports import as_json, as_zip, claude_turns, gpt_chat
from tests.fake_llm import FakeLLMServer, Recorded, Reply

from .conftest import Cli
from .server import MEMORYD

NOW = "2026-12-01T09:00:00+00:00"
PARTY = "The owner threw a surprise party for Ana in Sintra."
BIKE = "The owner's bike was stolen."


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


def answer(request: Recorded) -> Reply:
    """The model's memory for either turn (two imports queued at the same --now run in
    either order)."""
    return Reply(batch(item(PARTY if "Sintra" in str(request.body) else BIKE)))


def lisbon_llm(cli: Cli, server: FakeLLMServer) -> Cli:
    env = {
        **cli.env,
        "MEMORYD_TZ": "Europe/Lisbon",
        "MEMORYD_LLM_PROVIDER": "openai",
        "MEMORYD_LLM_MODEL": "fake-extractor",
        "MEMORYD_LLM_BASE_URL": server.sdk_base_url,
        "MEMORYD_LLM_TIMEOUT": "2",
        "MEMORYD_LLM_MAX_RETRIES": "0",
    }
    return Cli(env=env, cwd=cli.cwd)


def test_an_export_is_queued_once_its_events_keep_their_days_and_a_bad_one_stores_nothing(
    cli: Cli, server: FakeLLMServer, tmp_path: Path
) -> None:
    llm = lisbon_llm(cli, server)
    llm.ok("init")
    claude = tmp_path / "claude-export.zip"
    # 23:30 UTC on 1 May is 00:30 on 2 May in Lisbon (summer time): the owner's day.
    claude.write_bytes(as_zip([claude_turns("c1", "Party", [
        ("human", "We threw Ana a surprise party in Sintra", "2024-05-01T23:30:00Z"),
        ("assistant", "How did it go?", "2024-05-01T23:30:04Z"),
    ])]))  # fmt: skip
    bike = gpt_chat("g1", "Bike", [
        ("user", "Someone stole my bike at the station", "2023-02-14T08:15:00Z"),
        ("assistant", "I'm sorry!", "2023-02-14T08:15:03Z"),
        ("user", "", "2023-02-14T08:16:00Z"),
    ])  # fmt: skip
    chatgpt = tmp_path / "conversations.json"
    chatgpt.write_bytes(as_json([bike]))
    half = tmp_path / "half.json"
    half.write_bytes(as_json([bike, {"title": "Broken", "id": "x"}]))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not an export")
    server.script(answer, answer)

    missing = llm.fails("import-chats", str(half))
    not_json = llm.fails("import-chats", str(notes))
    wrong = llm.misused("import-chats", str(chatgpt), "--format", "claude")
    off = cli.fails("import-chats", str(chatgpt))
    dry = llm.ok("import-chats", str(claude), "--dry-run", "--now", NOW)
    progress = llm.run("import-chats", str(claude), "--progress", "--now", NOW)
    imported = llm.json("import-chats", str(chatgpt), "--now", NOW)
    again = llm.ok("import-chats", str(claude), "--now", NOW)
    ran = llm.ok("worker", "--once", "--now", NOW)

    assert missing == (
        "error: conversation 1 ('Broken') has no valid \"mapping\" (missing); is the export "
        "complete?"
    )
    assert not_json.startswith("error: the file is not JSON (Expecting value at line 1 column 1)")
    assert "looks like a ChatGPT export, not Claude" in wrong and "--format" in wrong
    assert off.startswith("error: extraction is off: no LLM is configured.")
    assert dry.splitlines() == [
        "claude-export.zip (Claude export): 1 conversations; would queue 1 turns from 1 of "
        "them, 2024-05-02 to 2024-05-02",
        "skipped: 0 turns already imported, 0 messages empty or unsupported",
        "nothing was queued (--dry-run)",
    ]
    assert progress.returncode == 0, progress.stderr
    # The share of the .zip as stored: its index, after the conversations, is not counted.
    assert re.search(r"importing: \d+% of the file read, 1 conversations, 1 turns to queue\n",
                     progress.stderr)  # fmt: skip
    assert "importing: 1 conversations read, 1 turns queued" in progress.stderr
    assert "queued 1 turns from 1 of them" in progress.stdout
    assert imported == {
        "format": "chatgpt", "conversations": 1, "conversations_queued": 1, "turns_queued": 1,
        "skipped_already_imported": 0, "skipped_empty_or_unsupported": 1,
        "first_at": "2023-02-14T08:15:00+00:00", "last_at": "2023-02-14T08:15:00+00:00",
        "dry_run": False,
    }  # fmt: skip
    assert "queued 0 turns" in again and "skipped: 1 turns already imported" in again
    # Only the two good imports' turns ran: the refused files queued nothing.
    assert "2 jobs run" in ran
    # Each turn told the model when it happened, in the owner's zone.
    sent = sorted(r.body["messages"][1]["content"] for r in server.requests if r.method == "POST")
    assert sent[0].startswith("The turn happened on Thursday 2024-05-02 at 00:30, Europe/Lisbon.")
    assert sent[1].startswith("The turn happened on Tuesday 2023-02-14 at 08:15, Europe/Lisbon.")
    memories = {m["content"]: m for m in llm.json("list")}
    assert memories[BIKE]["occurred_at"].startswith("2023-02-14")
    assert memories[PARTY]["occurred_at"].startswith("2024-05-02")
    assert memories[PARTY]["created_at"].startswith("2026-12-01")


# Run from a small interpreter, the command's ru_maxrss is its own peak (Linux carries the
# starting process's peak across exec, and this one is small).
_PEAK = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"peak_kib": peak, "code": done.returncode, "out": done.stdout,
                  "err": done.stderr}))
"""


def peak_run(cli: Cli, *args: str) -> dict[str, object]:
    """``memoryd ARGS`` with its peak resident memory (KiB)."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(MEMORYD), *args],
        capture_output=True, text=True, env=cli.env, cwd=cli.cwd, timeout=300, check=True,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stdout)
    assert result["code"] == 0, result["err"]
    return result


def zipped_export(path: Path, conversations: int) -> int:
    """A ChatGPT export's .zip of ``conversations`` conversations of 3 turns (varied words, so
    that it packs like a real one); the size of its conversations.json."""
    rng = random.Random(conversations)
    words = "we planned the trip to Porto with Ana and the kids flat in Lisbon cat bike".split()
    size = 0
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open("conversations.json", "w") as member,
    ):
        member.write(b"[")
        for n in range(conversations):
            day = f"2021-{1 + n % 12:02d}-{1 + n % 28:02d}"
            turns = [
                (role, " ".join(rng.choice(words) for _ in range(120)), f"{day}T10:0{t}:00Z")
                for t in range(3) for role in ("user", "assistant")
            ]  # fmt: skip
            chunk = (b", " if n else b"") + json.dumps(gpt_chat(f"c{n}", "t", turns)).encode()
            member.write(chunk)
            size += len(chunk)
        member.write(b"]")
    return size + 2


def test_a_large_zipped_export_is_read_without_growing_the_process_by_its_size(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok("init")
    small, large = tmp_path / "small.zip", tmp_path / "large.zip"
    zipped_export(small, 10)
    size = zipped_export(large, 8_000)
    assert size > 45_000_000

    baseline = peak_run(cli, "import-chats", str(small), "--dry-run", "--json")
    measured = peak_run(cli, "import-chats", str(large), "--dry-run", "--json")

    report = json.loads(str(measured["out"]))
    assert (report["conversations"], report["turns_queued"]) == (8_000, 24_000)
    grown_mib = (int(str(measured["peak_kib"])) - int(str(baseline["peak_kib"]))) / 1024
    # Read whole (973622d), this 50 MB export grew the process by 241 MiB; a conversation at
    # a time, by 9.
    assert grown_mib < 32, (grown_mib, size)
