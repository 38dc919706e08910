"""``memoryd serve`` (HTTP API, worker, daily consolidation) and ``memoryd mcp``."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from memoryd.cli.common import db_option_of, open_store_service
from memoryd.config.settings import OPERATIONS, Origin, Settings, masked_location, resolve_settings
from memoryd.errors import InvalidInputError

if TYPE_CHECKING:
    from memoryd.http.proxy import ChatProxy
    from memoryd.service import MemoryService


@click.command()
@click.option("--host", help="Address to listen on (default: serve.host, else 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(1, 65535), help="Port (default: serve.port, else 8765)."
)
@click.option(
    "--daily-at",
    help="Local time (HH:MM) of the daily consolidation (default: serve.daily_at, else 03:30).",
)
@click.option(
    "--tz",
    "zone_name",
    help="The owner's IANA time zone for this run, e.g. Europe/Lisbon (default: tz in "
    "memoryd.toml or MEMORYD_TZ; without one the daily time is the machine's).",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 256),
    help="Requests handled at once; the rest wait in arrival order (default: 4 per core, "
    "at least 8).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str | None,
    port: int | None,
    daily_at: str | None,
    zone_name: str | None,
    threads: int | None,
) -> None:
    """The HTTP API, the web page, the background worker and the daily consolidation, until
    Ctrl-C. Settings come from memoryd.toml, the environment and these flags; the first lines
    printed say which, and where the page and its token are. LLM settings changed in
    memoryd.toml while it runs are used within seconds; other changes need a restart."""
    from memoryd.http.auth import ensure_token, load_token
    from memoryd.http.server import (
        ServeOptions,
        SettingsWatcher,
        check_bind,
        is_loopback,
        listen_socket,
    )
    from memoryd.http.server import serve as run_server
    from memoryd.ops.server_record import ServerRecord, remove_record, write_record
    from memoryd.wiring import open_service, refuse_damaged_store

    flags = {"serve.host": host, "serve.port": port, "serve.daily_at": daily_at, "tz": zone_name}
    settings = resolve_settings(db_option_of(ctx), flags=flags)
    chosen = settings.serve()
    token = load_token(settings.home)
    if token is None and is_loopback(chosen.host):
        ensure_token(settings.home)
        token = load_token(settings.home)
    check_bind(chosen.host, token)
    assert token is not None
    # Bound before anything else, so a busy port is the first and only thing reported.
    refuse_damaged_store(settings)
    listener = listen_socket(chosen.host, chosen.port)
    try:
        service = open_service(settings, create=False)
    except BaseException:
        listener.close()
        raise
    try:
        page = page_url(chosen.host, chosen.port)
        for line in startup_lines(settings, service, page):
            click.echo(line, err=True)
        click.echo(
            f"memoryd serving {masked_location(settings.db)} on {page} (token: "
            f"{token_source(settings)}); daily consolidation at {chosen.daily_at_text} "
            f"{chosen.zone}",
            err=True,
        )
        options = ServeOptions(
            host=chosen.host,
            port=chosen.port,
            daily_at=chosen.daily_at,
            zone=chosen.zone,
            threads=threads,
            allowed_hosts=chosen.allowed_hosts,
        )
        started = datetime.now(UTC).isoformat(timespec="seconds")
        pid = os.getpid()
        record = ServerRecord(pid, page, masked_location(settings.db), started)
        try:
            write_record(settings.home, record)
        except OSError as error:
            click.echo(
                f"warning: cannot write {settings.home}/serve.json ({error.strerror}); "
                "`memoryd status` will not see this server",
                err=True,
            )
        if not os.environ.get("MEMORYD_LOG_LEVEL"):
            # Why the proxy sent a chat on without its pack, or could not reach the model.
            logging.getLogger("memoryd.proxy").setLevel(logging.WARNING)
        proxy = chat_proxy(service, settings)
        click.echo(proxy_line(proxy), err=True)
        proxy.start_warming()
        watcher = SettingsWatcher(
            service,
            settings,
            lambda: resolve_settings(db_option_of(ctx), flags=flags),
            lambda line: click.echo(line, err=True),
            on_change=lambda fresh: _reconfigure(proxy, fresh),
        )
        watcher.start()
        try:
            run_server(service, token, options, listener=listener, proxy=proxy)
        finally:
            watcher.stop()
            remove_record(settings.home, pid)
    finally:
        service.close()
        listener.close()


def chat_proxy(service: MemoryService, settings: Settings) -> ChatProxy:
    """The chat proxy over ``service`` with the ``proxy.*`` settings and the chat route."""
    from memoryd.http.proxy import ChatProxy
    from memoryd.providers.llm import chat_route
    from memoryd.proxy.policy import proxy_settings_of

    return ChatProxy(service, proxy_settings_of(settings), chat_route(settings))


def proxy_line(proxy: ChatProxy) -> str:
    """What ``serve`` says about the chat proxy at start."""
    if not proxy.settings.enabled:
        return "  chat proxy  off (proxy.enabled)"
    route = proxy.route
    model = f"default model {route.model!r}, " if route is not None else ""
    return (
        f"  chat proxy  /v1/chat/completions → {model}{proxy.upstream_line()}; adds "
        f"{proxy.settings.inject}, observe {'on' if proxy.settings.observe else 'off'}"
    )


def _reconfigure(proxy: ChatProxy, fresh: Settings) -> str | None:
    """The chat proxy with the new settings; what changed, in words (None: nothing)."""
    from memoryd.providers.llm import chat_route
    from memoryd.proxy.policy import proxy_settings_of

    before = proxy_line(proxy)
    proxy.configure(proxy_settings_of(fresh), chat_route(fresh))
    after = proxy_line(proxy)
    return None if after == before else after.strip()


def page_url(host: str, port: int) -> str:
    """The address a browser on this machine opens (an any-address bind is reached on
    loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def token_source(settings: Settings) -> str:
    """Where the API token comes from (never the token)."""
    from memoryd.http.auth import token_path

    return "MEMORYD_TOKEN" if os.environ.get("MEMORYD_TOKEN") else str(token_path(settings.home))


def startup_lines(settings: Settings, service: MemoryService, page: str) -> list[str]:
    """What ``serve`` says before it serves: where its settings came from, the store, the
    embedder, each LLM route (or that it is off), the time zone, and the page with its token."""
    file = settings.file
    sources = sorted({s.where for s in settings.values.values() if s.origin is not Origin.FILE})
    where = f"{file}" if file is not None and file.is_file() else f"defaults (no {file})"
    lines = [f"memoryd serve: settings from {where}"]
    if sources:
        lines[0] += ", overridden by " + ", ".join(sources)
    backend = "postgresql" if settings.is_postgres else "sqlite"
    lines.append(f"  {'store':<12}{masked_location(settings.db)} ({backend})")
    signature = service.admin.embedding_signature()
    endpoint = getattr(getattr(service.embedder, "settings", None), "base_url", None)
    size = f", {signature.dimension} dimensions" if signature else ""
    lines.append(
        f"  {'embedder':<12}{service.embedder.model}"
        + (f" at {endpoint}" if endpoint else " (local)")
        + size
    )
    routes = service.gateway.routes
    for operation in OPERATIONS:
        route = routes.get(operation)
        if route is None:
            text = "off"
            if operation == "extract":
                text += (
                    ": turns queued by observe, compact and mission wait until it is on "
                    "(`memoryd config set llm.model NAME`; no restart needed)"
                )
        else:
            text = route.describe().partition(": ")[2]
        lines.append(f"  {'llm ' + operation:<12}{text}")
    zone_source = settings.setting("tz")
    zone = f"{settings.zone} ({zone_source.source()})" if zone_source else "UTC (default)"
    lines.append(f"  {'time zone':<12}{zone}")
    lines.append(f"  {'web page':<12}{page} (log in with the token in {token_source(settings)})")
    return lines


@click.command()
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True
)
@click.option("--host", default="127.0.0.1", show_default=True, help="For --transport http.")
@click.option("--port", type=click.IntRange(1, 65535), default=8766, show_default=True)
@click.option(
    "--pin",
    "pinned",
    multiple=True,
    help="A knowledge-base collection this assistant pins (boosted 1.5x; repeatable).",
)
@click.pass_context
def mcp(ctx: click.Context, transport: str, host: str, port: int, pinned: tuple[str, ...]) -> None:
    """The model's four tools over MCP (stdio, or streamable HTTP at /mcp with the token)."""
    import anyio

    from memoryd.http.auth import load_token
    from memoryd.http.server import check_bind
    from memoryd.mcp.server import build_server, http_app, run_stdio
    from memoryd.wiring import refuse_damaged_store

    settings = resolve_settings(db_option_of(ctx))
    refuse_damaged_store(settings)
    with open_store_service(ctx) as service:
        server = build_server(service, pinned)
        if transport == "stdio":
            anyio.run(run_stdio, server)
            return
        import uvicorn

        token = load_token(settings.home)
        if token is None:
            raise InvalidInputError(
                "the MCP HTTP transport needs a token: run `memoryd init` or set MEMORYD_TOKEN"
            )
        check_bind(host, token)
        from memoryd.http.connections import DeadlineH11Protocol, connection_cap
        from memoryd.http.server import exit_cleanly_on_sigterm

        click.echo(f"memoryd MCP on http://{host}:{port}/mcp", err=True)
        exit_cleanly_on_sigterm()
        # As serve's: a stranger's idle or trickling connections are closed 10 s after they
        # opened without complete headers, and never take the last file descriptors.
        uvicorn.run(
            http_app(server, token, host),
            host=host,
            port=port,
            log_level="warning",
            http=DeadlineH11Protocol,
            timeout_keep_alive=5,
            limit_concurrency=connection_cap(),
        )
