"""Importing conversation histories through the service, on both backends: turns are queued
oldest first with their original times, a second import queues nothing (nor one into a copy of
the store), a newer export queues only what is new, and an import that fails part-way (the
store, or the file broken after conversations already read) stores nothing."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.errors import StoreUnavailableError
from memoryd.extraction.chat_export_policy import ChatExportError
from memoryd.service import MemoryService
from memoryd.storage.protocols import ImportedChats
from tests.builders import batch
from tests.chat_exports import as_json, gpt_chat
from tests.fake_llm import FakeLLMServer, Reply

from .conftest import Backend

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TOKEN = "ghp_Zx81kQm2Lr7Vt4Nc9Wp3Hs6Jd0Ya5Fb1Ge8K"
CAT = [
    ("user", "I adopted a cat called Miso", "2024-03-01T10:00:00Z"),
    ("assistant", "Lovely name!", "2024-03-01T10:00:05Z"),
    ("user", f"My GitHub token is {TOKEN}, keep it", "2024-03-03T08:00:00Z"),
]
MOVE = [("user", "We moved to Porto", "2023-06-10T19:30:00Z")]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


@pytest.fixture
def service(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, server: FakeLLMServer
) -> MemoryService:
    for name, value in {
        "MEMORYD_LLM_PROVIDER": "openai",
        "MEMORYD_LLM_MODEL": "fake-extractor",
        "MEMORYD_LLM_BASE_URL": server.sdk_base_url,
        "MEMORYD_LLM_TIMEOUT": "2",
        "MEMORYD_LLM_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    return backend.open_fresh()


def export(path: Path, *conversations: dict[str, object]) -> Path:
    path.write_bytes(as_json(conversations))
    return path


def queued(service: MemoryService) -> list[tuple[str, str]]:
    """The queued turns in the order the worker claims them: (owner's words, turn time)."""
    jobs = sorted(service.admin.recent_jobs(100), key=lambda j: (j.next_attempt_at, j.id))
    return [(j.payload["user"], j.payload["at"]) for j in jobs if j.status.value == "queued"]


def test_turns_queue_oldest_first_with_their_times_once(
    service: MemoryService, backend: Backend, server: FakeLLMServer, tmp_path: Path
) -> None:
    # The file lists the newer conversation first.
    first = export(tmp_path / "a.json", gpt_chat("cat", "Miso", CAT[:2]), gpt_chat("mv", "", MOVE))

    report = service.import_chats(first, now=NOW)
    again = service.import_chats(first, now=NOW)
    CAT_AND_MORE = [*CAT, ("user", "Miso likes tuna", "2024-03-04T08:00:00Z")]
    newer = export(
        tmp_path / "b.json", gpt_chat("cat", "Miso", CAT_AND_MORE), gpt_chat("mv", "", MOVE)
    )
    grown = service.import_chats(newer, now=NOW)

    assert (report.format, report.conversations, report.turns_queued) == ("chatgpt", 2, 2)
    assert (again.turns_queued, again.skipped_imported) == (0, 2)
    assert (grown.turns_queued, grown.skipped_imported) == (2, 2)
    assert queued(service) == [
        ("We moved to Porto", "2023-06-10T19:30:00.000000+00:00"),
        ("I adopted a cat called Miso", "2024-03-01T10:00:00.000000+00:00"),
        (
            "My GitHub token is [credential removed], keep it",
            "2024-03-03T08:00:00.000000+00:00",
        ),
        ("Miso likes tuna", "2024-03-04T08:00:00.000000+00:00"),
    ]
    assert TOKEN.encode() not in backend.persisted_bytes()
    # The worker takes them in that order, each dated by its own time, after a turn the
    # owner gave meanwhile: an import is a backlog.
    service.observe_turn("Today I start a new job", now=NOW)
    server.script(*[Reply(batch()) for _ in range(5)])
    assert len(service.run_jobs(now=NOW)) == 5
    live, *sent = [r.body["messages"][1]["content"] for r in server.requests if r.method == "POST"]
    assert "Owner: Today I start a new job" in live
    assert [text.split(" at ")[0] for text in sent] == [
        "The turn happened on Saturday 2023-06-10",
        "The turn happened on Friday 2024-03-01",
        "The turn happened on Sunday 2024-03-03",
        "The turn happened on Monday 2024-03-04",
    ]
    assert "Summary of the turn: Lovely name!" in sent[1]
    # An export carries what was imported: the same export into the copy queues nothing.
    dump = io.StringIO()
    service.admin.export_to(dump)
    copy = backend.open_fresh()
    copy.admin.import_from(io.StringIO(dump.getvalue()))
    assert copy.import_chats(newer, now=NOW).skipped_imported == 4


class FailsOnSecondConversation:
    """The store's imported-chats rows, failing as a full disk would once the first
    conversation's turns are written."""

    def __init__(self, rows: ImportedChats) -> None:
        self.rows_ = rows
        self.recorded = 0

    def imported(self, source: str) -> frozenset[tuple[str, str]]:
        return self.rows_.imported(source)

    def record(self, *args: Any) -> None:
        self.recorded += 1
        if self.recorded == 2:
            raise StoreUnavailableError("the disk is full")
        self.rows_.record(*args)


def test_an_import_that_fails_part_way_stores_nothing(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = export(tmp_path / "c.json", gpt_chat("cat", "Miso", CAT), gpt_chat("mv", "", MOVE))
    failing = FailsOnSecondConversation(service.store.imported_chats)
    monkeypatch.setattr(service.store, "imported_chats", failing)

    with pytest.raises(StoreUnavailableError):
        service.import_chats(path, now=NOW)
    monkeypatch.undo()
    nothing = queued(service)
    dry = service.import_chats(path, dry_run=True, now=NOW)
    still_nothing = queued(service)
    after = service.import_chats(path, now=NOW)

    assert failing.recorded == 2
    assert nothing == still_nothing == []
    assert (dry.turns_queued, dry.dry_run) == (3, True)
    assert (after.turns_queued, after.skipped_imported, len(queued(service))) == (3, 0, 3)


def test_a_file_broken_after_conversations_already_read_stores_nothing(
    service: MemoryService, tmp_path: Path
) -> None:
    whole = as_json([gpt_chat("cat", "Miso", CAT), gpt_chat("mv", "", MOVE)])
    # Read a conversation at a time, the first two are read (and screened) before the third,
    # which the download cut short.
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole[:-1] + b', {"title": "Trip", "mapping": {"n1": {"id": "n1", "mess')
    broken = tmp_path / "broken.json"
    broken.write_bytes(whole[:-1] + b', {"title": "Trip" "mapping": {}}]')
    good = export(tmp_path / "good.json", gpt_chat("cat", "Miso", CAT), gpt_chat("mv", "", MOVE))

    with pytest.raises(ChatExportError) as cut_short:
        service.import_chats(cut, now=NOW)
    with pytest.raises(ChatExportError) as not_json:
        service.import_chats(broken, now=NOW)
    nothing = queued(service)
    after = service.import_chats(good, now=NOW)

    assert "the file ends inside conversation 2, begun at line 1 column " in str(cut_short.value)
    assert "is it cut short?" in str(cut_short.value)
    assert "(Expecting ',' delimiter at line 1 column " in str(not_json.value)
    assert ", in conversation 2)" in str(not_json.value)
    assert nothing == []
    assert (after.turns_queued, after.skipped_imported, len(queued(service))) == (3, 0, 3)
