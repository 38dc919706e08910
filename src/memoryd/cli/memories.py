"""``memoryd remember``, ``propose``, ``list``, ``show`` and ``alias``: writing and reading
memories as the owner."""

from __future__ import annotations

from typing import Any

import click

from ..clock import parse_instant
from ..model import Importance, Kind, Source, Status, kind_from_user
from .common import (
    audit_line,
    echo_memory,
    echo_write_result,
    json_option,
    memory_line,
    now_from,
    now_option,
    open_store_service,
    print_json,
)


@click.command()
@click.argument("text")
@click.option(
    "--kind",
    "kind_name",
    default="fact",
    show_default=True,
    help="fact, event, lesson or inference (aliases: semantic, episodic, ...).",
)
@click.option("--subject", help="Fact slot subject, e.g. 'owner'.")
@click.option("--predicate", help="Fact slot predicate, e.g. 'lives in'.")
@click.option("--object", "obj", help="Fact value, e.g. 'Lisbon'.")
@click.option("--importance", type=click.Choice([i.value for i in Importance]), help="For lessons.")
@click.option("--entity", "entities", multiple=True, help="An entity the memory is about.")
@click.option("--occurred-at", help="When an event happened (ISO date or time).")
@now_option
@json_option
@click.pass_context
def remember(
    ctx: click.Context,
    text: str,
    kind_name: str,
    subject: str | None,
    predicate: str | None,
    obj: str | None,
    importance: str | None,
    entities: tuple[str, ...],
    occurred_at: str | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Remember TEXT as the owner: active at once (a new fact value supersedes the old)."""
    kind = kind_from_user(kind_name) or Kind.FACT
    with open_store_service(ctx) as service:
        result = service.remember(
            text,
            kind=kind,
            subject=subject,
            predicate=predicate,
            object=obj,
            importance=Importance(importance) if importance else None,
            entities=entities,
            occurred_at=parse_instant(occurred_at, what="--occurred-at") if occurred_at else None,
            now=now_from(now_text),
        )
    if as_json:
        print_json(result.memory.to_json() if result.memory else None)
    else:
        echo_write_result(result)


@click.command()
@click.argument("batch_file", required=False, default="-", type=click.File("r"))
@click.option(
    "--source",
    "source_name",
    required=True,
    type=click.Choice([s.value for s in Source]),
    help="Where the batch came from.",
)
@click.option("--source-ref", help="Reference to the originating turn, document, ...")
@now_option
@json_option
@click.pass_context
def propose(
    ctx: click.Context,
    batch_file: Any,
    source_name: str,
    source_ref: str | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Propose a batch {"memories": [...]} from BATCH_FILE (or - for stdin); policy decides."""
    text = batch_file.read()
    with open_store_service(ctx) as service:
        results = service.propose(
            text, source=Source(source_name), source_ref=source_ref, now=now_from(now_text)
        )
    if as_json:
        print_json([r.to_json() for r in results])
    else:
        for result in results:
            echo_write_result(result)


@click.command(name="list")
@click.option("--status", type=click.Choice([s.value for s in Status]))
@click.option("--kind", "kind_name")
@click.option("--limit", type=click.IntRange(min=1))
@json_option
@click.pass_context
def list_(
    ctx: click.Context, status: str | None, kind_name: str | None, limit: int | None, as_json: bool
) -> None:
    """List memories, newest first."""
    with open_store_service(ctx) as service:
        memories = service.list_memories(
            status=Status(status) if status else None, kind=kind_from_user(kind_name), limit=limit
        )
    if as_json:
        print_json([m.to_json() for m in memories])
        return
    if not memories:
        click.echo("no memories")
    for memory in memories:
        click.echo(memory_line(memory))


@click.command()
@click.argument("memory_id")
@json_option
@click.pass_context
def show(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show a memory with its whole supersede chain and audit trail."""
    with open_store_service(ctx) as service:
        result = service.show(memory_id)
    if as_json:
        print_json(result.to_json())
        return
    echo_memory(result.memory)
    click.echo("\nchain (oldest first):")
    for memory in result.chain:
        marker = "→" if memory.id == result.memory.id else " "
        click.echo(f" {marker} {memory_line(memory)}")
    click.echo("\naudit:")
    for entry in result.audit:
        click.echo("   " + audit_line(entry))


@click.command()
@click.argument("name")
@click.argument("alias")
@click.pass_context
def alias(ctx: click.Context, name: str, alias: str) -> None:
    """Teach the entity leg that ALIAS names the same entity as NAME."""
    with open_store_service(ctx) as service:
        service.add_alias(name, alias)
    click.echo(f"{alias!r} now names {name!r}")
