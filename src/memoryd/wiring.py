"""Wiring: settings in, a ready service out. The only place that picks concrete classes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd.config.settings import Settings
from memoryd.errors import StoreDamagedError
from memoryd.jobs.model import RetryPolicy
from memoryd.kb.converted import limits_of
from memoryd.memory.keys import ROW_KEYS
from memoryd.memory.promotion_policy import PromotionPolicy
from memoryd.ops.reembed_admin import ReembedAdmin
from memoryd.providers.embedder import Embedder
from memoryd.providers.llm import Gateway, routes_of
from memoryd.providers.remote_embedder import embedder_of
from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService
from memoryd.storage.file_modes import private_home, tighten
from memoryd.storage.protocols import Store
from memoryd.storage.sqlite import SqliteStore, diagnose, refuse_damaged_file


def open_store(settings: Settings, *, create: bool) -> Store:
    """The backend for the configured location: a PostgreSQL URL or an SQLite file."""
    if settings.is_postgres:
        from memoryd.storage.postgres import PostgresStore

        return PostgresStore(settings.db, create=create, keys=ROW_KEYS)
    path = Path(settings.db)
    # Only memoryd's own home is created on demand; a typo in --db must not grow directories.
    if path.parent == settings.home and (create or settings.home.is_dir()):
        private_home(settings.home)
        tighten(None, settings.home)
    return SqliteStore(path, create=create, keys=ROW_KEYS)


@contextmanager
def reembed_admin(settings: Settings) -> Iterator[ReembedAdmin]:
    """The configured store as ``memoryd reembed`` reaches it (see ops/reembed_admin.py): opened
    without the embedder check a service makes, and closed when the command is done."""
    store = open_store(settings, create=False)
    try:
        yield ReembedAdmin(store)
    finally:
        store.close()


def refuse_damaged_store(settings: Settings) -> None:
    """For a long-running process (``serve``, ``mcp``) about to open the store: check every
    page of an SQLite store once (commands check only small stores at open, to stay quick)."""
    if not settings.is_postgres:
        refuse_damaged_file(Path(settings.db))


def store_damage(settings: Settings, error: BaseException) -> StoreDamagedError | None:
    """After the SQLite driver reported ``error`` mid-command: the damage it points at in the
    configured store's file, or None (a PostgreSQL store, or a file that checks out)."""
    if settings.is_postgres:
        return None
    return diagnose(Path(settings.db), error)


def open_service(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    policy: PromotionPolicy | None = None,
    create: bool = True,
    gateway: Gateway | None = None,
    recall_policy: RecallPolicy | None = None,
    retry_policy: RetryPolicy | None = None,
) -> MemoryService:
    """Open the store and the service over it; closes the store if the service refuses it.
    The LLM routes and the embedder come from the settings unless given."""
    gateway = gateway if gateway is not None else Gateway(routes_of(settings))
    store = open_store(settings, create=create)
    try:
        service = MemoryService(
            store,
            embedder or embedder_of(settings),
            policy=policy,
            recall_policy=recall_policy,
            gateway=gateway,
            retry_policy=retry_policy,
            zone=settings.zone,
            home=settings.home,
        )
        service.kb.limits = limits_of(settings, service.kb.limits)
        return service
    except BaseException:
        store.close()
        raise
