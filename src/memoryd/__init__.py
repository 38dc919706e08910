"""memoryd: the long-term memory layer of a self-hosted AI assistant.

``memoryd.open(path)`` returns the service object (a :class:`MemoryService`); ``Client`` talks to
``memoryd serve``; every error is a :class:`MemorydError`. Nothing is loaded at import time: the
service and the client are imported when first named.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.errors import (
    AmbiguousIdError,
    ConsolidationBusyError,
    CredentialRefusedError,
    DocumentNotFoundError,
    EmbeddingUnavailableError,
    EvalCaseNotFoundError,
    ExtractionFailedError,
    ExtractionOffError,
    InvalidInputError,
    InvalidOperationError,
    MemorydError,
    MemoryNotFoundError,
    ProposalBatchError,
    StoreDamagedError,
    StoreFullError,
    StoreMismatchError,
    StoreNotAnsweringError,
    StoreUnavailableError,
    SyncSourceNotFoundError,
)
from memoryd.memory.model import Actor, Importance, Kind, Memory, Source, Status

if TYPE_CHECKING:
    from memoryd.client import ApiError, Client
    from memoryd.memory.promotion_policy import PromotionPolicy
    from memoryd.providers.embedder import Embedder
    from memoryd.service import MemoryService

__version__ = "0.1.0"
__all__ = [
    "Actor",
    "AmbiguousIdError",
    "ApiError",
    "Client",
    "ConsolidationBusyError",
    "CredentialRefusedError",
    "DocumentNotFoundError",
    "EmbeddingUnavailableError",
    "EvalCaseNotFoundError",
    "ExtractionFailedError",
    "ExtractionOffError",
    "Importance",
    "InvalidInputError",
    "InvalidOperationError",
    "Kind",
    "Memory",
    "MemoryNotFoundError",
    "MemoryService",
    "MemorydError",
    "ProposalBatchError",
    "Source",
    "Status",
    "StoreDamagedError",
    "StoreFullError",
    "StoreMismatchError",
    "StoreNotAnsweringError",
    "StoreUnavailableError",
    "SyncSourceNotFoundError",
    "open",
]

# Named here, imported on first use: the service pulls in storage and the models, the client httpx.
_LAZY = {
    "MemoryService": "memoryd.service",
    "Client": "memoryd.client",
    "ApiError": "memoryd.client",
}


def __getattr__(name: str) -> object:
    """``memoryd.MemoryService`` and ``memoryd.Client``, imported when first asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'memoryd' has no attribute {name!r}")


def open(
    path_or_url: str | Path | None = None,
    *,
    embedder: Embedder | None = None,
    policy: PromotionPolicy | None = None,
    create: bool = True,
) -> MemoryService:
    """Open (or create) a store and return the service object.

    ``path_or_url`` is a file path; ``None`` uses ``MEMORYD_DB``, else ``db`` in
    ``$MEMORYD_HOME/memoryd.toml``, else the file under ``MEMORYD_HOME``. The embedder and the
    LLM routes are the ones memoryd.toml and the environment configure (MiniLM by default).
    """
    from memoryd.config.settings import resolve_settings
    from memoryd.wiring import open_service

    settings = resolve_settings(str(path_or_url) if path_or_url is not None else None)
    return open_service(settings, embedder=embedder, policy=policy, create=create)
