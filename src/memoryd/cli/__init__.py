"""The ``memoryd`` command line: a thin adapter over the service object.

The commands live in one module per group (memories, review, forget, slots, recall, jobs,
chats, consolidate, kb, store, reembed, serve, config, status, evals); this module holds the root
group and registers them.
"""

from __future__ import annotations

import logging
import os
import sys

import click

from memoryd.cli import (
    chats,
    config,
    consolidate,
    evals,
    forget,
    jobs,
    kb,
    memories,
    recall,
    reembed,
    review,
    serve,
    slots,
    status,
    store,
)
from memoryd.cli.common import RAW_OUTPUT_COMMANDS, ErrorMappingGroup, VisibleControls


@click.group(cls=ErrorMappingGroup)
@click.option(
    "--db",
    help="Store file or postgresql:// URL (default: MEMORYD_DB, else db in memoryd.toml, else "
    "$MEMORYD_HOME/memoryd.db).",
)
@click.version_option(package_name="memoryd")
@click.pass_context
def main(ctx: click.Context, db: str | None) -> None:
    """memoryd: long-term memory for a self-hosted AI assistant."""
    # Commands report what matters themselves; MEMORYD_LOG_LEVEL=INFO shows the rest.
    level = logging.getLevelName(os.environ.get("MEMORYD_LOG_LEVEL", "ERROR").upper())
    logging.basicConfig(
        level=level if isinstance(level, int) else logging.ERROR,
        format="memoryd %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = {"db": db}
    if ctx.invoked_subcommand not in RAW_OUTPUT_COMMANDS and not isinstance(
        sys.stdout, VisibleControls
    ):
        # Stored text may hold what a terminal acts on (erase the line, retitle the window):
        # everything printed shows such characters as \uXXXX instead.
        sys.stdout = VisibleControls(sys.stdout)
        # And click must not drop escape sequences itself when output is piped: shown as
        # text, the owner sees the same in a terminal, a pager or a file.
        ctx.color = True


for _command in (
    memories.remember,
    memories.propose,
    memories.list_,
    memories.show,
    memories.alias,
    review.confirm,
    review.reject,
    review.archive,
    review.purge,
    review.edit,
    forget.forget,
    slots.split,
    review.review,
    recall.recall,
    recall.context,
    recall.search,
    jobs.observe,
    jobs.compact,
    jobs.mission,
    chats.import_chats,
    jobs.worker,
    jobs.jobs,
    consolidate.consolidate,
    consolidate.reconfirm,
    store.init,
    store.doctor,
    status.status,
    config.config,
    store.export_,
    store.import_,
    store.migrate_store,
    store.backup,
    store.restore,
    reembed.reembed,
    serve.serve,
    serve.mcp,
    kb.kb,
    evals.eval_,
):
    main.add_command(_command)

__all__ = ["main"]
