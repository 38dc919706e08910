"""The project's exceptions: one root, each message says what is wrong in words that fit every
surface (Python, CLI, HTTP, MCP); each surface adds its own hint (a CLI option, a route)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class MemorydError(Exception):
    """Root of every error memoryd raises on purpose; its message is meant for the user."""

    def __init__(self, message: str, *, fields: Sequence[str] = ()) -> None:
        super().__init__(message)
        # The arguments at fault, by their Python and HTTP names; the CLI shows them as options.
        self.fields = tuple(fields)


class StoreUnavailableError(MemorydError):
    """The store cannot be opened: missing, unreadable, or not a memoryd store."""


class StoreDamagedError(StoreUnavailableError):
    """The store file is damaged; memoryd refuses to use it and leaves it as it is."""

    def __init__(self, path: Path, finding: str) -> None:
        # SQLite's integrity report may run over several lines; an error is one line.
        finding = " ".join(finding.split())
        super().__init__(
            f"store {path} is damaged: {finding}. memoryd will not open it and has not "
            "changed it; restore the last good backup with `memoryd restore BACKUP --force` "
            "(stop memoryd first; the damaged file is kept beside it as *.damaged-…), or "
            "copy the file away to inspect it"
        )
        self.path = path
        self.finding = finding


class StoreNotAnsweringError(StoreUnavailableError):
    """The database server stopped answering (down, restarting, or the connection was cut):
    the operation was not acknowledged, and memoryd reconnects by itself when the server is
    back. (A write cut off during its commit may still have been stored.)"""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        # Seconds a caller should wait before trying again (HTTP ``Retry-After``).
        self.retry_after = retry_after


class StoreMismatchError(MemorydError):
    """The store was built with another embedding model or dimension."""


class MemoryNotFoundError(MemorydError):
    """No memory has the given id."""


class InvalidOperationError(MemorydError):
    """The operation does not apply to the memory in its current state."""


class InvalidInputError(MemorydError):
    """Input from the user or the model is malformed; nothing was stored."""


class ProposalBatchError(InvalidInputError):
    """A proposal batch broke the strict contract; the whole batch was rejected."""

    def __init__(self, message: str, *, item: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.item = item
        self.field = field


class CredentialRefusedError(InvalidInputError):
    """The text looks like a credential, which memoryd never stores."""


class EmbeddingUnavailableError(MemorydError):
    """The embedding model could not be loaded or reached."""


class ExtractionOffError(MemorydError):
    """No LLM is configured for extraction."""


class ExtractionFailedError(MemorydError):
    """An extraction job did not complete."""


class ConsolidationBusyError(MemorydError):
    """Another consolidation run holds the store's lease."""


class DocumentNotFoundError(InvalidInputError):
    """No knowledge-base document with that id."""


class AmbiguousIdError(MemorydError):
    """A shortened id starts more than one memory or document; the message lists them."""


class StoreFullError(MemorydError):
    """The disk memoryd writes to is full; the write was undone, and the next one after space
    is freed succeeds without a restart."""

    def __init__(self, path: Path, free_bytes: int | None) -> None:
        free = "free space unknown" if free_bytes is None else f"{free_bytes} bytes free"
        super().__init__(
            f"the disk holding {path} is full ({free}): free space, then retry; nothing was changed"
        )
        self.path = path
        self.free_bytes = free_bytes


class EvalCaseNotFoundError(MemorydError):
    """No evaluation case has the given id."""


class SyncSourceNotFoundError(InvalidInputError):
    """No synced source has that id or location."""
