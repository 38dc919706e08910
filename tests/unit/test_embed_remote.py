"""The OpenAI-compatible embedder and its settings, against the loopback fake server: where
the settings come from, batching, normalisation, the checks on every answer, the query cache,
and a document ingested while the endpoint is down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memoryd.config.settings import SettingsError, resolve_settings, setting_values
from memoryd.errors import EmbeddingUnavailableError
from memoryd.kb.vector_fill import EMBED_JOB_KIND
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.remote_embedder import (
    EmbedConfigError,
    EmbedSettings,
    OpenAICompatibleEmbedder,
    configured_embedder,
    embed_settings_of,
)
from memoryd.wiring import open_service
from tests.fake_embeddings import FakeEmbeddingServer


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dimension=768) as running:
        yield running


def _embedder(server: FakeEmbeddingServer, **extra: object) -> OpenAICompatibleEmbedder:
    settings = EmbedSettings(
        model=server.model, base_url=server.base_url, max_retries=0, timeout=5.0
    )
    return OpenAICompatibleEmbedder(EmbedSettings(**{**settings.__dict__, **extra}))


def load_embed_settings(home: Path, environ: dict[str, str]) -> EmbedSettings | None:
    """The embedding settings under ``home`` with ``environ``, as memoryd reads them."""
    return embed_settings_of(setting_values({**environ, "MEMORYD_HOME": str(home)}))


def test_without_settings_memoryd_embeds_locally(tmp_path: Path) -> None:
    assert load_embed_settings(tmp_path, {}) is None
    assert isinstance(configured_embedder(tmp_path, {}), LocalMiniLM)
    assert load_embed_settings(tmp_path, {"MEMORYD_EMBED_PROVIDER": "local"}) is None


def test_the_file_gives_settings_and_the_environment_wins(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-from-file\n")
    (tmp_path / "memoryd.toml").write_text(
        '[embed]\nbase_url = "http://localhost:11434/v1"\nmodel = "nomic-embed-text"\n'
        f'api_key_file = "{key_file}"\ndimensions = 256\nbatch_size = 16\n'
    )
    found = load_embed_settings(tmp_path, {"MEMORYD_EMBED_MODEL": "bge-m3"})
    assert found == EmbedSettings(
        model="bge-m3",
        base_url="http://localhost:11434/v1",
        api_key="sk-from-file",
        dimensions=256,
        batch_size=16,
    )
    assert "sk-from-file" not in repr(found) and "sk-from-file" not in found.describe()


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({"MEMORYD_EMBED_PROVIDER": "cohere"}, ["cohere", "'local'", "'openai'"]),
        ({"MEMORYD_EMBED_PROVIDER": "openai"}, ["no model", "MEMORYD_EMBED_MODEL"]),
        ({"MEMORYD_EMBED_MODEL": "m", "MEMORYD_EMBED_BATCH_SIZE": "lots"}, ["batch_size"]),
        (
            {"MEMORYD_EMBED_MODEL": "m", "MEMORYD_EMBED_API_KEY_FILE": "/nonexistent/key"},
            ["/nonexistent/key"],
        ),
    ],
)
def test_bad_settings_name_what_to_fix(
    tmp_path: Path, environ: dict[str, str], words: list[str]
) -> None:
    with pytest.raises(EmbedConfigError) as caught:
        load_embed_settings(tmp_path, environ)
    assert all(word in str(caught.value) for word in words)


def test_a_broken_settings_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "memoryd.toml").write_text("[embed\nmodel = 1")
    with pytest.raises(SettingsError, match=r"memoryd.toml"):
        load_embed_settings(tmp_path, {})


def test_vectors_come_back_normalised_in_order_in_bounded_batches(
    server: FakeEmbeddingServer,
) -> None:
    embedder = _embedder(server, batch_size=3)
    texts = [f"text number {n} about tides" for n in range(7)]
    matrix = embedder.embed(texts)
    assert matrix.shape == (7, 768)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0)
    assert server.requests == 3  # 3 + 3 + 1
    again = embedder.embed([texts[4]])
    assert np.allclose(again[0], matrix[4])
    assert embedder.dimension == 768


def test_the_dimension_is_asked_once_unless_the_store_or_settings_say_it(
    server: FakeEmbeddingServer,
) -> None:
    probed = _embedder(server)
    assert probed.dimension == 768 and server.requests == 1
    assert probed.dimension == 768 and server.requests == 1
    told = _embedder(server)
    told.expect(768)
    assert told.dimension == 768 and server.requests == 1
    configured = _embedder(server, dimensions=256)
    assert configured.dimension == 256
    assert configured.embed(["one"]).shape == (1, 256)


def test_a_wrong_dimension_or_a_failure_is_a_clear_error(server: FakeEmbeddingServer) -> None:
    embedder = _embedder(server)
    embedder.expect(768)
    server.answer_dimension = 512
    with pytest.raises(EmbeddingUnavailableError, match="512-dimension vectors, but 768"):
        embedder.embed(["x"])
    server.answer_dimension = None
    server.fail(1, status=401)
    with pytest.raises(EmbeddingUnavailableError, match=r"401.*MEMORYD_EMBED_API_KEY"):
        embedder.embed(["x"])
    unknown = OpenAICompatibleEmbedder(
        EmbedSettings(model="other", base_url=server.base_url, max_retries=0)
    )
    with pytest.raises(EmbeddingUnavailableError, match=r"404.*model name"):
        unknown.embed(["x"])
    nowhere = OpenAICompatibleEmbedder(
        EmbedSettings(model="m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    )
    with pytest.raises(EmbeddingUnavailableError, match=r"cannot reach.*server running"):
        nowhere.embed(["x"])


def test_the_same_message_recalled_twice_embeds_once(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    service = open_service(resolve_settings(str(tmp_path / "s.db"), {}), embedder=_embedder(server))
    try:
        service.remember("The owner's kayak is yellow")
        service.recall("What colour is the owner's kayak?")
        asked = server.texts
        service.recall("What colour is the owner's kayak?")
        assert server.texts == asked
    finally:
        service.close()


def test_a_document_ingested_while_the_endpoint_is_down_is_searchable_then_filled(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    service = open_service(resolve_settings(str(tmp_path / "s.db"), {}), embedder=_embedder(server))
    try:
        notes = tmp_path / "notes.md"
        notes.write_text("# Tides\n\nThe spring tide at the harbour peaks at dawn in March.\n")
        asked = server.texts  # the new store asked the endpoint its dimension
        result = service.kb.ingest([notes], wait=False)[0]
        assert result.outcome == "ok" and result.document is not None
        document = result.document
        assert server.texts == asked  # the chunks are written without a call
        hits = service.kb.search("spring tide harbour dawn").hits
        assert hits and hits[0].document.id == document.id
        server.fail(1)
        reports = service.kb.run_vector_jobs()
        assert [r.embedded for r in reports] == [0]  # the endpoint failed: retried later
        jobs = [j for j in service.store.jobs.recent(10) if j.kind == EMBED_JOB_KIND]
        assert [j.status.value for j in jobs] == ["queued"] and jobs[0].attempts == 1
        assert service.kb.get(document.id).embedded_chunks == 0
        filled = service.kb.fill_vectors(document.id)
        assert filled.embedded_chunks == filled.chunk_count > 0
    finally:
        service.close()
