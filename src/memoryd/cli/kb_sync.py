"""``memoryd kb sync …``: folders, files and URLs kept current (a thin adapter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memoryd.cli.common import now_from, open_store_service, print_json, with_json, with_now_json
from memoryd.kb.model import DEFAULT_COLLECTION
from memoryd.kb.sync.model import DEFAULT_MAX_BYTES, FileState, counts_label

if TYPE_CHECKING:
    from memoryd.kb.sync.model import FileStatus, SyncSource
    from memoryd.kb.sync.run import FolderSync, PassReport


@click.group()
def sync() -> None:
    """Folders, files and URLs kept current: `memoryd serve` re-reads what changes."""


@sync.command()
@click.argument("location")
@click.option("--collection", default=DEFAULT_COLLECTION, show_default=True)
@click.option(
    "--ignore",
    "patterns",
    multiple=True,
    help="A .gitignore-style pattern to leave out (repeatable), besides the folder's own "
    ".gitignore and .memorydignore.",
)
@click.option("--include-hidden", is_flag=True, help="Read hidden files and folders too.")
@click.option(
    "--max-size",
    type=click.FloatRange(min=0.001),
    default=DEFAULT_MAX_BYTES / 1e6,
    show_default=True,
    help="Skip files larger than this many MB.",
)
@click.option(
    "--every",
    type=click.IntRange(min=10),
    help="Seconds between rescans of a folder or file (default 300; changes are seen at once "
    "through notifications) or between fetches of a URL (default 86400).",
)
@click.option(
    "--later",
    is_flag=True,
    help="Only register it: the first pass is left to `memoryd serve` (else it runs here).",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Embed the chunks here too (--no-wait: keyword-searchable at once, the "
    "vectors are filled by `memoryd serve` or `memoryd worker`).",
)
@with_now_json
def add(
    ctx: click.Context,
    location: str,
    collection: str,
    patterns: tuple[str, ...],
    include_hidden: bool,
    max_size: float,
    every: int | None,
    later: bool,
    wait: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Keep a folder, a file or an http(s) URL in sync with the knowledge base."""
    at = now_from(now_text) if now_text else None
    with open_store_service(ctx) as service:
        source = service.sync.add(
            location,
            collection=collection,
            ignore=patterns,
            include_hidden=include_hidden,
            max_bytes=int(max_size * 1e6),
            every_seconds=every,
            now=at,
        )
        report = service.sync.run_pass(source, now=at, wait=wait) if not later else None
    if as_json:
        print_json({"source": source.to_json(), "pass": report.to_json() if report else None})
        return
    click.echo(f"syncing {source.location} ({source.kind.value}) into {source.collection} "
               f"as {source.id}")  # fmt: skip
    if report is not None:
        click.echo(_pass_line(report))
    else:
        click.echo("`memoryd serve` reads it on its next look (within seconds)")


@sync.command(name="list")
@click.option("--files", "every_file", is_flag=True, help="List every file, not only those "
              "that are not current.")  # fmt: skip
@with_json
def list_(ctx: click.Context, every_file: bool, as_json: bool) -> None:
    """Synced sources, each with its files' states and when it was last looked at."""
    with open_store_service(ctx) as service:
        lines, data = source_lines(service.sync, every_file)
    if as_json:
        print_json(data)
        return
    for line in lines or ["no synced sources (`memoryd kb sync add FOLDER` adds one)"]:
        click.echo(line)


@sync.command()
@click.argument("source")
@click.option("--delete-documents", is_flag=True, help="Remove its documents too (else they "
              "stay searchable, no longer updated).")  # fmt: skip
@with_json
def remove(ctx: click.Context, source: str, delete_documents: bool, as_json: bool) -> None:
    """Stop syncing a source (by id or location)."""
    with open_store_service(ctx) as service:
        removed = service.sync.remove(source, delete_documents=delete_documents)
    if as_json:
        print_json(removed.to_json())
        return
    kept = "its documents removed" if delete_documents else "its documents kept"
    click.echo(f"no longer syncing {removed.location} ({kept})")


@sync.command()
@click.argument("source", required=False)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Embed the chunks here too (--no-wait: leave the vectors to the worker).",
)
@with_now_json
def now(
    ctx: click.Context, source: str | None, wait: bool, now_text: str | None, as_json: bool
) -> None:
    """Look at one source (by id or location) or every source now. Exit code 1 if a file
    failed or a source could not be looked at."""
    at = now_from(now_text) if now_text else None
    with open_store_service(ctx) as service:
        chosen = [service.sync.source(source)] if source else service.sync.sources()
        reports = [service.sync.run_pass(s, now=at, wait=wait) for s in chosen]
    if as_json:
        print_json([r.to_json() for r in reports])
    else:
        for line in [_pass_line(r) for r in reports] or ["no synced sources"]:
            click.echo(line)
    if any(r.failed or r.error for r in reports):
        ctx.exit(1)


@sync.command()
@click.argument("source")
@click.argument("path")
@with_json
def readmit(ctx: click.Context, source: str, path: str, as_json: bool) -> None:
    """Read again a file whose document you removed (forget, kb delete): sync leaves such
    files out until asked."""
    with open_store_service(ctx) as service:
        row = service.sync.readmit(source, path)
        report = service.sync.run_pass(service.sync.source(source))
    if as_json:
        print_json({"file": row.to_json(), "pass": report.to_json()})
        return
    click.echo(f"{row.path} readmitted; {_pass_line(report)}")


def source_lines(sync: FolderSync, every_file: bool) -> tuple[list[str], list[dict[str, object]]]:
    """Text lines and JSON for each source and its files (all of them, or those that are not
    plainly current)."""
    lines: list[str] = []
    data: list[dict[str, object]] = []
    for source in sync.sources():
        files = sync.files(source.id)
        data.append({**source.to_json(), "files": [f.to_json() for f in files]})
        lines.append(_source_line(source, files))
        for status in files:
            if every_file or status.label != FileState.CURRENT.value:
                reason = f"  ({status.file.reason})" if status.file.reason else ""
                lines.append(f"  {status.label:<16}{status.file.path}{reason}")
    return lines, data


def _source_line(source: SyncSource, files: list[FileStatus]) -> str:
    error = f"; error: {source.last_error}" if source.last_error else ""
    return (
        f"{source.id}  {source.kind.value:<6} {source.collection:<12} {source.location}: "
        f"{counts_label(files)}; last looked {source.looked_label}{error}"
    )


def _pass_line(report: PassReport) -> str:
    if report.error:
        return f"{report.source.location}: {report.error}"
    return f"{report.source.location}: {report.summary} ({report.seconds:.1f} s)"
