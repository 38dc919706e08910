"""``memoryd eval`` and ``memoryd reembed --dry-run --eval`` as the real executable: a case is
added by id prefixes, listed, run beside a candidate setting and a candidate embedding model
(side by side, nothing stored changes), and removed; bad input is refused naming the option."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoryd.config.settings import resolve_settings
from memoryd.providers.embedder import LOCAL_MODEL_ID
from memoryd.storage.protocols import EmbeddingSignature
from memoryd.wiring import open_store
from tests.fake_embeddings import FakeEmbeddingServer

from .conftest import Cli

QUESTION = "Where does my kayak sleep?"


def test_eval_add_list_run_beside_candidates_and_remove(
    cli: Cli, seeded: Callable[[], Any], db_path: Any
) -> None:
    with seeded() as service:
        kayak, viola = (
            service.remember(text).memory.id
            for text in (
                "The owner's kayak is yellow and sleeps in the boathouse",
                "The owner plays viola in a community orchestra on Thursdays",
            )
        )

    added = cli.ok("eval", "add", QUESTION, "--expect", kayak[:-4].lower(), "--noise", f"{viola},")
    unknown = cli.fails("eval", "add", QUESTION, "--expect", "01NOSUCHMEMORY")
    cases = cli.json("eval", "list")

    assert added.startswith(cases[0]["id"]) and f"expect {kayak}" in added
    assert "no memory with id '01NOSUCHMEMORY'" in unknown and "memoryd list" in unknown
    assert [(c["question"], c["expected"], c["noise"]) for c in cases] == [
        (QUESTION, [kayak], [viola])
    ]

    report = cli.ok("eval", "run", "--k", "1", "--set", "recall.open_score=1.01",
                    "--set", "recall.small_store_open_score=1.01",
                    "--set", "recall.strong_text_coverage=1.01").splitlines()  # fmt: skip
    refused = cli.misused("eval", "run", "--set", "recall.vectorgate=0.3")

    assert report[0].split() == ["current", "candidate"]
    assert report[-1] == (
        "candidate: recall.open_score=1.01, recall.small_store_open_score=1.01, "
        "recall.strong_text_coverage=1.01"
    )
    overall = report[report.index("overall (1 cases)") :]
    assert overall[1].split() == ["recall@1", "100%", "0%"]
    assert overall[2].split() == ["block", "recall", "100%", "0%"]
    assert overall[3].split() == ["noise", "in", "block", "0/1", "0/1"]
    assert "did you mean 'recall.vector_gate'" in refused and "(--set)" in refused

    with FakeEmbeddingServer(dimension=256) as target:
        to_target = ("--model", target.model, "--base-url", target.base_url)
        compared = cli.json("reembed", *to_target, "--dry-run", "--eval", "--k", "1")
        misused = cli.misused("reembed", *to_target, "--eval")
        asked = target.texts

    assert compared["memories"] == 2 and "eval" in compared
    candidate = compared["eval"]["candidate"]
    assert candidate["label"] == f"embedder {target.model}"
    assert "all 2 active memories embedded in memory" in candidate["note"]
    # The fake model's hashed words put the question and the kayak at a negative cosine: the
    # text match is refused as contradicting the meaning, and the report shows the loss.
    assert compared["eval"]["baseline"]["cases"][0]["found_in_block"] == [kayak]
    assert candidate["cases"][0]["found_in_top_k"] == candidate["cases"][0]["found_in_block"] == []
    # The target embedded the two memories and the question (and its dimension probe).
    assert 3 <= asked <= 5
    assert "use it with --dry-run" in misused
    store = open_store(resolve_settings(str(db_path), {}), create=False)
    try:
        assert store.embedding_signature() == EmbeddingSignature(LOCAL_MODEL_ID, 384)
        assert store.next_vectors.target() is None
    finally:
        store.close()

    assert cli.ok("eval", "remove", cases[0]["id"][:8]).startswith(f"removed {cases[0]['id']}")
    assert cli.ok("eval", "list").startswith("no evaluation cases")
