"""Settings, resolved once from arguments and the environment, then passed explicitly."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidInputError, MemorydError

DEFAULT_DB_NAME = "memoryd.db"
# The owner's settings file in $MEMORYD_HOME: [llm] routes and the [embed] endpoint.
CONFIG_FILE = "memoryd.toml"


@dataclass(frozen=True)
class Settings:
    """Where the store lives and how to reach it."""

    home: Path
    db: str
    # The owner's time zone (MEMORYD_TZ): "yesterday" and "last week" are the owner's days.
    zone: tzinfo = UTC

    @property
    def is_postgres(self) -> bool:
        """Whether the store is a PostgreSQL URL rather than a file."""
        return self.db.startswith(("postgresql://", "postgres://"))


def default_home(environ: Mapping[str, str]) -> Path:
    """``MEMORYD_HOME``, else ``$XDG_DATA_HOME/memoryd``, else ``~/.local/share/memoryd``."""
    if environ.get("MEMORYD_HOME"):
        return Path(environ["MEMORYD_HOME"]).expanduser()
    data_home = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "memoryd"


def resolve_settings(db: str | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """``--db`` beats ``MEMORYD_DB`` beats a file under ``MEMORYD_HOME``."""
    env = os.environ if environ is None else environ
    home = default_home(env)
    chosen = db or env.get("MEMORYD_DB") or str(home / DEFAULT_DB_NAME)
    if not chosen.startswith(("postgresql://", "postgres://")):
        chosen = str(Path(chosen).expanduser())
    return Settings(home=home, db=chosen, zone=owner_zone(env.get("MEMORYD_TZ")))


def owner_zone(name: str | None) -> tzinfo:
    """The IANA zone ``name`` (e.g. Europe/Lisbon), or UTC when unset."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(
            f"unknown time zone {name!r} in MEMORYD_TZ; use an IANA name such as Europe/Lisbon"
        ) from None


def config_section(home: Path, name: str, error: type[MemorydError]) -> dict[str, Any]:
    """The ``[name]`` table of ``$MEMORYD_HOME/memoryd.toml`` (empty without the file); a file
    that is not TOML, or a ``name`` that is not a table, raises ``error`` naming the file."""
    path = home / CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as problem:
        raise error(f"cannot read {path}: {problem}; fix the TOML or remove the file") from None
    section = document.get(name, {})
    if not isinstance(section, dict):
        raise error(f"{path}: [{name}] must be a table")
    return section


def api_key_of(values: Mapping[str, Any], error: type[MemorydError], whose: str) -> str | None:
    """``api_key``, else the first line of the file ``api_key_file`` names (None when neither
    is set); an unreadable file raises ``error`` naming ``whose`` key it was."""
    key = values.get("api_key")
    key_file = values.get("api_key_file")
    if not key and key_file:
        try:
            key = Path(str(key_file)).expanduser().read_text(encoding="utf-8").strip()
        except OSError as problem:
            raise error(
                f"cannot read the API key file {key_file} for {whose}: {problem.strerror}"
            ) from None
    return str(key) if key else None
