"""Why a memory waits for the owner, read from its audit trail (pure).

One rule for every surface: the review queue of the HTTP API and the CLI, and the web page."""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.memory.model import AuditEntry, Status

NO_REASON = "no reason was recorded when it was proposed"


def reason_entry(audit: Iterable[AuditEntry], memory_id: str) -> AuditEntry | None:
    """The entry that says why ``memory_id`` is pending: its ``create`` entry when that made it
    pending, else the latest entry that moved it to pending (an import, a demotion: a vouch
    that left it pending is not why it waits), else its ``create`` entry (a memory that never
    waited)."""
    own = [entry for entry in audit if entry.memory_id == memory_id]
    created = next((entry for entry in own if entry.action == "create"), None)
    if created is not None and created.to_status is Status.PENDING:
        return created
    made_pending = [
        entry
        for entry in own
        if entry.to_status is Status.PENDING and entry.from_status is not Status.PENDING
    ]
    return made_pending[-1] if made_pending else created
