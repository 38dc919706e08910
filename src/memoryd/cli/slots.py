"""``memoryd split``: a fact that was treated as the same slot as another predicate gets its
own slot back."""

from __future__ import annotations

import click

from memoryd.cli.common import memory_line, now_from, open_store_service, print_json, with_now_json


@click.command()
@click.argument("memory_id")
@with_now_json
def split(ctx: click.Context, memory_id: str, now_text: str | None, as_json: bool) -> None:
    """Give a fact its own slot back when it was wrongly treated as the same slot as another
    predicate (`show` says "same_slot_as"). If it had replaced that slot's fact, the replaced
    fact is active again."""
    with open_store_service(ctx) as service:
        result = service.split(service.resolve_id(memory_id), now=now_from(now_text))
    if as_json:
        print_json(result.to_json())
        return
    memory = result.memory
    click.echo(f"split: {memory_line(memory)}")
    click.echo(
        f"  {memory.predicate!r} has its own slot again "
        f"(no longer the same slot as {result.was_same_slot_as!r})"
    )
    if result.restored is not None:
        click.echo(f"  active again: {memory_line(result.restored)}")
