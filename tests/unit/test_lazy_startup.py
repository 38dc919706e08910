"""Start-up stays light: what opening a store and recalling from an empty one do without the
heavy parts (numpy's sqlite_vec import, the tokenizer, the embedding model). That they are not
imported at all is tests/e2e/test_cli_startup.py's."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlite_vec

from memoryd.config.settings import resolve_settings
from memoryd.memory.model import Kind
from memoryd.providers.embedder import LOCAL_DIMENSION, LOCAL_MODEL_ID, LocalMiniLM, Matrix
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.pack_policy import pack_block
from memoryd.recall.run import EMPTY_BLOCK
from memoryd.storage.sqlite_connection import sqlite_vec_extension
from memoryd.wiring import open_service

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class _CountingEmbedder:
    """The real model, counting its calls."""

    def __init__(self, model: LocalMiniLM) -> None:
        self.inner = model
        self.calls = 0

    @property
    def model(self) -> str:
        return LOCAL_MODEL_ID

    @property
    def dimension(self) -> int:
        return LOCAL_DIMENSION

    def embed(self, texts: list[str]) -> Matrix:
        self.calls += 1
        return self.inner.embed(texts)


def test_the_extension_path_is_the_one_the_sqlite_vec_package_names() -> None:
    assert Path(sqlite_vec_extension()) == Path(sqlite_vec.loadable_path())


def test_the_block_recall_skips_packing_for_is_the_one_packing_nothing_gives() -> None:
    for budget in (0, 1500):
        assert pack_block([], [], O200kTokenizer(), budget) == EMPTY_BLOCK


@pytest.mark.parametrize("operation", ["recall", "search"])
def test_an_empty_store_is_searched_without_embedding_the_query(
    tmp_path: Path, embedder: LocalMiniLM, operation: str
) -> None:
    counting = _CountingEmbedder(embedder)
    service = open_service(resolve_settings(str(tmp_path / "m.db"), {}), embedder=counting)
    try:
        if operation == "recall":
            result = service.recall("what do I like to drink?", now=NOW)
            assert result.text == "" and result.legs["vector"] == "empty"
        else:
            found = service.search_memory("drink", now=NOW)
            assert found.items == () and found.legs["vector"] == "empty"
        assert counting.calls == 0
        service.remember("I drink green tea every morning", kind=Kind.FACT, now=NOW)
        calls = counting.calls
        if operation == "recall":
            assert "green tea" in service.recall("what do I like to drink?", now=NOW).text
        else:
            assert service.search_memory("drink", now=NOW).items
        assert counting.calls == calls + 1
    finally:
        service.close()
