"""``memoryd context``, run as the real executable: the one pack of memories and document
chunks, as text, ``--json`` and ``--explain`` (issue 21 §1)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memoryd.kb.model import SourceType
from memoryd.memory.model import Importance, Kind
from memoryd.providers.tokenizer import O200kTokenizer

from .conftest import Cli

NOW = "2026-11-29T12:00:00+00:00"
QUESTION = "When does the lease on the Porto flat end, and what is the notice period?"


def test_context_text_json_and_explain(cli: Cli, seeded: Callable[[], Any]) -> None:
    at = datetime(2026, 11, 20, tzinfo=UTC)
    with seeded() as service:
        lesson = service.remember(
            "Always answer in European Portuguese dates", kind=Kind.LESSON,
            importance=Importance.HIGH, now=at,
        ).memory  # fmt: skip
        fact = service.remember("The lease on the Porto flat ends on 31 March 2027", now=at).memory
        document = service.kb.ingest_bytes(
            b"# Porto flat lease\n\n## Termination\n\nEither party may end the lease of the "
            b"Porto flat with a notice period of 120 days, sent by registered letter.\n",
            "lease.md",
            source_type=SourceType.CURATED,
            now=at,
        ).document
    assert lesson is not None and fact is not None and document is not None

    pack = cli.json("context", QUESTION, "--now", NOW, "--explain")
    explained = cli.ok("context", QUESTION, "--now", NOW, "--explain", "--budget", "60")
    error = cli.fails("context", "   ")

    assert pack["tokens"] == O200kTokenizer().count(pack["text"]) <= pack["budget"] == 1500
    assert pack["items"][0]["type"] == "lesson"
    by_type = {i["type"]: i for i in pack["items"][1:]}
    assert by_type["memory"]["id"] == fact.id
    assert by_type["chunk"]["doc"] == document.id
    assert by_type["chunk"]["content"].startswith("<untrusted_content ")
    assert by_type["chunk"]["content"] in pack["text"]
    assert set(by_type["chunk"]["explain"]["joint_ranks"]) <= {"vector", "text"}
    assert by_type["memory"]["explain"]["gates"]
    assert pack["legs"]["kb"] == "ok"
    # --explain as text: the table, and with a 60-token budget what did not fit, and why.
    assert "pack: " in explained and "of 60 tokens" in explained
    assert "over the token budget" in explained
    assert error == "error: the message is empty; pass the owner's message for this turn"
