"""The settings memoryd knows: each key's kind, help and flag (the table ``memoryd config
keys`` prints), and how a value is checked and converted for its key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memoryd.errors import InvalidInputError

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
        Key("embed.int8_queries", "switch", "the local MiniLM embeds what recall asks with "
            "integer products (int8, built once in memoryd's home; ~60% less CPU a message): "
            "on (the default) or off"),
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


def is_postgres_url(location: str) -> bool:
    """Whether a store location is a PostgreSQL URL."""
    return location.startswith(("postgresql://", "postgres://"))


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
        f"embed.{{{','.join((*EMBED_FIELDS, 'int8_queries'))}}}, "
        "proxy.{enabled,inject,observe,budget,recall_timeout}, "
        "kb.{convert_seconds,convert_memory_mb}"
    )
