"""The ``memoryd`` command line: a thin adapter over the service object."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from .app import open_service
from .clock import parse_instant, utc_now
from .doctor import run_doctor
from .errors import ExtractionFailedError, ExtractionOffError, InvalidInputError, MemorydError
from .extraction import parse_mission, parse_turns
from .jobs import JobStatus
from .model import AuditEntry, Importance, Kind, Memory, Source, Status, kind_from_user
from .recall import LEGS
from .service import MemoryService, Observation, RecallResult, WriteResult
from .settings import resolve_settings

F = TypeVar("F", bound=Callable[..., Any])


class _Cli(click.Group):
    """Maps the project's errors to one line on stderr and exit code 1, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemorydError as error:
            click.echo(f"error: {error}", err=True)
            ctx.exit(1)


@click.group(cls=_Cli)
@click.option("--db", envvar="MEMORYD_DB", help="Store file (default: $MEMORYD_HOME/memoryd.db).")
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


@contextmanager
def _service(ctx: click.Context, *, create: bool = False) -> Iterator[MemoryService]:
    settings = resolve_settings(ctx.obj["db"])
    service = open_service(settings, create=create)
    try:
        yield service
    finally:
        service.close()


def _now_option(func: F) -> F:
    return click.option(
        "--now", "now_text", metavar="ISO", help="Act as if it were this time (for testing)."
    )(func)


def _json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def _trigger_options(func: F) -> F:
    """--wait, --now and --json, shared by the extraction triggers."""
    command: Any = _now_option(_json_option(click.pass_context(func)))
    wait = click.option("--wait", is_flag=True, help="Return after the extraction has run.")
    return cast(F, wait(command))


def _now(now_text: str | None) -> datetime:
    return parse_instant(now_text, what="--now") if now_text else utc_now()


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


@main.command()
@_json_option
@click.pass_context
def init(ctx: click.Context, as_json: bool) -> None:
    """Create the store (idempotent), record its embedding model, and write the API token
    ($MEMORYD_HOME/token, mode 0600) unless it exists."""
    from .http.auth import ensure_token

    with _service(ctx, create=True) as service:
        signature = service.store.embedding_signature()
        location = str(getattr(service.store, "path", ctx.obj["db"]))
    token_file = ensure_token(resolve_settings(ctx.obj["db"]).home)
    if as_json:
        _print_json(
            {
                "db": location,
                "embedding_model": signature.model if signature else None,
                "embedding_dimension": signature.dimension if signature else None,
                "token_file": str(token_file),
            }
        )
    else:
        click.echo(f"memoryd store ready at {location}")
        click.echo(f"API token in {token_file}")


@main.command()
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
@_now_option
@_json_option
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
    with _service(ctx) as service:
        result = service.remember(
            text,
            kind=kind,
            subject=subject,
            predicate=predicate,
            object=obj,
            importance=Importance(importance) if importance else None,
            entities=entities,
            occurred_at=parse_instant(occurred_at, what="--occurred-at") if occurred_at else None,
            now=_now(now_text),
        )
    if as_json:
        _print_json(result.memory.to_json() if result.memory else None)
    else:
        _echo_result(result)


@main.command()
@click.argument("batch_file", required=False, default="-", type=click.File("r"))
@click.option(
    "--source",
    "source_name",
    required=True,
    type=click.Choice([s.value for s in Source]),
    help="Where the batch came from.",
)
@click.option("--source-ref", help="Reference to the originating turn, document, ...")
@_now_option
@_json_option
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
    with _service(ctx) as service:
        results = service.propose(
            text, source=Source(source_name), source_ref=source_ref, now=_now(now_text)
        )
    if as_json:
        _print_json([r.to_json() for r in results])
    else:
        for result in results:
            _echo_result(result)


@main.command(name="list")
@click.option("--status", type=click.Choice([s.value for s in Status]))
@click.option("--kind", "kind_name")
@click.option("--limit", type=click.IntRange(min=1))
@_json_option
@click.pass_context
def list_(
    ctx: click.Context, status: str | None, kind_name: str | None, limit: int | None, as_json: bool
) -> None:
    """List memories, newest first."""
    with _service(ctx) as service:
        memories = service.list_memories(
            status=Status(status) if status else None, kind=kind_from_user(kind_name), limit=limit
        )
    if as_json:
        _print_json([m.to_json() for m in memories])
        return
    if not memories:
        click.echo("no memories")
    for memory in memories:
        click.echo(_line(memory))


@main.command()
@click.argument("memory_id")
@_json_option
@click.pass_context
def show(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show a memory with its whole supersede chain and audit trail."""
    with _service(ctx) as service:
        result = service.show(memory_id)
    if as_json:
        _print_json(result.to_json())
        return
    _echo_memory(result.memory)
    click.echo("\nchain (oldest first):")
    for memory in result.chain:
        marker = "→" if memory.id == result.memory.id else " "
        click.echo(f" {marker} {_line(memory)}")
    click.echo("\naudit:")
    for entry in result.audit:
        click.echo("   " + _audit_line(entry))


def _owner_action(name: str, doc: str) -> None:
    @main.command(name=name, help=doc)
    @click.argument("memory_id")
    @_now_option
    @_json_option
    @click.pass_context
    def command(ctx: click.Context, memory_id: str, now_text: str | None, as_json: bool) -> None:
        with _service(ctx) as service:
            memory = getattr(service, name)(memory_id, now=_now(now_text))
        if as_json:
            _print_json(memory.to_json())
        else:
            click.echo(f"{name}: {_line(memory)}")


_owner_action("confirm", "Activate a pending memory (supersedes the active fact of its slot).")
_owner_action("reject", "Reject a memory; near-copies proposed later are dropped.")
_owner_action("archive", "Archive a memory.")
_owner_action("purge", "Erase a memory's content for privacy, keeping a tombstone.")


@main.command()
@click.argument("memory_id")
@click.argument("text")
@click.option("--object", "obj", help="The corrected fact value.")
@_now_option
@_json_option
@click.pass_context
def edit(
    ctx: click.Context,
    memory_id: str,
    text: str,
    obj: str | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Supersede a memory with corrected TEXT (the old one is archived and points at it)."""
    with _service(ctx) as service:
        memory = service.edit(memory_id, text, object=obj, now=_now(now_text))
    if as_json:
        _print_json(memory.to_json())
    else:
        click.echo(f"edited: {_line(memory)}")


@main.command()
@_now_option
@_json_option
@click.pass_context
def review(ctx: click.Context, now_text: str | None, as_json: bool) -> None:
    """Walk the pending queue: confirm, reject, edit or skip each item."""
    with _service(ctx) as service:
        queue = service.review_queue()
        if as_json:
            _print_json([item.to_json() for item in queue])
            return
        if not queue:
            click.echo("nothing to review")
            return
        for number, item in enumerate(queue, start=1):
            click.echo(f"\n[{number}/{len(queue)}] {_line(item.pending)}")
            click.echo(f"    source: {item.pending.source.value}")
            if item.would_supersede is not None:
                click.echo(f"    would replace: {_line(item.would_supersede)}")
            choice = click.prompt(
                "    [c]onfirm, [r]eject, [e]dit, [s]kip, [q]uit",
                type=click.Choice(["c", "r", "e", "s", "q"]),
                show_choices=False,
                default="s",
            )
            now = _now(now_text)
            try:
                if choice == "c":
                    click.echo("    confirmed: " + _line(service.confirm(item.pending.id, now=now)))
                elif choice == "r":
                    click.echo("    rejected: " + _line(service.reject(item.pending.id, now=now)))
                elif choice == "e":
                    text = click.prompt("    new text", default=item.pending.content)
                    click.echo("    edited: " + _line(service.edit(item.pending.id, text, now=now)))
                elif choice == "q":
                    break
            except MemorydError as error:
                click.echo(f"    error: {error}", err=True)


@main.command()
@click.argument("message")
@click.option("--budget", type=click.IntRange(min=0), help="Token budget (default 1500).")
@click.option(
    "--explain",
    is_flag=True,
    help="Show the gates that let each item in, its leg ranks, cosine, recency and score, "
    "and why the others were dropped.",
)
@_now_option
@_json_option
@click.pass_context
def recall(
    ctx: click.Context,
    message: str,
    budget: int | None,
    explain: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Print the fenced memory block for MESSAGE, as the assistant would get it."""
    with _service(ctx) as service:
        result = service.recall(message, budget=budget, now=_now(now_text))
    if as_json:
        _print_json(result.to_json())
        return
    if explain:
        _echo_explain(result)
        return
    click.echo(result.text if result.text else "(no memories qualify)")


@main.command()
@click.argument("query")
@click.option("--kind", "kind_name")
@click.option("--since", help="ISO date or time (inclusive).")
@click.option("--until", help="ISO date or time (exclusive).")
@click.option("--limit", type=click.IntRange(min=1, max=200), default=10, show_default=True)
@_now_option
@_json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    kind_name: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Search memories (the search_memory tool): a ranked list, no packing."""
    with _service(ctx) as service:
        found = service.search_memory(
            query,
            kind=kind_from_user(kind_name),
            since=parse_instant(since, what="--since") if since else None,
            until=parse_instant(until, what="--until") if until else None,
            limit=limit,
            now=_now(now_text),
        )
    if as_json:
        _print_json(found.to_json())
        return
    if not found.items:
        click.echo("no matches")
    for scored in found.items:
        click.echo(f"{scored.score:.4f}  {_line(scored.memory)}")


@main.command()
@click.argument("name")
@click.argument("alias")
@click.pass_context
def alias(ctx: click.Context, name: str, alias: str) -> None:
    """Teach the entity leg that ALIAS names the same entity as NAME."""
    with _service(ctx) as service:
        service.add_alias(name, alias)
    click.echo(f"{alias!r} now names {name!r}")


@main.command()
@click.option("--user", "user_message", required=True, help="The owner's message.")
@click.option("--summary", help="The turn's summary.")
@_trigger_options
def observe(
    ctx: click.Context,
    user_message: str,
    summary: str | None,
    wait: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Queue a turn for extraction (fire-and-forget), or run it now with --wait."""
    with _service(ctx) as service:
        observation = service.observe_turn(user_message, summary, now=_now(now_text))
        _finish_trigger(service, observation, wait, now_text, as_json)


@main.command()
@click.argument("turns_file", type=click.File("r"))
@_trigger_options
def compact(
    ctx: click.Context, turns_file: Any, wait: bool, now_text: str | None, as_json: bool
) -> None:
    """Extract from turns about to be compacted: a JSON array of {"role", "content"}."""
    turns = parse_turns(turns_file.read())
    with _service(ctx) as service:
        observation = service.before_compaction(turns, now=_now(now_text))
        _finish_trigger(service, observation, wait, now_text, as_json)


@main.command()
@click.argument("digest_file", type=click.File("r"))
@_trigger_options
def mission(
    ctx: click.Context, digest_file: Any, wait: bool, now_text: str | None, as_json: bool
) -> None:
    """Extract discoveries from a finished mission's digest: JSON {"title", "goal",
    "outcome"}, or text whose first line is the title."""
    digest = parse_mission(digest_file.read())
    with _service(ctx) as service:
        observation = service.mission_finished(digest, now=_now(now_text))
        _finish_trigger(service, observation, wait, now_text, as_json)


def _finish_trigger(
    service: MemoryService,
    observation: Observation,
    wait: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    if not observation.queued:
        raise ExtractionOffError(observation.notice or "extraction is off")
    assert observation.job_id is not None
    if not wait:
        if as_json:
            _print_json(observation.to_json())
        else:
            click.echo(f"queued {observation.job_id}; `memoryd worker` (or serve) extracts it")
        return
    reports = service.run_jobs(job_id=observation.job_id, now=_now(now_text))
    job = reports[0].job if reports else service.job(observation.job_id)
    results = reports[0].results if reports else ()
    if as_json:
        _print_json([r.to_json() for r in results])
    else:
        click.echo(
            f"job {job.id}: {job.status.value}" + (f" ({job.last_error})" if job.last_error else "")
        )
        for result in results:
            _echo_result(result)
    if job.status is not JobStatus.DONE:
        raise ExtractionFailedError(
            f"extraction of job {job.id} did not finish: {job.last_error or job.status.value}; "
            "it stays queued and `memoryd worker` retries it"
            if job.status is JobStatus.QUEUED
            else f"extraction of job {job.id} failed: {job.last_error}"
        )


@main.command()
@click.option("--once", is_flag=True, help="Run the due jobs, then exit.")
@click.option(
    "--poll",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="Seconds between looks at the queue.",
)
@_now_option
@_json_option
@click.pass_context
def worker(
    ctx: click.Context, once: bool, poll: float, now_text: str | None, as_json: bool
) -> None:
    """Drain the extraction queue and the document retries (forever, or --once)."""
    with _service(ctx) as service:
        if once:
            at = _now(now_text) if now_text else None
            reports = service.run_jobs(now=at)
            retried = service.kb.run_retries(now=at)
            if as_json:
                _print_json(
                    [r.to_json() for r in reports] + [{"kb_retry": r.to_json()} for r in retried]
                )
            else:
                for report in reports:
                    click.echo(
                        f"job {report.job.id} ({report.job.kind}): "
                        f"{report.job.status.value}"
                        + (f" — {report.job.last_error}" if report.job.last_error else "")
                        + f", {len(report.results)} proposals"
                    )
                for result in retried:
                    click.echo(
                        f"document retry {result.source}: {result.outcome}"
                        + (f" — {result.reason}" if result.reason else "")
                    )
                click.echo(
                    f"{len(reports) + len(retried)} jobs run; queue: {service.store.jobs.counts()}"
                )
            return
        click.echo("memoryd worker: draining the extraction queue (Ctrl-C to stop)")
        try:
            while True:
                for report in service.run_jobs():
                    click.echo(
                        f"job {report.job.id} ({report.job.kind}): "
                        f"{report.job.status.value}, {len(report.results)} proposals"
                    )
                for result in service.kb.run_retries():
                    click.echo(f"document retry {result.source}: {result.outcome}")
                time.sleep(poll)
        except KeyboardInterrupt:
            click.echo("stopped")


@main.command()
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@_now_option
@_json_option
@click.pass_context
def consolidate(ctx: click.Context, dry_run: bool, now_text: str | None, as_json: bool) -> None:
    """Run the daily consolidation stages now (each a status change or a supersede)."""
    with _service(ctx) as service:
        report = service.consolidate(now=_now(now_text), dry_run=dry_run)
    if as_json:
        _print_json(report.to_json())
        return
    for step in report.steps:
        click.echo(f"{step.stage.value:<18} {step.memory_id}  {step.action.value:<9} {step.reason}")
    for stage, state in report.stages.items():
        click.echo(f"{stage}: {state}")


@main.command()
@click.argument("memory_id", required=False)
@_now_option
@_json_option
@click.pass_context
def reconfirm(
    ctx: click.Context, memory_id: str | None, now_text: str | None, as_json: bool
) -> None:
    """Without ID: the facts consolidation marked as a year unconfirmed. With ID: the owner
    says it is still true."""
    with _service(ctx) as service:
        if memory_id is not None:
            memory = service.reconfirm(memory_id, now=_now(now_text))
            if as_json:
                _print_json(memory.to_json())
            else:
                click.echo(f"reconfirmed: {_line(memory)}")
            return
        queue = service.reconfirmation_queue()
    if as_json:
        _print_json([m.to_json() for m in queue])
        return
    if not queue:
        click.echo("nothing to reconfirm")
    for memory in queue:
        click.echo(_line(memory))


@main.command()
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@_json_option
@click.pass_context
def jobs(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The newest background jobs, with their state and last error."""
    with _service(ctx) as service:
        recent = service.store.jobs.recent(limit)
        counts = service.store.jobs.counts()
    if as_json:
        _print_json({"counts": counts, "jobs": [j.to_json() for j in recent]})
        return
    click.echo("queue: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "empty"))
    for job in recent:
        click.echo(
            f"{job.id}  {job.kind:<10} {job.status.value:<7} attempts {job.attempts}"
            + (f"  {job.last_error}" if job.last_error else "")
        )


@main.command()
@_json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check the store, the embedder, the tokenizer and every configured LLM route."""
    checks = run_doctor(resolve_settings(ctx.obj["db"]))
    if as_json:
        _print_json([c.to_json() for c in checks])
    else:
        for check in checks:
            click.echo(f"{'ok ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    if not all(check.ok for check in checks):
        ctx.exit(1)


def _echo_explain(result: RecallResult) -> None:
    click.echo("legs: " + ", ".join(f"{leg} {state}" for leg, state in result.legs.items()))
    if result.window is not None:
        click.echo(
            f"time window: {result.window.phrase!r} = {result.window.start.date()} .. "
            f"{result.window.end.date()} (exclusive)"
        )
    facts = result.facts
    if facts.words:
        words = ", ".join(f"{w} ({facts.word_frequency.get(w, '?')})" for w in facts.words)
        click.echo(f"query words (memories holding each): {words}")
    if facts.unknown_names:
        click.echo("names no memory mentions: " + ", ".join(facts.unknown_names))
    click.echo(f"block: {result.packed.tokens} tokens")
    if result.silence:
        click.echo(f"memories section empty: {result.silence}")
    click.echo("")
    header = f"{'id':<26}  {'kind':<9} {'score':>7} {'cosine':>6} "
    header += " ".join(f"{leg:>7}" for leg in LEGS)
    header += f" {'recency':>7} {'weight':>6}  gates · content"
    click.echo(header)
    for lesson in result.packed.lessons:
        blank = " ".join(f"{'':>7}" for _ in LEGS)
        click.echo(
            f"{lesson.id:<26}  {'lesson':<9} {'always':>7} {'':>6} {blank} {'':>7} {'':>6}  "
            f"standing lesson · {lesson.content}"
        )
    for item in result.packed.items:
        ranks = " ".join(f"{item.ranks.get(leg, '-')!s:>7}" for leg in LEGS)
        cosine = "-" if item.cosine is None else f"{item.cosine:.3f}"
        click.echo(
            f"{item.memory.id:<26}  {item.memory.kind.value:<9} {item.score:>7.4f} {cosine:>6} "
            f"{ranks} {item.recency:>7.3f} {item.weight:>6.2f}  "
            f"{'+'.join(item.gates)} · {item.memory.content}"
        )
    if result.dropped:
        click.echo("\ndropped:")
        for dropped in result.dropped:
            click.echo(f"{dropped.memory_id:<26}  {dropped.reason}")


def _echo_result(result: WriteResult) -> None:
    memory = f" {_line(result.memory)}" if result.memory else ""
    click.echo(f"{result.outcome.value}: {result.reason}{memory and chr(10) + '  ' + memory}")


def _line(memory: Memory) -> str:
    content = "[purged]" if memory.purged_at else memory.content
    return (
        f"{memory.id}  {memory.kind.value:<9} {memory.status.value:<8} "
        f"{memory.confidence:.2f}  {content}"
    )


def _echo_memory(memory: Memory) -> None:
    for key, value in memory.to_json().items():
        if value not in (None, [], False) or key in ("status", "content"):
            click.echo(f"{key:>18}: {value}")


def _audit_line(entry: AuditEntry) -> str:
    rule = f" [{entry.rule}]" if entry.rule else ""
    before = entry.from_status.value if entry.from_status else "-"
    return (
        f"{entry.at.isoformat()}  {entry.memory_id}  {entry.action} {before}→"
        f"{entry.to_status.value}  by {entry.actor.value}{rule}: {entry.reason}"
    )


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--daily-at",
    default="03:30",
    show_default=True,
    help="Local time (HH:MM) of the daily consolidation.",
)
@click.option(
    "--tz",
    "zone_name",
    help="IANA time zone for --daily-at (default: MEMORYD_TZ, else the system's).",
)
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, daily_at: str, zone_name: str | None) -> None:
    """The HTTP API, the background worker and the daily consolidation, until Ctrl-C."""
    from .http.auth import ensure_token, load_token
    from .http.server import ServeOptions, check_bind, is_loopback, local_zone
    from .http.server import serve as run_server
    from .schedule import parse_daily_at

    settings = resolve_settings(ctx.obj["db"])
    try:
        at = parse_daily_at(daily_at)
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
    zone = local_zone(zone_name)
    token = load_token(settings.home)
    if token is None and is_loopback(host):
        ensure_token(settings.home)
        token = load_token(settings.home)
    check_bind(host, token)
    assert token is not None
    with _service(ctx) as service:
        click.echo(
            f"memoryd serving {settings.db} on http://{host}:{port} (token: "
            f"{'MEMORYD_TOKEN' if os.environ.get('MEMORYD_TOKEN') else settings.home / 'token'});"
            f" daily consolidation at {daily_at} {zone}",
            err=True,
        )
        run_server(service, token, ServeOptions(host=host, port=port, daily_at=at, zone=zone))


@main.command()
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True
)
@click.option("--host", default="127.0.0.1", show_default=True, help="For --transport http.")
@click.option("--port", type=click.IntRange(1, 65535), default=8766, show_default=True)
@click.option(
    "--pin",
    "pinned",
    multiple=True,
    help="A knowledge-base collection this assistant pins (boosted 1.5x; repeatable).",
)
@click.pass_context
def mcp(ctx: click.Context, transport: str, host: str, port: int, pinned: tuple[str, ...]) -> None:
    """The model's four tools over MCP (stdio, or streamable HTTP at /mcp with the token)."""
    import anyio

    from .http.auth import load_token
    from .http.server import check_bind
    from .mcp_server import build_server, http_app, run_stdio

    settings = resolve_settings(ctx.obj["db"])
    with _service(ctx) as service:
        server = build_server(service, pinned)
        if transport == "stdio":
            anyio.run(run_stdio, server)
            return
        import uvicorn

        token = load_token(settings.home)
        if token is None:
            raise InvalidInputError(
                "the MCP HTTP transport needs a token: run `memoryd init` or set MEMORYD_TOKEN"
            )
        check_bind(host, token)
        from .http.server import exit_cleanly_on_sigterm

        click.echo(f"memoryd MCP on http://{host}:{port}/mcp", err=True)
        exit_cleanly_on_sigterm()
        uvicorn.run(http_app(server, token, host), host=host, port=port, log_level="warning")


@main.command(name="export")
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
    from .portability import export_store

    with _service(ctx) as service:
        if out_path is None:
            summary = export_store(service.store, sys.stdout, with_vectors=with_vectors)
        else:
            with open(out_path, "w", encoding="utf-8") as handle:
                summary = export_store(service.store, handle, with_vectors=with_vectors)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary.counts.items()) if k != "header")
    click.echo(f"exported {counts or 'nothing'}; sha256 {summary.sha256}", err=True)


@main.command(name="import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@_json_option
@click.pass_context
def import_(ctx: click.Context, file: Any, as_json: bool) -> None:
    """Load an export into an empty store (one transaction; re-embeds what has no vector)."""
    from .portability import import_store

    with _service(ctx, create=True) as service:
        summary = import_store(service.store, file, service.embedder)
    if as_json:
        _print_json(summary.to_json())
    else:
        counts = ", ".join(f"{v} {k}" for k, v in sorted(summary.counts.items()) if k != "header")
        click.echo(f"imported {counts or 'nothing'}")


@main.command(name="migrate-store")
@click.argument("source")
@click.argument("destination")
@_json_option
@click.pass_context
def migrate_store(ctx: click.Context, source: str, destination: str, as_json: bool) -> None:
    """Copy a store (SQLite file or postgresql:// URL) into an empty one, losslessly, and
    verify it: both stores must export the same records with the same checksum."""
    import io

    from .portability import export_store, import_store

    with _service_at(source, create=False) as origin:
        buffer = io.StringIO()
        before = export_store(origin.store, buffer, with_vectors=True)
        with _service_at(destination, create=True) as target:
            buffer.seek(0)
            import_store(target.store, buffer, target.embedder)
            after = export_store(target.store, io.StringIO(), with_vectors=True)
    verified = before.sha256 == after.sha256 and before.counts == after.counts
    if as_json:
        _print_json(
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


@main.command()
@click.argument("out_path", metavar="OUT", type=click.Path(dir_okay=False))
@_json_option
@click.pass_context
def backup(ctx: click.Context, out_path: str, as_json: bool) -> None:
    """A consistent copy of the store, safe while memoryd runs: an SQLite file (the backup
    API) for an SQLite store, a JSON Lines export with vectors for PostgreSQL."""
    from .backup import make_backup

    with _service(ctx) as service:
        result = make_backup(service.store, Path(out_path))
    if as_json:
        _print_json(result.to_json())
    else:
        click.echo(f"backup written to {result.path} ({result.kind}): {result.describe()}")


@main.command()
@click.argument("backup_path", metavar="BACKUP", type=click.Path(exists=True, dir_okay=False))
@click.option("--force", is_flag=True, help="Replace an SQLite store that holds data.")
@_json_option
@click.pass_context
def restore(ctx: click.Context, backup_path: str, force: bool, as_json: bool) -> None:
    """Restore a backup into the store chosen by --db (stop memoryd first). An SQLite backup
    replaces the file after its integrity is checked; an export is imported into an empty
    store."""
    from .backup import restore_backup

    settings = resolve_settings(ctx.obj["db"])
    result = restore_backup(Path(backup_path), settings, force=force)
    if as_json:
        _print_json(result.to_json())
    else:
        click.echo(f"restored {result.path} into {settings.db}: {result.describe()}")


@contextmanager
def _service_at(location: str, *, create: bool) -> Iterator[MemoryService]:
    service = open_service(resolve_settings(location), create=create)
    try:
        yield service
    finally:
        service.close()


# The kb group lives in its own module; it imports this one's helpers, so it registers last.
from .cli_kb import kb  # noqa: E402

main.add_command(kb)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
