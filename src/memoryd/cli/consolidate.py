"""``memoryd consolidate`` and ``reconfirm`` (the facts consolidation marked unconfirmed)."""

from __future__ import annotations

import click

from memoryd.cli.common import (
    echo_list,
    echo_one,
    memory_line,
    now_from,
    open_store_service,
    print_json,
    with_now_json,
)


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@with_now_json
def consolidate(ctx: click.Context, dry_run: bool, now_text: str | None, as_json: bool) -> None:
    """Run the daily consolidation stages now (each a status change or a supersede)."""
    at = now_from(now_text)
    with open_store_service(ctx) as service:
        report = service.consolidate(now=at, dry_run=dry_run)
    if as_json:
        print_json(report.to_json())
        return
    for step in report.steps:
        click.echo(f"{step.stage.value:<18} {step.memory_id}  {step.action.value:<9} {step.reason}")
    for stage, state in report.stages.items():
        click.echo(f"{stage}: {state}")


@click.command()
@click.argument("memory_id", required=False)
@with_now_json
def reconfirm(
    ctx: click.Context, memory_id: str | None, now_text: str | None, as_json: bool
) -> None:
    """Without ID: the facts consolidation marked as a year unconfirmed. With ID: the owner
    says it is still true."""
    at = now_from(now_text)
    with open_store_service(ctx) as service:
        if memory_id is not None:
            memory = service.reconfirm(service.resolve_id(memory_id), now=at)
            echo_one(memory, as_json, lambda kept: f"reconfirmed: {memory_line(kept)}")
            return
        queue = service.reconfirmation_queue()
    echo_list(queue, as_json, memory_line, "nothing to reconfirm")
