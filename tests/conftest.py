"""Shared fixtures: one real embedder per test session, fresh stores per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from memoryd.wiring import open_service
from tests.pg import TestPostgres

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def embedder() -> LocalMiniLM:
    """The real local MiniLM model, loaded once for the whole run."""
    model = LocalMiniLM()
    model.embed(["warm up"])
    return model


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> TestPostgres:
    """One PostgreSQL (with pgvector) for the whole run; never skipped."""
    return TestPostgres.start(tmp_path_factory.mktemp("postgres"))


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty store location, once a SQLite file and once a PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
        return
    server: TestPostgres = request.getfixturevalue("postgres_server")
    url = server.create_database()
    try:
        yield url
    finally:
        server.drop_database(url)


@pytest.fixture
def make_service(tmp_path: Path, embedder: LocalMiniLM) -> Iterator[Callable[..., MemoryService]]:
    """Open services on fresh SQLite stores under tmp_path; all closed after the test."""
    opened: list[MemoryService] = []

    def factory(name: str = "memoryd.db") -> MemoryService:
        service = open_service(resolve_settings(str(tmp_path / name), {}), embedder=embedder)
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()


@pytest.fixture
def service(make_service: Callable[..., MemoryService]) -> MemoryService:
    """A service over a fresh store."""
    return make_service()
