"""``memoryd config show | set | unset``: every effective setting and where it came from, and
edits of ``$MEMORYD_HOME/memoryd.toml``."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

from memoryd.cli.common import db_option_of, json_option, print_json, with_json
from memoryd.config.settings import (
    CHAT_ROUTE,
    DEFAULT_DAILY_AT,
    DEFAULT_DB_NAME,
    DEFAULT_HOST,
    DEFAULT_PORT,
    KEYS,
    MASK,
    OPERATIONS,
    Origin,
    Setting,
    SettingsError,
    SettingValues,
    masked_location,
    parse_value,
    setting_values,
    system_zone,
)
from memoryd.errors import MemorydError


@dataclass(frozen=True)
class Row:
    """One effective setting as shown: its value (masked when secret) and its source."""

    key: str
    value: Any
    source: str  # flag, environment, file, default
    where: str | None = None
    # The key the value was given under, when it is another (llm.model for llm.extract.model).
    given_as: str | None = None
    note: str | None = None

    def source_text(self) -> str:
        """``environment MEMORYD_TZ``, ``file /…/memoryd.toml (llm.model)``, ``default``."""
        text = self.source if self.where is None else f"{self.source} {self.where}"
        return text + (f" ({self.given_as})" if self.given_as else "")

    def to_json(self) -> dict[str, Any]:
        """JSON shape, without empty fields."""
        shape = {
            "value": self.value,
            "source": self.source,
            "where": self.where,
            "given_as": self.given_as,
            "note": self.note,
        }
        return {k: v for k, v in shape.items() if v is not None or k == "value"}


@click.group()
def config() -> None:
    """Show and change memoryd's settings. Every memoryd process (the CLI, serve, worker,
    mcp) reads $MEMORYD_HOME/memoryd.toml; an environment variable (MEMORYD_ and the key in
    capitals, dots as underscores: MEMORYD_SERVE_PORT) overrides the file, and a command-line
    flag (--db, and serve's --host, --port, --daily-at, --tz) overrides both."""


@config.command()
@with_json
def show(ctx: click.Context, as_json: bool) -> None:
    """Every effective setting, where it came from (flag, environment, file or default) and
    any problem with it; API keys are never shown, only where they come from."""
    values = setting_values(flags={"db": db_option_of(ctx)})
    rows, problems = effective_rows(values, os.environ)
    if as_json:
        print_json(
            {
                "file": str(values.file),
                "file_exists": values.file is not None and values.file.is_file(),
                "settings": {row.key: row.to_json() for row in rows},
                "problems": problems,
            }
        )
        return
    exists = values.file is not None and values.file.is_file()
    click.echo(f"settings file: {values.file}" + ("" if exists else " (not created yet)"))
    width = max(len(row.key) for row in rows) + 2
    for row in rows:
        shown = "-" if row.value is None else str(row.value)
        note = f"  [{row.note}]" if row.note else ""
        click.echo(f"{row.key:<{width}}{shown:<38} {row.source_text()}{note}")
    for problem in problems:
        click.echo(f"problem: {problem}")


@config.command()
@json_option
def keys(as_json: bool) -> None:
    """Every key `config set` takes, its environment variable, the flag that overrides it
    (if any) and what it holds."""
    if as_json:
        print_json(
            [{"key": k.name, "env": k.env, "flag": k.flag, "help": k.help} for k in KEYS.values()]
        )
        return
    for key in KEYS.values():
        flag = f", {key.flag}" if key.flag else ""
        click.echo(f"{key.name:<26}{key.help} ({key.env}{flag})")


@config.command(name="set")
@click.argument("key")
@click.argument("value")
def set_(key: str, value: str) -> None:
    """Write KEY = VALUE into memoryd.toml, e.g. `memoryd config set llm.model llama3.1:8b`,
    `config set tz Europe/Lisbon`, `config set serve.port 8766`. The key and value are checked
    first; a VALUE of - is read from standard input (keeps an API key out of the shell's
    history). Other lines and comments stay as they are, unless the key sits in an inline
    table or a dotted key, when the file is rewritten from its values and its comments are
    lost (the command says so). The file is replaced atomically, and made readable by you only
    (0600) once it holds an API key or a store password. `memoryd config keys` lists the
    keys."""
    from memoryd.config.settings_file import set_value, value_for_file

    if value == "-":
        value = sys.stdin.readline().strip()
    values = setting_values()
    assert values.file is not None
    typed = value_for_file(key, value)
    change = set_value(values.file, key, typed)
    shown = "(hidden)" if KEYS[key].secret else f"= {_shown(key, typed)}"
    click.echo(f"set {key} {shown} in {change.path}")
    if change.holds_secret:
        click.echo("the file holds a secret: it is readable by you only (mode 0600)")
    _report_notes(key, change.kept_layout, setting_values())


@config.command()
@click.argument("key")
def unset(key: str) -> None:
    """Remove KEY from memoryd.toml (its default, or the environment's value, applies)."""
    from memoryd.config.settings_file import unset_value

    values = setting_values()
    assert values.file is not None
    change = unset_value(values.file, key)
    if change is None:
        click.echo(f"{key} is not set in {values.file}; nothing changed")
    else:
        click.echo(f"removed {key} from {change.path}")
    _report_notes(key, change is None or change.kept_layout, setting_values())


def _report_notes(key: str, kept_layout: bool, after: SettingValues) -> None:
    """What still decides the key after an edit: an environment variable, a more specific
    route setting, and a server that must restart to see the change."""
    from memoryd.ops.server_record import read_record

    if not kept_layout:
        click.echo("note: the file was rewritten from its values; its comments are gone")
    effective = after.setting(key)
    if effective is not None and effective.origin is Origin.ENVIRONMENT:
        click.echo(f"note: {effective.where} is set in this environment and overrides the file")
    field = key.removeprefix("llm.")
    if key.startswith("llm.") and "." not in field:
        for operation in (*OPERATIONS, CHAT_ROUTE):
            specific = after.setting(f"llm.{operation}.{field}")
            if specific is not None:
                click.echo(f"note: {specific.source()} still decides it for {operation}")
    state = read_record(after.home)
    if state.alive and state.record is not None:
        # serve's settings watcher applies llm.* and proxy.* while it runs (http/server.py).
        then = (
            "it uses the new LLM settings within seconds"
            if key.startswith("llm.")
            else "it uses the new chat proxy settings within seconds"
            if key.startswith("proxy.")
            else "restart it to use the change"
        )
        click.echo(f"note: memoryd serve (pid {state.record.pid}) is running for this home; {then}")


def _shown(key: str, value: Any) -> str:
    if KEYS[key].kind == "store":
        return masked_location(str(value))
    return str(value)


def effective_rows(
    values: SettingValues, environ: Mapping[str, str]
) -> tuple[list[Row], list[str]]:
    """Every effective setting as a row, and the problems found (a bad value, an unknown key,
    a route that cannot be built)."""
    problems = [
        f"unknown key {key} in {values.file} (ignored); valid keys: "
        + "db, tz, serve.*, llm.*, llm.<operation>.*, embed.*, proxy.*, kb.*"
        for key in values.unknown
    ]
    for found in values.values.values():
        try:
            parse_value(found.key, found.value, found.source())
        except SettingsError as error:
            problems.append(str(error))
    home_source = "environment" if environ.get("MEMORYD_HOME") else "default"
    rows = [
        Row(
            "home",
            str(values.home),
            home_source,
            "MEMORYD_HOME" if environ.get("MEMORYD_HOME") else None,
        ),
        _row(values, "db", str(values.home / DEFAULT_DB_NAME)),
        _row(values, "tz", "UTC"),
        _row(values, "serve.host", DEFAULT_HOST),
        _row(values, "serve.port", DEFAULT_PORT),
        _row(values, "serve.daily_at", DEFAULT_DAILY_AT),
    ]
    if values.setting("tz") is None:
        rows[-1] = _with_note(rows[-1], f"in the machine's time zone, {system_zone()}")
    hosts = _row(values, "serve.allowed_hosts", None)
    rows.append(hosts if hosts.value else _with_note(hosts, "loopback and its own address"))
    if environ.get("MEMORYD_TOKEN", "").strip():
        rows.append(Row("token", MASK, "environment", "MEMORYD_TOKEN"))
    else:
        token = values.home / "token"
        rows.append(
            Row(
                "token",
                str(token),
                "default",
                note=None if token.is_file() else "run `memoryd init`",
            )
        )
    rows.extend(_embed_rows(values, problems))
    rows.extend(_llm_rows(values, problems))
    rows.extend(_proxy_and_kb_rows(values))
    return rows, problems


def _proxy_and_kb_rows(values: SettingValues) -> list[Row]:
    """The chat proxy's and document conversion's settings, with the defaults they apply."""
    from memoryd.kb.converted import Limits
    from memoryd.proxy.policy import ProxySettings

    proxy, limits = ProxySettings(), Limits()
    switch = {True: "on", False: "off"}
    budget = _row(values, "proxy.budget", None)
    return [
        _row(values, "proxy.enabled", switch[proxy.enabled]),
        _row(values, "proxy.inject", proxy.inject),
        _row(values, "proxy.observe", switch[proxy.observe]),
        budget if budget.value is not None else _with_note(budget, "the recall budget"),
        _row(values, "proxy.recall_timeout", proxy.recall_deadline),
        _row(values, "kb.convert_seconds", int(limits.convert_seconds)),
        _row(values, "kb.convert_memory_mb", limits.convert_memory_bytes // (1024 * 1024)),
    ]


def _row(values: SettingValues, key: str, default: Any, shown_key: str | None = None) -> Row:
    found = values.setting(key)
    name = shown_key or key
    if found is None:
        return Row(name, None if KEYS[key].secret else default, "default")
    value = found.value
    if KEYS[key].secret:
        value = MASK
    elif KEYS[key].kind == "store":
        value = masked_location(str(value))
    given_as = found.key if found.key != name else None
    return Row(name, value, found.origin.name.lower(), found.where, given_as)


def _from(found: Setting | None, name: str, default: Any) -> Row:
    if found is None:
        return Row(name, default, "default")
    value = MASK if KEYS[found.key].secret else found.value
    given_as = found.key if found.key != name else None
    return Row(name, value, found.origin.name.lower(), found.where, given_as)


def _with_note(row: Row, note: str) -> Row:
    return Row(row.key, row.value, row.source, row.where, row.given_as, note)


def _key_row(name: str, found: Setting | None) -> Row:
    """An API key: never its value, only that it is set and where it comes from."""
    if found is None:
        return Row(name, None, "default", note="no key")
    row = _from(found, name, None)
    if found.key.endswith("_file"):
        return Row(name, MASK, row.source, row.where, found.key, f"read from {found.value}")
    return row


def _embed_rows(values: SettingValues, problems: list[str]) -> list[Row]:
    from memoryd.providers.embedder import LOCAL_DIMENSION, LOCAL_MODEL_ID
    from memoryd.providers.remote_embedder import (
        DEFAULT_BATCH,
        DEFAULT_RETRIES,
        DEFAULT_TIMEOUT,
        embed_key_setting,
        embed_settings_of,
    )

    try:
        remote = embed_settings_of(values) is not None
    except MemorydError as error:
        problems.append(str(error))
        remote = str(values.get("embed.provider") or "openai").lower() != "local"
    if not remote:
        provider = _row(values, "embed.provider", "local")
        note = f"MiniLM {LOCAL_MODEL_ID}, {LOCAL_DIMENSION} dimensions, on this machine"
        from memoryd.providers.query_model import int8_queries_by_default

        int8 = _row(values, "embed.int8_queries", "on" if int8_queries_by_default() else "off")
        return [_with_note(provider, note), int8]
    return [
        _row(values, "embed.provider", "openai"),
        _row(values, "embed.model", None),
        _row(values, "embed.base_url", None),
        _key_row("embed.api_key", embed_key_setting(values)),
        _row(values, "embed.dimensions", None),
        _row(values, "embed.batch_size", DEFAULT_BATCH),
        _row(values, "embed.timeout", DEFAULT_TIMEOUT),
        _row(values, "embed.max_retries", DEFAULT_RETRIES),
    ]


def _llm_rows(values: SettingValues, problems: list[str]) -> list[Row]:
    from memoryd.providers.llm import (
        DEFAULT_RETRIES,
        DEFAULT_TIMEOUT,
        chat_route,
        route_key_setting,
        route_setting,
        routes_of,
    )

    routes: set[str] | None = set()
    try:
        routes = set(routes_of(values))
    except MemorydError as error:
        problems.append(str(error))
        routes = None
    try:  # the chat proxy's upstream: its own route, shown after the operations'
        if routes is not None and chat_route(values) is not None:
            routes.add(CHAT_ROUTE)
    except MemorydError as error:
        problems.append(str(error))
        routes = None
    rows: list[Row] = []
    for operation in (*OPERATIONS, CHAT_ROUTE):
        prefix = f"llm.{operation}"

        def given(name: str, op: str = operation) -> Setting | None:
            return route_setting(values, op, name)

        if routes is not None and operation not in routes:
            note = "no model configured"
            if operation == CHAT_ROUTE:
                note += "; the chat proxy answers 503"
            rows.append(Row(prefix, "off", "default", note=note))
            continue
        rows.extend(
            [
                _from(given("provider"), f"{prefix}.provider", "openai"),
                _from(given("model"), f"{prefix}.model", None),
                _from(given("base_url"), f"{prefix}.base_url", None),
                _key_row(f"{prefix}.api_key", route_key_setting(values, operation)),
                _from(given("timeout"), f"{prefix}.timeout", DEFAULT_TIMEOUT),
                _from(given("max_retries"), f"{prefix}.max_retries", DEFAULT_RETRIES),
                _from(given("structured"), f"{prefix}.structured", "auto"),
            ]
        )
        if rows[-5].value is None:
            rows[-5] = _with_note(rows[-5], "the provider's own endpoint")
    return rows
