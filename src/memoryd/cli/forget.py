"""``memoryd forget``: erase everything about an entity, or matching a query, after showing it."""

from __future__ import annotations

import sys

import click

from memoryd.cli.common import now_from, open_store_service, print_json, with_now_json
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.memory.forget_policy import ForgetResult


@click.command()
@click.option("--entity", metavar="NAME", help="Forget what names NAME or one of its aliases.")
@click.option("--query", metavar="TEXT", help="Forget what holds every word of TEXT and is close.")
@click.option("--dry-run", is_flag=True, help="Only list what would be erased.")
@click.option("--yes", is_flag=True, help="Erase without asking (needed without a terminal).")
@with_now_json
def forget(
    ctx: click.Context,
    entity: str | None,
    query: str | None,
    dry_run: bool,
    yes: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    """List every memory (any status) and knowledge-base document that names an entity or
    matches a query, ask, then erase them all at once: memories keep a tombstone, documents
    are removed whole. Cannot be undone."""
    if (entity is None) == (query is None):
        raise InvalidInputError("give exactly one of --entity NAME or --query TEXT",
                                fields=("entity", "query"))  # fmt: skip
    at = now_from(now_text)
    with open_store_service(ctx) as service:
        plan = service.forget(entity=entity, query=query, dry_run=True, now=at)
        if dry_run or plan.empty:
            _show(plan, as_json)
            return
        if not yes:
            if as_json or not _interactive():
                _show(plan, as_json)
                raise MemorydError(
                    "nothing was erased: forgetting cannot be undone, so it needs a "
                    "confirmation; run the same command again with --yes to erase what is "
                    "listed (or answer the question in a terminal)"
                )
            _show(plan, as_json=False)
            if not click.confirm("Erase all of this? It cannot be undone", default=False):
                raise MemorydError("nothing was erased (not confirmed)")
        result = service.forget(entity=entity, query=query, now=at)
    if as_json:
        print_json(result.to_json())
        return
    if not yes:
        click.echo(f"erased: {result.summary}")
        return
    _show(result, as_json=False)


def _show(result: ForgetResult, as_json: bool) -> None:
    if as_json:
        print_json(result.to_json())
        return
    if result.empty:
        what = "names" if result.request.entity is not None else "matches"
        click.echo(f"nothing {what} {result.request.label}; nothing erased")
        return
    verb = "would erase" if result.dry_run else "erased"
    click.echo(f"{verb}: {result.summary}")
    if result.names:
        click.echo("names matched: " + ", ".join(result.names))
    if result.memories:
        click.echo("memories (content erased, tombstone kept):")
    for memory in result.memories:
        click.echo(
            f"  {memory.id}  {memory.status:<10} {memory.kind:<9} {memory.preview}  [{memory.why}]"
        )
    if result.documents:
        click.echo("documents (removed whole, every chunk):")
    for document in result.documents:
        chunks = "1 chunk" if document.chunk_count == 1 else f"{document.chunk_count} chunks"
        click.echo(f"  {document.id}  {document.title!r}, {chunks}")
        for chunk in result.chunks:
            if chunk.document_id == document.id:
                click.echo(f"    chunk {chunk.position}: {chunk.preview}  [{chunk.why}]")


def _interactive() -> bool:
    """Whether the owner can answer the question: stdin is open and a terminal."""
    stdin = sys.stdin
    return stdin is not None and not stdin.closed and stdin.isatty()
