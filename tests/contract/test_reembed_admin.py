"""``memoryd reembed`` reaches the store through its sub-facade (``wiring.reembed_admin``), on
both backends: it opens a store a service would refuse (the configured model is the target),
plans, and when Ctrl-C stops a run it says what was kept and the model the store still uses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.cli import reembed as reembed_cli
from memoryd.config.settings import resolve_settings
from memoryd.errors import StoreMismatchError
from memoryd.ops.reembed import ReembedError, ReembedProgress
from memoryd.providers.embedder import LOCAL_MODEL_ID, LocalMiniLM
from memoryd.wiring import open_service, reembed_admin
from tests.fake_embeddings import FakeEmbeddingServer

from .test_reembed import endpoint, populated


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dimension=768) as server:
        yield server


def test_a_stopped_run_says_what_it_kept_and_a_rerun_switches(
    location: str,
    embedder: LocalMiniLM,
    fake: FakeEmbeddingServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    populated(location, embedder, tmp_path)
    settings = resolve_settings(location, {})
    target = endpoint(fake)
    target.expect(768)

    def interrupted(self: object, progress: ReembedProgress) -> None:
        raise KeyboardInterrupt

    with reembed_admin(settings) as admin:
        plan = admin.plan(target, batch_size=16)
        assert (plan.memories, plan.chunks, plan.already) == (5, 2, 0)
        with monkeypatch.context() as patched:
            patched.setattr(reembed_cli.ProgressLine, "update", interrupted)
            with pytest.raises(ReembedError) as stopped:
                reembed_cli._run(admin, target)
        assert str(stopped.value) == (
            f"stopped: 5 of 7 new vectors are kept and the store still uses {LOCAL_MODEL_ID!r}; "
            "run `memoryd reembed` again to resume"
        )
        # The memories' batch was committed before the interrupt; the chunks' was not.
        assert admin.kept() == (5, 7)
        assert admin.plan(target, batch_size=16).already == 5
        result = admin.run(target)
        assert (result.resumed, result.embedded) == (5, 2)
        assert admin.store_model() == fake.model

    # A service configured with the old model now refuses the store; the re-embed's facade
    # still opens it, so moving back is possible.
    with pytest.raises(StoreMismatchError):
        open_service(settings, embedder=embedder)
    with reembed_admin(settings) as admin:
        assert admin.store_model() == fake.model
        assert admin.plan(embedder, batch_size=16).texts == 7
