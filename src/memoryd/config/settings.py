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
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memoryd.errors import InvalidInputError, MemorydError

DEFAULT_DB_NAME = "memoryd.db"
# The owner's settings file in $MEMORYD_HOME.
CONFIG_FILE = "memoryd.toml"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_DAILY_AT = "03:30"
OPERATIONS = ("extract", "merge", "reflect", "caption")
# The chat proxy's upstream: a route like the operations' (``[llm.chat]``, else ``[llm]``), kept
# apart from them because it is the owner's chat model, not one memoryd asks for JSON.
CHAT_ROUTE = "chat"
PROXY_INJECT = ("pack", "memories", "off")
LLM_FIELDS = (
    "provider", "base_url", "model", "api_key", "api_key_file", "timeout", "max_retries",
    "structured",
)  # fmt: skip
STRUCTURED = ("auto", "json_schema", "json_object", "off")
EMBED_FIELDS = (
    "provider", "base_url", "model", "api_key", "api_key_file", "dimensions", "batch_size",
    "timeout", "max_retries",
)  # fmt: skip
MASK = "****"


class SettingsError(InvalidInputError):
    """The settings file cannot be read, or a setting's value is malformed."""


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


@dataclass(frozen=True)
class Key:
    """A setting memoryd knows: what it holds, and the flag that overrides it, if any."""

    name: str
    # text, url, file, store, zone, daily_at, port, count, retries, seconds, choice, secret,
    # switch (on/off)
    kind: str
    help: str
    flag: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        """Its environment variable."""
        return "MEMORYD_" + self.name.upper().replace(".", "_")

    @property
    def secret(self) -> bool:
        """Whether its value must never be shown."""
        return self.kind == "secret"


def _route_keys(prefix: str, fields: tuple[str, ...], providers: tuple[str, ...]) -> list[Key]:
    kinds = {
        "provider": ("choice", "the wire format: " + " or ".join(providers)),
        "base_url": ("url", "the endpoint, e.g. http://localhost:11434/v1 for Ollama"),
        "model": ("text", "the model's name at that endpoint"),
        "api_key": ("secret", "the API key (prefer api_key_file)"),
        "api_key_file": ("file", "a file whose first line is the API key"),
        "timeout": ("seconds", "seconds per call"),
        "max_retries": ("retries", "retries per call (timeouts, 429, 5xx)"),
        "dimensions": ("count", "vector size, for models that can shorten their vectors"),
        "batch_size": ("count", "texts per call"),
        "structured": ("choice", "how answers are held to the proposal contract: "
                       + ", ".join(STRUCTURED)),
    }  # fmt: skip
    return [
        Key(
            f"{prefix}.{name}",
            kinds[name][0],
            kinds[name][1],
            choices={"provider": providers, "structured": STRUCTURED}.get(name, ()),
        )
        for name in fields
    ]


KEYS: dict[str, Key] = {
    key.name: key
    for key in [
        Key("db", "store", "the store: a file path or a postgresql:// URL", flag="--db"),
        Key("tz", "zone", "the owner's time zone, an IANA name such as Europe/Lisbon", "--tz"),
        Key("serve.host", "text", "the address memoryd serve listens on", flag="--host"),
        Key("serve.port", "port", "the port memoryd serve listens on", flag="--port"),
        Key("serve.daily_at", "daily_at", "local time (HH:MM) of the daily consolidation",
            flag="--daily-at"),
        Key("serve.allowed_hosts", "text", "host names memoryd serve answers to besides "
            "loopback and its own address (comma-separated; * for any)"),
        *_route_keys("llm", LLM_FIELDS, ("openai", "anthropic")),
        *[
            key
            for operation in OPERATIONS
            for key in _route_keys(f"llm.{operation}", LLM_FIELDS, ("openai", "anthropic"))
        ],
        *_route_keys(f"llm.{CHAT_ROUTE}", LLM_FIELDS, ("openai", "anthropic")),
        *_route_keys("embed", EMBED_FIELDS, ("local", "openai")),
        Key("proxy.enabled", "switch", "serve answers chat apps at /v1/chat/completions: on or "
            "off"),
        Key("proxy.inject", "choice", "what the chat proxy adds to the system message: pack "
            "(memories and documents), memories, or off", choices=PROXY_INJECT),
        Key("proxy.observe", "switch", "the chat proxy queues each finished turn for "
            "extraction: on or off"),
        Key("proxy.budget", "count", "the chat proxy's token budget for what it adds "
            "(default: the recall budget)"),
        Key("proxy.recall_timeout", "seconds", "seconds the chat proxy waits for the context "
            "pack before it sends the request on without it (default 1.5)"),
        Key("kb.convert_seconds", "seconds", "seconds of its own work converting one document "
            "may take before it is stopped (default 120; a PDF gets 0.25 s more per page read)"),
        Key("kb.convert_memory_mb", "count", "MiB of memory converting one document may use "
            "before it is stopped (default 1024)"),
    ]
}  # fmt: skip


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


def is_postgres_url(location: str) -> bool:
    """Whether a store location is a PostgreSQL URL."""
    return location.startswith(("postgresql://", "postgres://"))


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


def owner_zone(name: str | None, source: str = "MEMORYD_TZ") -> tzinfo:
    """The IANA zone ``name`` (e.g. Europe/Lisbon), or UTC when unset; an unknown name raises
    an error naming ``source``."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SettingsError(
            f"unknown time zone {name!r} in {source}; use an IANA name such as Europe/Lisbon"
        ) from None


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


def parse_value(key: str, value: Any, source: str | None = None) -> Any:
    """``value`` checked and converted for ``key`` (an int port, a float timeout, …); a bad one
    raises :class:`SettingsError` saying what is expected. ``source`` names where it came from."""
    spec = KEYS.get(key)
    if spec is None:
        raise SettingsError(unknown_key_message(key))
    where = f" ({source})" if source else ""
    text = str(value).strip() if not isinstance(value, bool) else ""

    def bad(expected: str) -> SettingsError:
        shown = MASK if spec.secret else repr(value)
        return SettingsError(f"{key} must be {expected}, not {shown}{where}")

    kind = spec.kind
    if kind == "switch":
        return parse_switch(value, bad)
    if kind in ("port", "count", "retries"):
        try:
            number = int(text)
        except ValueError:
            raise bad("a whole number") from None
        low, high = {"port": (1, 65535), "count": (1, None), "retries": (0, None)}[kind]
        if number < low or (high is not None and number > high):
            raise bad(f"between {low} and {high}" if high else f"at least {low}")
        return number
    if kind == "seconds":
        try:
            seconds = float(text)
        except ValueError:
            raise bad("a number of seconds") from None
        if not seconds > 0:
            raise bad("more than 0 seconds")
        return int(seconds) if seconds.is_integer() and "." not in text else seconds
    if not text:
        raise SettingsError(f"{key} is empty{where}; give it a value, or remove it")
    if kind == "choice":
        if text.lower() not in spec.choices:
            raise bad(" or ".join(repr(choice) for choice in spec.choices))
        return text.lower()
    if kind == "zone":
        owner_zone(text, source or key)
    elif kind == "daily_at":
        parts = text.split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise bad("a 24-hour time HH:MM, e.g. 03:30")
        if int(parts[0]) > 23 or int(parts[1]) > 59:
            raise bad("a 24-hour time HH:MM, e.g. 03:30")
    elif kind == "url":
        address = urlsplit(text)
        if address.scheme not in ("http", "https") or not address.netloc:
            raise bad("an http:// or https:// URL, e.g. http://localhost:11434/v1")
    elif kind == "store" and "://" in text and not is_postgres_url(text):
        raise bad("a file path or a postgresql:// URL")
    elif kind == "file" and not Path(text).expanduser().is_file():
        raise bad("a readable file (it does not exist)")
    return text


_ON = frozenset({"on", "true", "yes", "1"})
_OFF = frozenset({"off", "false", "no", "0"})


def parse_switch(value: Any, bad: Any) -> bool:
    """``true``/``false`` (TOML) or on/off, yes/no, 1/0 in any case; else ``bad(expected)``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _ON or text in _OFF:
        return text in _ON
    raise bad("on or off (true or false)")


def unknown_key_message(key: str) -> str:
    """An unknown key, the closest known one, and every key memoryd knows."""
    import difflib

    close = difflib.get_close_matches(key, list(KEYS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown setting {key!r}{hint}; valid keys: {key_summary()} (`memoryd config keys`)"


def key_summary() -> str:
    """Every key, compactly: ``db, tz, serve.{host,port,daily_at}, llm.{…}, …``."""
    llm = ",".join(LLM_FIELDS)
    return (
        "db, tz, serve.{host,port,daily_at,allowed_hosts}, "
        f"llm.{{{llm}}}, llm.{{{','.join((*OPERATIONS, CHAT_ROUTE))}}}.{{{llm}}}, "
        f"embed.{{{','.join(EMBED_FIELDS)}}}, proxy.{{enabled,inject,observe,budget}}"
    )


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
            key = Path(str(key_file)).expanduser().read_text(encoding="utf-8").strip()
        except OSError as problem:
            raise error(
                f"cannot read the API key file {key_file} for {whose}: {problem.strerror}"
            ) from None
    return str(key) if key else None
