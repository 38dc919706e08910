"""The int8-products query model (issue 28): what recall embeds runs on integer products,
built once from the shipped MiniLM file into memoryd's home, hash-checked, rebuilt when
damaged, and a clear error when it cannot be built."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from memoryd.errors import EmbeddingUnavailableError
from memoryd.providers import query_model
from memoryd.providers.embedder import LOCAL_MODEL_ID, LocalMiniLM, query_side
from memoryd.providers.remote_embedder import configured_embedder
from memoryd.recall.legs import QueryEmbedder

MESSAGE = "Where did Caroline go hiking last summer? And who came along?"
SENTENCES = ["Where did Caroline go hiking last summer?", "And who came along?"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the built query model (built once for the module)."""
    folder = tmp_path_factory.mktemp("models")
    LocalMiniLM(query_models=folder).for_queries().embed(["warm up"])
    return folder


def _model_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.onnx"))


def test_recall_embeds_the_message_with_integer_products(
    built: Path, embedder: LocalMiniLM
) -> None:
    local = LocalMiniLM(query_models=built)
    queries = QueryEmbedder(lambda: local)
    asked = queries.embed([MESSAGE])[0]
    sentences = queries.embed(SENTENCES)
    stored = embedder.embed([MESSAGE])[0]
    # The model recall ran multiplies int8 by int8: no float product left in its weights.
    (model_file,) = _model_files(built)
    operators = {node.op_type for node in onnx.load(str(model_file)).graph.node}
    assert "MatMulInteger" in operators
    assert np.array_equal(asked, local.for_queries().embed([MESSAGE])[0])
    assert np.array_equal(sentences, local.for_queries().embed(SENTENCES))
    # Other vectors than the shipped model's, close enough to compare with the stored ones.
    assert not np.array_equal(asked, stored)
    assert float(asked @ stored) > 0.98
    assert np.allclose(np.linalg.norm(sentences, axis=1), 1.0, atol=1e-5)
    # Stored vectors stay the shipped model's: the same id, no re-embedding.
    assert queries.model == local.for_queries().model == LOCAL_MODEL_ID
    assert np.array_equal(local.embed([MESSAGE])[0], stored)


@pytest.mark.parametrize("vnni", [True, False], ids=["vnni", "avx2-only"])
def test_the_settings_turn_it_on_by_default_with_vnni_and_by_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vnni: bool
) -> None:
    monkeypatch.setattr(query_model, "int8_queries_by_default", lambda: vnni)
    default = configured_embedder(tmp_path, {})
    assert isinstance(default, LocalMiniLM)
    assert (query_side(default) is not default) == vnni
    assert query_side(default) is query_side(default)
    on = configured_embedder(tmp_path, {"MEMORYD_EMBED_INT8_QUERIES": "on"})
    assert query_side(on) is not on
    off = configured_embedder(tmp_path, {"MEMORYD_EMBED_INT8_QUERIES": "off"})
    assert query_side(off) is off
    # Nothing is built until a query is embedded.
    assert not (tmp_path / "models").exists()


def test_the_built_model_is_kept_and_a_damaged_one_rebuilt(built: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    shutil.copytree(built, folder)
    (model_file,) = _model_files(folder)
    kept = model_file.stat().st_mtime_ns
    LocalMiniLM(query_models=folder).for_queries().embed([MESSAGE])
    assert model_file.stat().st_mtime_ns == kept  # reused, not rebuilt

    whole = model_file.read_bytes()
    model_file.write_bytes(whole[: len(whole) // 2])  # a copy cut short
    vector = LocalMiniLM(query_models=folder).for_queries().embed([MESSAGE])[0]
    assert model_file.read_bytes() == whole
    assert query_model.digest_file(model_file).read_text().strip() == query_model.file_digest(
        model_file
    )
    again = LocalMiniLM(query_models=built).for_queries().embed([MESSAGE])[0]
    assert np.array_equal(vector, again)
    # Nothing of the build is left beside the model.
    assert sorted(p.name for p in folder.iterdir()) == [
        model_file.name,
        query_model.digest_file(model_file).name,
    ]


def test_a_model_that_cannot_be_built_says_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    with pytest.raises(EmbeddingUnavailableError, match=r"onnxruntime.quantization.*int8_queries"):
        LocalMiniLM(query_models=tmp_path / "a").for_queries().embed([MESSAGE])
    monkeypatch.undo()

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    queries = LocalMiniLM(query_models=blocked).for_queries()
    with pytest.raises(EmbeddingUnavailableError, match=r"could not build.*int8_queries off"):
        queries.embed([MESSAGE])
    # The process does not try the build again at every recall: the same error at once.
    tried: list[Path] = []
    monkeypatch.setattr(query_model, "_build", lambda source, target: tried.append(target))
    with pytest.raises(EmbeddingUnavailableError, match=r"could not build"):
        queries.embed([MESSAGE])
    assert tried == []
