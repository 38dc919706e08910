"""``memoryd remember``, ``propose``, ``list``, ``show`` and ``alias``: writing and reading
memories as the owner."""

from __future__ import annotations

from typing import Any

import click

from memoryd.cli.common import (
    MAX_LISTED,
    audit_line,
    echo_memory,
    echo_review_item,
    echo_write_result,
    memory_line,
    now_from,
    open_store_service,
    parsed,
    print_json,
    review_json,
    text_of_file,
    with_json,
    with_now_json,
)
from memoryd.clock import parse_instant
from memoryd.memory.model import Importance, Kind, Source, Status, kind_from_user


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
@with_now_json
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
    kind = parsed("kind", lambda: kind_from_user(kind_name)) or Kind.FACT
    happened = (
        parsed("occurred_at", lambda: parse_instant(occurred_at, what="--occurred-at"))
        if occurred_at
        else None
    )
    at = now_from(now_text)
    with open_store_service(ctx) as service:
        result = service.remember(
            text,
            kind=kind,
            subject=subject,
            predicate=predicate,
            object=obj,
            importance=Importance(importance) if importance else None,
            entities=entities,
            occurred_at=happened,
            now=at,
        )
    if as_json:
        shaped: dict[str, Any] | None = {**result.memory.to_json()} if result.memory else None
        if shaped is not None:
            shaped["replaced"] = [old.to_json() for old in result.replaced]
        print_json(shaped)
    else:
        echo_write_result(result)


@click.command()
@click.argument("batch_file", required=False, default="-", type=click.File("rb"))
@click.option(
    "--source",
    "source_name",
    required=True,
    type=click.Choice([s.value for s in Source]),
    help="Where the batch came from.",
)
@click.option("--source-ref", help="Reference to the originating turn, document, ...")
@with_now_json
def propose(
    ctx: click.Context,
    batch_file: Any,
    source_name: str,
    source_ref: str | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Propose a batch {"memories": [...]} from BATCH_FILE (or - for stdin); policy decides."""
    text = text_of_file(batch_file, "batch_file", 'a JSON batch {"memories": [...]}')
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
@click.option("--limit", type=click.IntRange(min=1, max=MAX_LISTED))
@with_json
def list_(
    ctx: click.Context, status: str | None, kind_name: str | None, limit: int | None, as_json: bool
) -> None:
    """List memories, newest first; a pending one with why it waits and the fact it would
    replace."""
    kind = parsed("kind", lambda: kind_from_user(kind_name))
    with open_store_service(ctx) as service:
        memories = service.list_memories(
            status=Status(status) if status else None, kind=kind, limit=limit
        )
        pending = [m for m in memories if m.status is Status.PENDING]
        review = {item.pending.id: item for item in service.review_items(pending)}
    if as_json:
        print_json([review_json(review[m.id]) if m.id in review else m.to_json() for m in memories])
        return
    if not memories:
        click.echo("no memories")
    for memory in memories:
        click.echo(memory_line(memory))
        if memory.id in review:
            echo_review_item(review[memory.id])


@click.command()
@click.argument("memory_id")
@with_json
def show(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show a memory with its whole supersede chain and audit trail; a pending one with why
    it waits and the fact it would replace."""
    with open_store_service(ctx) as service:
        result = service.show(service.resolve_id(memory_id))
        pending = result.memory.status is Status.PENDING
        item = service.review_items([result.memory])[0] if pending else None
    if as_json:
        shaped: dict[str, Any] = {**result.to_json()}
        if item is not None:
            replaced = item.would_replace
            shaped["reason"] = item.reason
            shaped["would_replace"] = replaced.to_json() if replaced else None
        print_json(shaped)
        return
    echo_memory(result.memory)
    if item is not None:
        if item.reason:
            click.echo(f"{'reason':>18}: {item.reason}")
        if item.would_replace is not None:
            click.echo(f"{'would replace':>18}: {memory_line(item.would_replace)}")
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
