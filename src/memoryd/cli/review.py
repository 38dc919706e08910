"""The owner's review: ``confirm``, ``reject``, ``archive``, ``purge``, ``edit`` and the
interactive ``review`` walk of the pending queue."""

from __future__ import annotations

import sys

import click

from memoryd.cli.common import (
    cli_message,
    echo_review_item,
    memory_line,
    now_from,
    open_store_service,
    print_json,
    with_now_json,
)
from memoryd.errors import MemorydError


def _owner_action(name: str, doc: str) -> click.Command:
    @click.command(name=name, help=doc)
    @click.argument("memory_id")
    @with_now_json
    def command(ctx: click.Context, memory_id: str, now_text: str | None, as_json: bool) -> None:
        at = now_from(now_text)
        with open_store_service(ctx) as service:
            memory = getattr(service, name)(service.resolve_id(memory_id), now=at)
        if as_json:
            print_json(memory.to_json())
        else:
            click.echo(f"{name}: {memory_line(memory)}")

    return command


confirm = _owner_action(
    "confirm", "Activate a pending memory (supersedes the active fact of its slot)."
)
reject = _owner_action("reject", "Reject a memory; near-copies proposed later are dropped.")
archive = _owner_action("archive", "Archive a memory.")
purge = _owner_action("purge", "Erase a memory's content for privacy, keeping a tombstone.")


@click.command()
@click.argument("memory_id")
@click.argument("text")
@click.option("--object", "obj", help="The corrected fact value.")
@with_now_json
def edit(
    ctx: click.Context,
    memory_id: str,
    text: str,
    obj: str | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Supersede a memory with corrected TEXT (the old one is archived and points at it)."""
    at = now_from(now_text)
    with open_store_service(ctx) as service:
        memory = service.edit(service.resolve_id(memory_id), text, object=obj, now=at)
    if as_json:
        print_json(memory.to_json())
    else:
        click.echo(f"edited: {memory_line(memory)}")


@click.command()
@with_now_json
def review(ctx: click.Context, now_text: str | None, as_json: bool) -> None:
    """Walk the pending queue in a terminal: each item with why it waits and the fact it
    would replace; confirm, reject, edit or skip it. Without a terminal, see --json."""
    now_from(now_text)  # a bad --now is refused before anything is asked
    with open_store_service(ctx) as service:
        queue = service.review_queue()
        if as_json:
            print_json([item.to_json() for item in queue])
            return
        if not queue:
            click.echo("nothing to review")
            return
        if not _interactive():
            raise MemorydError(
                f"`memoryd review` asks about each of the {len(queue)} pending memories and "
                "needs a terminal; without one, read them (with their reasons and the facts "
                "they would replace) with `memoryd list --status pending --json`, then run "
                "`memoryd confirm ID` or `memoryd reject ID` for each"
            )
        for number, item in enumerate(queue, start=1):
            click.echo(f"\n[{number}/{len(queue)}] {memory_line(item.pending)}")
            click.echo(f"    source: {item.pending.source.value}")
            echo_review_item(item)
            choice = click.prompt(
                "    [c]onfirm, [r]eject, [e]dit, [s]kip, [q]uit",
                type=click.Choice(["c", "r", "e", "s", "q"]),
                show_choices=False,
                default="s",
            )
            now = now_from(now_text)
            try:
                if choice == "c":
                    click.echo(
                        "    confirmed: " + memory_line(service.confirm(item.pending.id, now=now))
                    )
                elif choice == "r":
                    click.echo(
                        "    rejected: " + memory_line(service.reject(item.pending.id, now=now))
                    )
                elif choice == "e":
                    text = click.prompt("    new text", default=item.pending.content)
                    click.echo(
                        "    edited: " + memory_line(service.edit(item.pending.id, text, now=now))
                    )
                elif choice == "q":
                    break
            except MemorydError as error:
                click.echo(f"    error: {cli_message(error)}", err=True)


def _interactive() -> bool:
    """Whether the owner can answer prompts: stdin is open and a terminal."""
    stdin = sys.stdin
    return stdin is not None and not stdin.closed and stdin.isatty()
