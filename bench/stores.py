"""Opening a benchmark's store and the service over it, with the store kept in hand.

Benchmarks that fill a store straight through the records protocol, count its rows or read a
document's chunks hold the store they opened instead of reaching into ``service.store``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import moved_modules  # noqa: F401  (an old checkout's modules under today's paths)

from memoryd.config.settings import resolve_settings
from memoryd.ids import IdGenerator
from memoryd.providers.embedder import Embedder, LocalMiniLM
from memoryd.providers.llm import Gateway, load_routes
from memoryd.service import MemoryService
from memoryd.storage.protocols import Store
from memoryd.wiring import open_store

# memoryd's home for the benchmarks' services (no settings file: every default), where the
# local model's int8 query model is built once.
BENCH_HOME = Path(os.environ.get("MEMORYD_BENCH_HOME", "/tmp/memoryd-bench-home"))


def served_local_model() -> LocalMiniLM:
    """The local MiniLM as a service gets it from default settings (the checkout's own
    defaults: since lat18 its queries on the int8 query model, kept in :data:`BENCH_HOME`)."""
    from memoryd.providers.remote_embedder import configured_embedder

    embedder = configured_embedder(BENCH_HOME, {})
    assert isinstance(embedder, LocalMiniLM)
    return embedder


def open_with_store(
    where: str,
    *,
    embedder: Embedder | None = None,
    gateway: Gateway | None = None,
    environ: Mapping[str, str] | None = None,
    ids: IdGenerator | None = None,
) -> tuple[Store, MemoryService]:
    """The store at ``where`` (a file path or a PostgreSQL URL), created if needed, and a
    service over it wired as ``memoryd.wiring.open_service`` wires one (the owner's zone, the LLM
    routes of the settings' home unless a gateway is given; ids from ``ids`` when given)."""
    settings = resolve_settings(where, environ)
    store = open_store(settings, create=True)
    # Passed only when given: an older tree's service (bench_recall --tree) takes none.
    given: dict[str, Any] = {"ids": ids} if ids is not None else {}
    try:
        service = MemoryService(
            store,
            embedder or LocalMiniLM(),
            gateway=gateway if gateway is not None else Gateway(load_routes(settings.home)),
            zone=settings.zone,
            **given,
        )
    except BaseException:
        store.close()
        raise
    return store, service


class WrappedEmbedder:
    """An embedder around another one (metered, cached…): the wrapped model's id and
    dimension; subclasses say how they embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model(self) -> str:
        """The wrapped model's id."""
        return self.inner.model

    @property
    def dimension(self) -> int:
        """The wrapped model's dimension."""
        return self.inner.dimension
