"""Embeddings from an OpenAI-compatible endpoint, run as the real executable against a loopback
server with deterministic 768-dimension vectors: init, remember, recall, KB ingest and search;
an endpoint that fails then recovers; a wrong dimension; the model guard; ``memoryd.toml``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_embeddings import FakeEmbeddingServer

from .conftest import Cli


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dimension=768) as running:
        yield running


@pytest.fixture
def remote(cli: Cli, server: FakeEmbeddingServer) -> Cli:
    return Cli(env={**cli.env, **server.env()}, cwd=cli.cwd)


def _memory_count(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])


def test_init_remember_recall_and_the_knowledge_base_on_the_endpoint(
    remote: Cli, server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    remote.ok("init")
    checks = {check["name"]: check for check in remote.json("doctor")}
    assert checks["embedder"]["ok"]
    assert checks["embedder"]["detail"] == f"fake-embed at {server.base_url}, 768 dimensions"

    remote.ok("remember", "The owner rides a blue Brompton bike to the harbour office")
    remote.ok("remember", "The owner's sister Ines lives in Porto")
    block = remote.ok("recall", "Which bike does the owner ride to the harbour office?")
    items = [line for line in block.splitlines() if line.startswith("- ")]
    assert items and "Brompton" in items[0]

    notes = tmp_path / "tides.md"
    notes.write_text(
        "# Harbour Notes\n\n## Tides\n\nThe spring tide at the harbour peaks at dawn in March.\n"
    )
    remote.ok("kb", "ingest", str(notes))
    found = remote.json("kb", "search", "spring tide harbour dawn", "--explain")["results"]
    assert found and "spring tide" in found[0]["content"]
    assert server.texts > 0


def test_an_endpoint_that_fails_refuses_the_write_cleanly_then_recovers(
    remote: Cli, server: FakeEmbeddingServer, db_path: Path
) -> None:
    remote.ok("init")
    before = _memory_count(db_path)
    server.fail(1)
    message = remote.fails("remember", "The owner's boat is called Maré")
    assert "embeddings endpoint" in message and "503" in message
    assert _memory_count(db_path) == before

    remote.ok("remember", "The owner's boat is called Maré")
    assert _memory_count(db_path) == before + 1
    assert "Maré" in remote.ok("recall", "What is the owner's boat called?")


def test_a_wrong_dimension_is_a_clear_error_and_stores_nothing(
    remote: Cli, server: FakeEmbeddingServer, db_path: Path
) -> None:
    remote.ok("init")
    before = _memory_count(db_path)
    server.answer_dimension = 512
    message = remote.fails("remember", "The owner plays the cello")
    assert "512-dimension" in message and "768" in message
    assert _memory_count(db_path) == before


def test_a_store_built_with_the_endpoint_refuses_the_local_model(remote: Cli, cli: Cli) -> None:
    remote.ok("init")
    message = cli.fails("recall", "anything")
    assert "fake-embed" in message and "all-MiniLM" in message


def test_the_settings_file_configures_every_command(
    cli: Cli, server: FakeEmbeddingServer, clean_env: dict[str, str]
) -> None:
    home = Path(cli.env["MEMORYD_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "memoryd.toml").write_text(
        f'[embed]\nbase_url = "{server.base_url}"\nmodel = "fake-embed"\nmax_retries = 0\n'
    )
    cli.ok("init")
    cli.ok("remember", "The owner's allotment is plot 14")
    assert "plot 14" in cli.ok("recall", "Which plot is the owner's allotment?")
    assert server.requests >= 2


def test_a_broken_setting_names_itself(cli: Cli) -> None:
    message = cli.fails("init", env={"MEMORYD_EMBED_MODEL": "m", "MEMORYD_EMBED_TIMEOUT": "soon"})
    assert "timeout" in message and "MEMORYD_EMBED_TIMEOUT" in message
