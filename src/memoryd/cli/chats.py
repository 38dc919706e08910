"""``memoryd import-chats``: a ChatGPT or Claude export's conversations queued for extraction,
with a progress line on stderr and a summary."""

from __future__ import annotations

import sys
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from memoryd.cli.common import echo_one, now_from, open_store_service, with_now_json
from memoryd.extraction.chat_export_policy import FORMATS

if TYPE_CHECKING:
    from memoryd.extraction.chat_import import ChatImportReport, ImportProgress

_NAMES = {"chatgpt": "ChatGPT", "claude": "Claude"}


class ImportProgressLine:
    """ "importing: 40 % of the file read, 1200 conversations, 15000 turns to queue" on stderr,
    redrawn in place on a terminal; elsewhere a line at every tenth of the file; at the end
    "importing: 3000 conversations read, 25000 turns queued"."""

    def __init__(self, out: TextIO, *, redraw: bool, dry_run: bool = False) -> None:
        self._out = out
        self._redraw = redraw
        self._dry_run = dry_run
        self._tenth = -1

    def __call__(self, progress: ImportProgress) -> None:
        """Another conversation was read (or, ``done``, the import is over)."""
        if progress.done:
            verb = "to queue" if self._dry_run else "queued"
            line = (
                f"importing: {progress.conversations} conversations read, "
                f"{progress.turns} turns {verb}"
            )
        else:
            line = (
                f"importing: {progress.share_read:.0%} of the file read, "
                f"{progress.conversations} conversations, {progress.turns} turns to queue"
            )
        if self._redraw:
            self._out.write("\r\x1b[2K" + line + ("\n" if progress.done else ""))
        else:
            tenth = int(progress.share_read * 10)
            if tenth == self._tenth and not progress.done:
                return
            self._tenth = tenth
            self._out.write(line + "\n")
        self._out.flush()


@click.command("import-chats")
@click.argument("export_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "chosen",
    type=click.Choice([*FORMATS, "auto"]),
    default="auto",
    show_default=True,
    help="The export's service; auto recognises it by shape.",
)
@click.option("--dry-run", is_flag=True, help="Count what would be queued; queue nothing.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr (conversations and turns queued). Default: on a terminal, "
    "without --json.",
)
@with_now_json
def import_chats(
    ctx: click.Context,
    export_file: Path,
    chosen: str,
    dry_run: bool,
    progress: bool | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Queue a ChatGPT or Claude export's conversations for extraction: EXPORT_FILE is its
    conversations.json or the export's .zip. Each owner message and the reply to it is one
    turn, dated by the original message; turns already imported are skipped, so importing a
    newer export queues only what is new. `memoryd worker` (or serve) extracts them."""
    shown = progress if progress is not None else (sys.stderr.isatty() and not as_json)
    listener = (
        ImportProgressLine(sys.stderr, redraw=sys.stderr.isatty(), dry_run=dry_run)
        if shown
        else None
    )
    now = now_from(now_text) if now_text else None
    with open_store_service(ctx) as service:
        report = service.import_chats(
            export_file, format=chosen, dry_run=dry_run, now=now, progress=listener
        )
        zone = service.zone
    echo_one(report, as_json, lambda imported: summary(export_file.name, imported, zone))


def summary(name: str, report: ChatImportReport, zone: tzinfo) -> str:
    """The lines an import ends with: what was queued, the owner's days it spans, what was
    skipped."""
    verb = "would queue" if report.dry_run else "queued"
    span = ""
    if report.first_at and report.last_at:
        first, last = report.first_at.astimezone(zone), report.last_at.astimezone(zone)
        span = f", {first:%Y-%m-%d} to {last:%Y-%m-%d}"
    lines = [
        f"{name} ({_NAMES[report.format]} export): {report.conversations} conversations; "
        f"{verb} {report.turns_queued} turns from {report.conversations_queued} of them{span}",
        f"skipped: {report.skipped_imported} turns already imported, "
        f"{report.skipped_empty} messages empty or unsupported",
    ]
    if report.dry_run:
        lines.append("nothing was queued (--dry-run)")
    elif report.turns_queued:
        lines.append("`memoryd worker` (or serve) extracts them, oldest first")
    return "\n".join(lines)
