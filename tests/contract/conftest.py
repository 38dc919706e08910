"""Backends for the contract suite: every test here runs once per storage backend.

Tests ask for ``backend`` (or just ``service``) and never touch backend-specific objects, so a
PostgreSQL backend can join ``BACKENDS`` without changing a single test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from memoryd.wiring import open_service
from tests.kb_corpus import write_corpus
from tests.pg import TestPostgres

from .kb_support import FORMATS, NOW, Corpus

BACKENDS = ["sqlite", "postgres"]


@dataclass
class Backend:
    """Opens fresh, empty stores of one backend and can show everything it put on disk."""

    name: str
    open_fresh: Callable[[], MemoryService]
    persisted_bytes: Callable[[], bytes]
    opened: list[MemoryService] = field(default_factory=list)
    cleanup: Callable[[], None] = lambda: None

    def close_all(self) -> None:
        """Close every service this backend opened (closing twice is harmless)."""
        for service in self.opened:
            service.close()


def _sqlite_backend(directory: Path, embedder: LocalMiniLM) -> Backend:
    paths: list[Path] = []
    opened: list[MemoryService] = []

    def open_fresh() -> MemoryService:
        path = directory / f"store-{len(paths)}.db"
        paths.append(path)
        # The process environment gives the LLM routes (tests set them with monkeypatch).
        service = open_service(resolve_settings(str(path)), embedder=embedder)
        opened.append(service)
        return service

    def persisted_bytes() -> bytes:
        # The main file plus any write-ahead log and shared-memory file beside it.
        return b"".join(
            sibling.read_bytes()
            for path in paths
            for sibling in sorted(directory.glob(path.name + "*"))
        )

    return Backend("sqlite", open_fresh, persisted_bytes, opened)


def _postgres_backend(server: TestPostgres, embedder: LocalMiniLM) -> Backend:
    urls: list[str] = []
    opened: list[MemoryService] = []

    def open_fresh() -> MemoryService:
        url = server.create_database()
        urls.append(url)
        # The process environment gives the LLM routes (tests set them with monkeypatch).
        service = open_service(resolve_settings(url), embedder=embedder)
        opened.append(service)
        return service

    def persisted_bytes() -> bytes:
        return b"".join(server.persisted_bytes(url) for url in urls)

    def drop_all() -> None:
        for url in urls:
            server.drop_database(url)

    return Backend("postgres", open_fresh, persisted_bytes, opened, cleanup=drop_all)


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalMiniLM
) -> Iterator[Backend]:
    """One storage backend; its stores are closed (and dropped) after the test."""
    if request.param == "sqlite":
        chosen = _sqlite_backend(tmp_path, embedder)
    elif request.param == "postgres":
        chosen = _postgres_backend(request.getfixturevalue("postgres_server"), embedder)
    else:  # pragma: no cover - a new backend must be wired here
        raise AssertionError(f"unknown backend {request.param}")
    yield chosen
    chosen.close_all()
    chosen.cleanup()


@pytest.fixture
def service(backend: Backend) -> MemoryService:
    """A service over a fresh, empty store of the current backend."""
    return backend.open_fresh()


@pytest.fixture(scope="package")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder: LocalMiniLM) -> Iterator[Corpus]:
    """Every format of tests/kb_corpus.py ingested into one store (about 40 s, OCR included),
    once for the whole contract suite: the test_kb_* modules only read it."""
    directory = tmp_path_factory.mktemp("kb-corpus")
    samples = write_corpus(directory / "docs")
    service = open_service(resolve_settings(str(directory / "kb.db"), {}), embedder=embedder)
    try:
        results = service.kb.ingest([samples[key].path for key in FORMATS], now=NOW)
        by_source = {r.source: r for r in results}
        yield Corpus(
            service,
            samples,
            {key: by_source[str(samples[key].path.resolve())] for key in FORMATS},
        )
    finally:
        service.close()
