"""What ``memoryd reembed`` builds before it sends anything: the target embedder from the
command's options over memoryd.toml and the environment, and the progress line it prints."""

from __future__ import annotations

import io
from pathlib import Path

from memoryd.cli.reembed import ProgressLine
from memoryd.ops.reembed import ReembedProgress
from memoryd.providers.embedder import LOCAL_MODEL_ID, LocalMiniLM
from memoryd.providers.remote_embedder import OpenAICompatibleEmbedder, embedder_with


def _configured(home: Path) -> None:
    key_file = home / "key"
    key_file.write_text("sk-kept\n")
    (home / "memoryd.toml").write_text(
        '[embed]\nbase_url = "http://localhost:11434/v1"\nmodel = "nomic-embed-text"\n'
        f'api_key_file = "{key_file}"\nbatch_size = 16\n'
    )


def test_a_new_model_keeps_the_files_key_and_batch_size(tmp_path: Path) -> None:
    _configured(tmp_path)
    target = embedder_with(tmp_path, {"model": "mxbai-embed-large"}, {})
    assert isinstance(target, OpenAICompatibleEmbedder)
    assert target.model == "mxbai-embed-large"
    assert target.settings.base_url == "http://localhost:11434/v1"
    assert (target.settings.api_key, target.settings.batch_size) == ("sk-kept", 16)


def test_a_base_url_alone_turns_a_local_home_into_an_endpoint(tmp_path: Path) -> None:
    target = embedder_with(
        tmp_path,
        {"model": "bge-m3", "base_url": "http://127.0.0.1:8080/v1", "dimensions": "1024"},
        {},
    )
    assert isinstance(target, OpenAICompatibleEmbedder)
    assert (target.settings.base_url, target.settings.dimensions) == (
        "http://127.0.0.1:8080/v1",
        1024,
    )


def test_local_names_the_bundled_model_even_when_an_endpoint_is_configured(
    tmp_path: Path,
) -> None:
    _configured(tmp_path)
    assert isinstance(embedder_with(tmp_path, {"model": "local"}, {}), LocalMiniLM)
    assert isinstance(embedder_with(tmp_path, {"model": LOCAL_MODEL_ID}, {}), LocalMiniLM)


def test_the_environment_loses_to_the_commands_options(tmp_path: Path) -> None:
    environ = {"MEMORYD_EMBED_MODEL": "from-env", "MEMORYD_EMBED_BASE_URL": "http://env/v1"}
    target = embedder_with(tmp_path, {"model": "from-option"}, environ)
    assert isinstance(target, OpenAICompatibleEmbedder)
    assert (target.model, target.settings.base_url) == ("from-option", "http://env/v1")


def test_the_progress_line_gives_count_rate_and_time_left() -> None:
    out = io.StringIO()
    line = ProgressLine(out, redraw=False)
    line.update(ReembedProgress(done=1280, total=10_000, embedded=1000, seconds=4.0))
    assert out.getvalue() == "re-embedding 1280/10000 texts, 250.0 texts/s, 35 s left\n"
    for _ in range(9):
        line.update(ReembedProgress(done=1300, total=10_000, embedded=1020, seconds=4.1))
    # Not a terminal: a line per tenth batch, so a log is not flooded.
    assert out.getvalue().count("\n") == 1
    line.close()
    assert out.getvalue().count("\n") == 1


def test_on_a_terminal_the_line_is_redrawn_in_place_and_ended_once() -> None:
    out = io.StringIO()
    line = ProgressLine(out, redraw=True)
    line.update(ReembedProgress(done=0, total=50, embedded=0, seconds=0.0))
    line.update(ReembedProgress(done=25, total=50, embedded=25, seconds=5.0))
    assert out.getvalue() == (
        "\r\x1b[2Kre-embedding 0/50 texts\r\x1b[2Kre-embedding 25/50 texts, 5.0 texts/s, 5.0 s left"
    )
    line.close()
    line.close()
    assert out.getvalue().endswith("left\n") and out.getvalue().count("\n") == 1
