"""Whether a server runs for a home: ``memoryd serve`` writes ``$MEMORYD_HOME/serve.json``
(its pid, address and store) once it listens and removes it when it stops; ``memoryd status``
and ``memoryd config set`` read it. A record whose process is gone (a server killed with
SIGKILL) is reported as stale, never as running."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RECORD_FILE = "serve.json"


@dataclass(frozen=True)
class ServerRecord:
    """A running ``memoryd serve``: its process, its page address and its store."""

    pid: int
    url: str
    # The store's location, its password masked.
    db: str
    started_at: str

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        return asdict(self)


@dataclass(frozen=True)
class ServerState:
    """What the record in a home says, and whether its process is alive."""

    record: ServerRecord | None
    alive: bool

    def to_json(self) -> dict[str, Any]:
        """JSON shape: ``running``, and the record (``stale`` when its process is gone)."""
        if self.record is None:
            return {"running": False}
        return {"running": self.alive, "stale": not self.alive, **self.record.to_json()}


def record_path(home: Path) -> Path:
    """Where the record lives."""
    return home / RECORD_FILE


def write_record(home: Path, record: ServerRecord) -> Path:
    """Write the record (replacing any other in one rename)."""
    from memoryd.config.settings_file import write_atomically

    path = record_path(home)
    write_atomically(path, json.dumps(record.to_json(), indent=2) + "\n", 0o600)
    return path


def remove_record(home: Path, pid: int) -> None:
    """Remove the record if it is still ``pid``'s (another server may have replaced it)."""
    state = read_record(home)
    if state.record is not None and state.record.pid == pid:
        record_path(home).unlink(missing_ok=True)


def read_record(home: Path) -> ServerState:
    """The record in ``home`` (none, or unreadable: no server) and whether its process lives."""
    try:
        data = json.loads(record_path(home).read_text(encoding="utf-8"))
        record = ServerRecord(
            pid=int(data["pid"]),
            url=str(data["url"]),
            db=str(data["db"]),
            started_at=str(data["started_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return ServerState(None, False)
    return ServerState(record, process_alive(record.pid))


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process that is memoryd (where /proc can tell)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    try:
        return b"memoryd" in cmdline.read_bytes()
    except OSError:
        return True
