"""The store itself: ``init``, ``doctor``, ``export``/``import``/``migrate-store`` and
``backup``/``restore``."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import click

from memoryd.cli.common import db_option_of, open_store_service, print_json, service_at, with_json
from memoryd.config.settings import resolve_settings
from memoryd.errors import MemorydError, StoreFullError
from memoryd.storage.file_modes import open_private
from memoryd.storage.full_disk import full_disk_reported


@click.command()
@with_json
def init(ctx: click.Context, as_json: bool) -> None:
    """Create the store (idempotent), record its embedding model, and write the API token
    ($MEMORYD_HOME/token, mode 0600) unless it exists."""
    from memoryd.http.auth import ensure_token

    with open_store_service(ctx, create=True) as service:
        signature = service.admin.embedding_signature()
        location = str(service.admin.store_location() or db_option_of(ctx))
    settings = resolve_settings(db_option_of(ctx))
    token_file = ensure_token(settings.home)
    if as_json:
        print_json(
            {
                "db": location,
                "embedding_model": signature.model if signature else None,
                "embedding_dimension": signature.dimension if signature else None,
                "token_file": str(token_file),
                "settings_file": str(settings.file),
            }
        )
    else:
        click.echo(f"memoryd store ready at {location}")
        click.echo(f"API token in {token_file}")
        exists = settings.file is not None and settings.file.is_file()
        click.echo(
            f"settings in {settings.file}"
            + ("" if exists else " (none yet)")
            + ": `memoryd config show` lists them, `memoryd config set KEY VALUE` changes one"
        )


@click.command()
@with_json
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check the store, the embedder, the tokenizer and every configured LLM route with one
    small real call each, side by side with short timeouts, and say what to do about each
    failure. A warning (a caption model that cannot read images) does not fail the run."""
    from memoryd.ops.doctor import run_doctor

    checks = run_doctor(resolve_settings(db_option_of(ctx)))
    if as_json:
        print_json([c.to_json() for c in checks])
    else:
        for check in checks:
            click.echo(f"{check.verdict:<5}{check.name}: {check.detail}")
            if check.next_step:
                click.echo(f"{'':5}next: {check.next_step}")
    if not all(check.ok for check in checks):
        ctx.exit(1)


@click.command(name="export")
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write here (default: standard output).",
)
@click.option("--with-vectors", is_flag=True, help="Include every embedding (larger file).")
@click.pass_context
def export_(ctx: click.Context, out_path: str | None, with_vectors: bool) -> None:
    """Everything in the store as JSON Lines (memories, chains, audit, documents, chunks,
    jobs); the last line has the counts and a SHA-256 of the rest."""
    with open_store_service(ctx) as service:
        if out_path is None:
            summary = service.admin.export_to(sys.stdout, with_vectors=with_vectors)
        else:
            out = Path(out_path)
            try:
                with (
                    full_disk_reported(out),
                    os.fdopen(open_private(out), "w", encoding="utf-8") as handle,
                ):
                    summary = service.admin.export_to(handle, with_vectors=with_vectors)
            except StoreFullError:
                out.unlink(missing_ok=True)  # a cut-off export is no export
                raise
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary.counts.items()) if k != "header")
    click.echo(f"exported {counts or 'nothing'}; sha256 {summary.sha256}", err=True)


@click.command(name="import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@with_json
def import_(ctx: click.Context, file: Any, as_json: bool) -> None:
    """Load an export into an empty store (one transaction; re-embeds what has no vector)."""
    from memoryd.ops.backup import store_removed_if_failed

    with (
        store_removed_if_failed(resolve_settings(db_option_of(ctx))),
        open_store_service(ctx, create=True) as service,
    ):
        summary = service.admin.import_from(file)
    if as_json:
        print_json(summary.to_json())
    else:
        counts = ", ".join(f"{v} {k}" for k, v in sorted(summary.counts.items()) if k != "header")
        click.echo(f"imported {counts or 'nothing'}")


@click.command(name="migrate-store")
@click.argument("source")
@click.argument("destination")
@with_json
def migrate_store(ctx: click.Context, source: str, destination: str, as_json: bool) -> None:
    """Copy a store (SQLite file or postgresql:// URL) into an empty one, losslessly, and
    verify it: both stores must export the same records with the same checksum."""
    with service_at(source, create=False) as origin:
        buffer = io.StringIO()
        before = origin.admin.export_to(buffer, with_vectors=True)
        with service_at(destination, create=True) as target:
            buffer.seek(0)
            target.admin.import_from(buffer)
            after = target.admin.export_to(io.StringIO(), with_vectors=True)
    verified = before.sha256 == after.sha256 and before.counts == after.counts
    if as_json:
        print_json(
            {"source": before.to_json(), "destination": after.to_json(), "verified": verified}
        )
    else:
        for kind in sorted(set(before.counts) | set(after.counts)):
            click.echo(f"{kind:<8} {before.counts.get(kind, 0):>8} → {after.counts.get(kind, 0)}")
        click.echo(f"sha256 {before.sha256}\n    → {after.sha256}")
    if not verified:
        raise MemorydError("the copy differs from the source; the destination is incomplete")
    if not as_json:
        click.echo("verified: the destination exports exactly what the source does")


@click.command()
@click.argument("out_path", metavar="OUT", type=click.Path(dir_okay=False))
@with_json
def backup(ctx: click.Context, out_path: str, as_json: bool) -> None:
    """A consistent copy of the store, safe while memoryd runs: an SQLite file (the backup
    API) for an SQLite store, a JSON Lines export with vectors for PostgreSQL."""
    with open_store_service(ctx) as service:
        result = service.admin.backup_to(Path(out_path))
    if as_json:
        print_json(result.to_json())
    else:
        click.echo(f"backup written to {result.path} ({result.kind}): {result.describe()}")


@click.command()
@click.argument("backup_path", metavar="BACKUP", type=click.Path(exists=True, dir_okay=False))
@click.option("--force", is_flag=True, help="Replace an SQLite store that holds data.")
@with_json
def restore(ctx: click.Context, backup_path: str, force: bool, as_json: bool) -> None:
    """Restore a backup into the store chosen by --db (stop memoryd first). An SQLite backup
    replaces the file after its integrity is checked; an export is imported into an empty
    store."""
    from memoryd.ops.backup import restore_backup
    from memoryd.wiring import open_service

    settings = resolve_settings(db_option_of(ctx))
    result = restore_backup(Path(backup_path), settings, force=force, open_service=open_service)
    if as_json:
        print_json(result.to_json())
    else:
        click.echo(f"restored {result.path} into {settings.db}: {result.describe()}")
