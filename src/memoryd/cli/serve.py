"""``memoryd serve`` (HTTP API, worker, daily consolidation) and ``memoryd mcp``."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..errors import InvalidInputError
from ..settings import Settings, resolve_settings
from .common import db_option_of, open_store_service


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--daily-at",
    default="03:30",
    show_default=True,
    help="Local time (HH:MM) of the daily consolidation.",
)
@click.option(
    "--tz",
    "zone_name",
    help="IANA time zone for --daily-at (default: MEMORYD_TZ, else the system's).",
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
    host: str,
    port: int,
    daily_at: str,
    zone_name: str | None,
    threads: int | None,
) -> None:
    """The HTTP API, the background worker and the daily consolidation, until Ctrl-C."""
    from ..http.auth import ensure_token, load_token
    from ..http.server import ServeOptions, check_bind, is_loopback, local_zone
    from ..http.server import serve as run_server
    from ..schedule import parse_daily_at

    settings = resolve_settings(db_option_of(ctx))
    try:
        at = parse_daily_at(daily_at)
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
    zone = local_zone(zone_name)
    token = load_token(settings.home)
    if token is None and is_loopback(host):
        ensure_token(settings.home)
        token = load_token(settings.home)
    check_bind(host, token)
    assert token is not None
    _refuse_damaged_store(settings)
    with open_store_service(ctx) as service:
        click.echo(
            f"memoryd serving {settings.db} on http://{host}:{port} (token: "
            f"{'MEMORYD_TOKEN' if os.environ.get('MEMORYD_TOKEN') else settings.home / 'token'});"
            f" daily consolidation at {daily_at} {zone}",
            err=True,
        )
        options = ServeOptions(host=host, port=port, daily_at=at, zone=zone, threads=threads)
        run_server(service, token, options)


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

    from ..http.auth import load_token
    from ..http.server import check_bind
    from ..mcp_server import build_server, http_app, run_stdio

    settings = resolve_settings(db_option_of(ctx))
    _refuse_damaged_store(settings)
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
        from ..http.server import exit_cleanly_on_sigterm

        click.echo(f"memoryd MCP on http://{host}:{port}/mcp", err=True)
        exit_cleanly_on_sigterm()
        uvicorn.run(http_app(server, token, host), host=host, port=port, log_level="warning")


def _refuse_damaged_store(settings: Settings) -> None:
    """A server runs for days: check every page of an SQLite store once before it opens
    (commands check only small stores at open, to stay quick)."""
    if not settings.is_postgres:
        from ..storage.sqlite import refuse_damaged_file

        refuse_damaged_file(Path(settings.db))
