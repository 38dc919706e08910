"""The extraction triggers (``observe``, ``compact``, ``mission``), the ``worker`` that drains
the queue, and ``jobs``, the queue's state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from memoryd.cli.common import (
    MAX_LISTED,
    db_option_of,
    echo_write_result,
    now_from,
    open_store_service,
    parsed,
    print_json,
    text_of_file,
    trigger_options,
    with_json,
    with_now_json,
)
from memoryd.config.settings import masked_location, resolve_settings
from memoryd.errors import ExtractionFailedError, ExtractionOffError, MemorydError
from memoryd.jobs.model import JobStatus

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from memoryd.jobs.model import Job
    from memoryd.service import MemoryService, Observation, WorkRound


@click.command()
@click.option("--user", "user_message", required=True, help="The owner's message.")
@click.option("--summary", help="The turn's summary.")
@click.option(
    "--at",
    "at_text",
    metavar="ISO",
    help="When the turn happened (without an offset: the owner's local time, MEMORYD_TZ); "
    "default now.",
)
@trigger_options
def observe(
    ctx: click.Context,
    user_message: str,
    summary: str | None,
    at_text: str | None,
    wait: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Queue a turn for extraction (fire-and-forget), or run it now with --wait."""
    from memoryd.extraction.extractor import parse_local_instant

    def queue(service: MemoryService, now: datetime | None) -> Observation:
        at = (
            parsed("at", lambda: parse_local_instant(at_text, service.zone, what="--at"))
            if at_text
            else None
        )
        return service.observe_turn(user_message, summary, at=at, now=now)

    _trigger(ctx, queue, wait, now_text, as_json)


@click.command()
@click.argument("turns_file", type=click.File("rb"))
@trigger_options
def compact(
    ctx: click.Context, turns_file: Any, wait: bool, now_text: str | None, as_json: bool
) -> None:
    """Extract from turns about to be compacted: a JSON array of {"role", "content", "at"}
    ("at": when the turn happened, optional, default now)."""
    from memoryd.extraction.extractor import parse_turns

    turns = parse_turns(text_of_file(turns_file, "turns_file", "a JSON array of turns"))
    _trigger(ctx, lambda service, now: service.before_compaction(turns, now=now), wait, now_text,
             as_json)  # fmt: skip


@click.command()
@click.argument("digest_file", type=click.File("rb"))
@trigger_options
def mission(
    ctx: click.Context, digest_file: Any, wait: bool, now_text: str | None, as_json: bool
) -> None:
    """Extract discoveries from a finished mission's digest: JSON {"title", "goal",
    "outcome", "finished_at"} ("finished_at" optional, default now), or text whose first line
    is the title."""
    from memoryd.extraction.extractor import parse_mission

    text = text_of_file(digest_file, "digest_file", "the mission's digest as JSON or text")

    def queue(service: MemoryService, now: datetime | None) -> Observation:
        return service.mission_finished(parse_mission(text, service.zone), now=now)

    _trigger(ctx, queue, wait, now_text, as_json)


def _trigger(
    ctx: click.Context,
    queue: Callable[[MemoryService, datetime | None], Observation],
    wait: bool,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Queue what ``queue`` hands the extraction queue; with ``wait``, run it now."""
    with open_store_service(ctx) as service:
        _finish_trigger(service, queue(service, now_from(now_text)), wait, now_text, as_json)


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
            print_json(observation.to_json())
        else:
            click.echo(f"queued {observation.job_id}; {_who_runs_jobs()} extracts it")
        return
    reports = service.run_jobs(job_id=observation.job_id, now=now_from(now_text))
    job = reports[0].job if reports else service.job(observation.job_id)
    results = reports[0].results if reports else ()
    if as_json:
        print_json([r.to_json() for r in results])
    else:
        click.echo(
            f"job {job.id}: {job.status.value}"
            + (f" ({job.last_error})" if job.last_error else "")
            + _answer_format(job)
        )
        for result in results:
            echo_write_result(result)
    if job.status is not JobStatus.DONE:
        raise ExtractionFailedError(
            f"extraction of job {job.id} did not finish: {job.last_error or job.status.value}; "
            f"it stays queued and {_who_runs_jobs()} retries it"
            if job.status is JobStatus.QUEUED
            else f"extraction of job {job.id} failed: {job.last_error}"
        )


@click.command()
@click.option("--once", is_flag=True, help="Run the due jobs, then exit.")
@click.option(
    "--poll",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="Seconds between looks at the queue.",
)
@with_now_json
def worker(
    ctx: click.Context, once: bool, poll: float, now_text: str | None, as_json: bool
) -> None:
    """Drain the extraction queue and the document retries (forever, or --once)."""

    def print_once(done: WorkRound) -> None:
        if as_json:
            print_json(
                [r.to_json() for r in done.reports]
                + [{"kb_retry": r.to_json()} for r in done.retried]
            )
            return
        for report in done.reports:
            click.echo(
                f"job {report.job.id} ({report.job.kind}): {report.job.status.value}"
                + (
                    f", {len(report.results)} proposals"
                    if report.job.status.value == "done"
                    else ""
                )
                + (f" — {report.job.last_error}" if report.job.last_error else "")
            )
        for result in done.retried:
            click.echo(
                f"document retry {result.source}: {result.outcome}"
                + (f" — {result.reason}" if result.reason else "")
            )
        vectors = f" ({done.vectors} document vectors embedded)" if done.filled else ""
        click.echo(f"{done.ran} jobs run{vectors}; queue: {done.queue}")

    def print_round(done: WorkRound) -> None:
        for report in done.reports:
            click.echo(
                f"job {report.job.id} ({report.job.kind}): "
                f"{report.job.status.value}, {len(report.results)} proposals"
            )
        for result in done.retried:
            click.echo(f"document retry {result.source}: {result.outcome}")

    with open_store_service(ctx) as service:
        if once:
            at = now_from(now_text) if now_text else None
            service.work(poll, once=True, on_round=print_once, now=at)
            return
        click.echo("memoryd worker: draining the extraction queue (Ctrl-C to stop)")
        try:
            service.work(poll, on_round=print_round)
        except KeyboardInterrupt:
            click.echo("stopped")


@click.group(invoke_without_command=True)
@click.option("--limit", type=click.IntRange(min=1, max=MAX_LISTED), default=20, show_default=True)
@with_json
def jobs(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The newest background jobs, with their state and last error; `jobs retry ID` queues a
    failed one again."""
    if ctx.invoked_subcommand is not None:
        return
    with open_store_service(ctx) as service:
        recent = service.admin.recent_jobs(limit)
        counts = service.admin.job_counts()
    if as_json:
        print_json({"counts": counts, "jobs": [j.to_json() for j in recent]})
        return
    click.echo("queue: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "empty"))
    for job in recent:
        click.echo(
            f"{job.id}  {job.kind:<10} {job.status.value:<7} attempts {job.attempts}"
            + _answer_format(job)
            + (f"  {job.last_error}" if job.last_error else "")
        )


@jobs.command(name="retry")
@click.argument("job_id")
@with_json
def retry(ctx: click.Context, job_id: str, as_json: bool) -> None:
    """Queue a failed (or waiting) job again, due now, its attempts counted afresh."""
    with open_store_service(ctx) as service:
        job = service.retry_job(job_id)
    if as_json:
        print_json(job.to_json())
        return
    click.echo(f"job {job.id} ({job.kind}) queued again; {_who_runs_jobs()} runs it")


def _who_runs_jobs() -> str:
    """Who works the queue now: a running ``memoryd serve`` (named by its process), else the
    commands that would."""
    from memoryd.ops.server_record import read_record

    try:
        settings = resolve_settings(db_option_of(click.get_current_context()))
        state = read_record(settings.home)
    except (OSError, MemorydError):
        return "`memoryd serve` or `memoryd worker`"
    same_store = state.record is not None and state.record.db == masked_location(settings.db)
    if state.record is not None and state.alive and same_store:
        return f"the running `memoryd serve` (pid {state.record.pid})"
    return "`memoryd serve` or `memoryd worker`"


def _answer_format(job: Job) -> str:
    """How the model's answer was constrained (json_schema, json_object, off), when known."""
    structured = (job.result or {}).get("structured")
    return f", answer {structured}" if structured else ""
