"""Settings, resolved once from the command line, the environment and ``memoryd.toml``, then
passed explicitly.

Every setting has a dotted key (``db``, ``tz``, ``serve.port``, ``llm.extract.model``,
``embed.base_url``, …), a line in ``$MEMORYD_HOME/memoryd.toml`` (``tz = "Europe/Lisbon"`` at the
top, ``port = 8766`` under ``[serve]``) and an environment variable (``MEMORYD_`` and the key in
capitals, dots as underscores: ``MEMORYD_SERVE_PORT``). A flag beats the environment, which beats
the file; :func:`resolve_settings` is the one place that reads them, and each value remembers
where it came from. Nothing here touches the network or the store; the file is the only I/O.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, tzinfo
from enum import IntEnum
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memoryd.config.keys import (
    CHAT_ROUTE,
    EMBED_FIELDS,
    KEYS,
    LLM_FIELDS,
    MASK,
    OPERATIONS,
    PROXY_INJECT,
    STRUCTURED,
    Key,
    SettingsError,
    is_postgres_url,
    key_summary,
    owner_zone,
    parse_switch,
    parse_value,
    unknown_key_message,
)
from memoryd.errors import MemorydError

# The keys' table and the value checks live in keys.py; callers name them from here too.
__all__ = [
    "CHAT_ROUTE",
    "CONFIG_FILE",
    "DEFAULT_DAILY_AT",
    "DEFAULT_DB_NAME",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "EMBED_FIELDS",
    "KEYS",
    "LLM_FIELDS",
    "MASK",
    "OPERATIONS",
    "PROXY_INJECT",
    "STRUCTURED",
    "Key",
    "Origin",
    "ServeSettings",
    "Setting",
    "SettingValues",
    "Settings",
    "SettingsError",
    "api_key_of",
    "default_home",
    "flatten",
    "holds_secret",
    "is_postgres_url",
    "key_source",
    "key_summary",
    "masked_location",
    "owner_zone",
    "parse_switch",
    "parse_value",
    "read_document",
    "resolve_settings",
    "setting_values",
    "system_zone",
    "unknown_key_message",
]

DEFAULT_DB_NAME = "memoryd.db"
# The owner's settings file in $MEMORYD_HOME.
CONFIG_FILE = "memoryd.toml"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_DAILY_AT = "03:30"


class Origin(IntEnum):
    """Where a value came from; a lower number wins."""

    FLAG = 0
    ENVIRONMENT = 1
    FILE = 2


@dataclass(frozen=True)
class Setting:
    """One value and where it came from (``where``: the flag, the variable or the file)."""

    key: str
    value: Any = field(repr=False)
    origin: Origin
    where: str

    def source(self) -> str:
        """Where it came from, in words: ``--port``, ``MEMORYD_TZ``, ``tz in /…/memoryd.toml``."""
        if self.origin is Origin.FILE:
            return f"{self.key} in {self.where}"
        return self.where


@dataclass(frozen=True, kw_only=True)
class SettingValues:
    """What the flags, the environment and the settings file say, before interpretation."""

    home: Path
    # The settings file (it may not exist yet).
    file: Path | None = None
    values: Mapping[str, Setting] = field(default_factory=dict, hash=False, repr=False)
    # Keys in the file memoryd does not know (a typo, or a setting of another version).
    unknown: tuple[str, ...] = ()

    def setting(self, key: str) -> Setting | None:
        """The value given for ``key`` and its source, or None (the default applies)."""
        return self.values.get(key)

    def get(self, key: str) -> Any:
        """The value given for ``key``, or None."""
        found = self.values.get(key)
        return None if found is None else found.value


@dataclass(frozen=True, kw_only=True)
class Settings(SettingValues):
    """Where the store lives, the owner's time zone, and every other value as given."""

    db: str
    # The owner's time zone (tz): "yesterday" and "last week" are the owner's days.
    zone: tzinfo = UTC

    @property
    def is_postgres(self) -> bool:
        """Whether the store is a PostgreSQL URL rather than a file."""
        return is_postgres_url(self.db)

    def serve(self) -> ServeSettings:
        """Where ``memoryd serve`` listens and when the daily job runs (errors name the
        setting's source)."""
        host = str(self._checked("serve.host", DEFAULT_HOST))
        port = int(self._checked("serve.port", DEFAULT_PORT))
        daily = str(self._checked("serve.daily_at", DEFAULT_DAILY_AT))
        hours, minutes = (int(part) for part in daily.split(":"))
        # Without a tz setting the daily time is read on the machine's clock.
        zone = self.zone if "tz" in self.values else system_zone()
        names = str(self._checked("serve.allowed_hosts", ""))
        hosts = tuple(part for part in names.replace(",", " ").split() if part)
        return ServeSettings(host, port, time(hours, minutes), daily, zone, hosts)

    def _checked(self, key: str, default: Any) -> Any:
        found = self.values.get(key)
        if found is None:
            return default
        return parse_value(key, found.value, found.source())


@dataclass(frozen=True)
class ServeSettings:
    """``memoryd serve``'s address and daily time."""

    host: str
    port: int
    daily_at: time
    daily_at_text: str
    zone: tzinfo
    # Host names the server answers to besides loopback and its own address.
    allowed_hosts: tuple[str, ...] = ()


def default_home(environ: Mapping[str, str]) -> Path:
    """``MEMORYD_HOME``, else ``$XDG_DATA_HOME/memoryd``, else ``~/.local/share/memoryd``."""
    if environ.get("MEMORYD_HOME"):
        return Path(environ["MEMORYD_HOME"]).expanduser()
    data_home = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "memoryd"


def setting_values(
    environ: Mapping[str, str] | None = None, *, flags: Mapping[str, Any] | None = None
) -> SettingValues:
    """Every value the flags, the environment and ``$MEMORYD_HOME/memoryd.toml`` give, each
    with its source, without judging them (``memoryd config show`` shows even broken ones).
    A file that is not TOML raises :class:`SettingsError` naming it."""
    env = os.environ if environ is None else environ
    home = default_home(env)
    path = home / CONFIG_FILE
    values: dict[str, Setting] = {}
    unknown: list[str] = []
    for name, value in flatten(read_document(path), path):
        if name in KEYS:
            if name == "db" and isinstance(value, str) and not is_postgres_url(value):
                # A relative path in the file is relative to the file's folder.
                value = str((home / Path(value).expanduser()).resolve())
            values[name] = Setting(name, value, Origin.FILE, str(path))
        else:
            unknown.append(name)
    for key in KEYS.values():
        if env.get(key.env):
            values[key.name] = Setting(key.name, env[key.env], Origin.ENVIRONMENT, key.env)
    for name, value in (flags or {}).items():
        if value is not None and value != "":
            flag = KEYS[name].flag or name
            values[name] = Setting(name, value, Origin.FLAG, flag)
    return SettingValues(home=home, file=path, values=values, unknown=tuple(unknown))


def resolve_settings(
    db: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """The settings every process uses: ``db`` (``--db``) and ``flags`` (``{"serve.port":
    8766, "tz": …}``) beat the environment, which beats ``memoryd.toml``; the store defaults to
    ``$MEMORYD_HOME/memoryd.db`` and the time zone to UTC."""
    given = setting_values(environ, flags={**(flags or {}), "db": db})
    store = given.setting("db")
    chosen = str(store.value) if store is not None else str(given.home / DEFAULT_DB_NAME)
    if not is_postgres_url(chosen):
        chosen = str(Path(chosen).expanduser())
    zone_setting = given.setting("tz")
    zone: tzinfo = UTC
    if zone_setting is not None:
        zone = owner_zone(str(zone_setting.value), zone_setting.source())
    return Settings(
        home=given.home,
        file=given.file,
        values=given.values,
        unknown=given.unknown,
        db=chosen,
        zone=zone,
    )


def system_zone() -> tzinfo:
    """The machine's local time zone."""
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone


def read_document(path: Path) -> dict[str, Any]:
    """The parsed settings file (empty when it does not exist); TOML that does not parse
    raises :class:`SettingsError` naming the file."""
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as problem:
        raise SettingsError(
            f"cannot read {path}: {problem}; fix the TOML or remove the file"
        ) from None


def flatten(document: Mapping[str, Any], path: Path, prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` for every value in the document; a table memoryd expects
    (``[llm]``, ``[serve]``, …) that is not one raises :class:`SettingsError`."""
    pairs: list[tuple[str, Any]] = []
    for name, value in document.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            pairs.extend(flatten(value, path, key + "."))
        elif key in _TABLES:
            raise SettingsError(f"{path}: [{key}] must be a table")
        else:
            pairs.append((key, value))
    return pairs


_TABLES = frozenset(name.rpartition(".")[0] for name in KEYS if "." in name)


def masked_location(location: str) -> str:
    """A store location fit to show: a PostgreSQL URL's password (in the URL or its query)
    replaced by ``****``."""
    if not is_postgres_url(location):
        return location
    parts = urlsplit(location)
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", f":{MASK}@")
    query = urlencode(
        [(k, MASK if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)],
        safe="*",
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def holds_secret(location: str) -> bool:
    """Whether a store location carries a password."""
    return masked_location(location) != location


def key_source(found: Setting | None) -> str | None:
    """Where an API key came from, in words, never the key: ``MEMORYD_LLM_API_KEY``, ``the
    file ~/.keys/llm (llm.api_key_file in /…/memoryd.toml)``."""
    if found is None:
        return None
    if found.key.endswith("_file"):
        return f"the file {found.value} ({found.source()})"
    return found.source()


def api_key_of(values: Mapping[str, Any], error: type[MemorydError], whose: str) -> str | None:
    """``api_key``, else the first line of the file ``api_key_file`` names (None when neither
    is set); an unreadable file raises ``error`` naming ``whose`` key it was."""
    key = values.get("api_key")
    key_file = values.get("api_key_file")
    if not key and key_file:
        try:
            text = Path(str(key_file)).expanduser().read_text(encoding="utf-8-sig")
        except OSError as problem:
            raise error(
                f"cannot read the API key file {key_file} for {whose}: {problem.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise error(
                f"the API key file {key_file} for {whose} is not UTF-8 text; write the key "
                "alone on its first line"
            ) from None
        lines = text.strip().splitlines()
        key = lines[0].strip() if lines else ""
    return str(key) if key else None
