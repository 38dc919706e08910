"""``memoryd eval``: the owner's evaluation set (add, list, remove) and its run, side by side
with a candidate configuration (``--set recall.KEY=VALUE``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memoryd.cli.common import (
    echo_list,
    echo_one,
    now_from,
    open_store_service,
    parsed,
    print_json,
    with_json,
    with_now_json,
)

if TYPE_CHECKING:
    from memoryd.evaluation.model import EvalCase
    from memoryd.evaluation.run import EvalRun


@click.group(name="eval")
def eval_() -> None:
    """The owner's evaluation set: questions and the memories recall should (and should not)
    show for them, scored against the current settings or a candidate."""


@eval_.command()
@click.argument("question")
@click.option(
    "--expect",
    "expected",
    multiple=True,
    metavar="ID",
    help="A memory recall should find for QUESTION (repeat, or separate ids with commas).",
)
@click.option(
    "--noise",
    multiple=True,
    metavar="ID",
    help="A memory recall should not show for QUESTION (repeat, or separate with commas).",
)
@with_now_json
def add(
    ctx: click.Context,
    question: str,
    expected: tuple[str, ...],
    noise: tuple[str, ...],
    now_text: str | None,
    as_json: bool,
) -> None:
    """Add a case: QUESTION and the memories recall should find (--expect) or not show
    (--noise). A question already in the set gets the ids joined to its case."""  # fmt: skip
    with open_store_service(ctx) as service:
        case = service.eval_add(
            question, expected=_ids(expected), noise=_ids(noise), now=now_from(now_text)
        )
    echo_one(case, as_json, _case_line)


@eval_.command(name="list")
@with_json
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the evaluation cases, oldest first."""
    with open_store_service(ctx) as service:
        cases = service.eval_cases()
    empty = 'no evaluation cases; add one with `memoryd eval add "QUESTION" --expect ID`'
    echo_list(cases, as_json, _case_line, empty)


@eval_.command()
@click.argument("case_id", metavar="ID")
@with_json
def remove(ctx: click.Context, case_id: str, as_json: bool) -> None:
    """Remove the evaluation case ID (or a unique start of it)."""
    with open_store_service(ctx) as service:
        case = service.eval_remove(case_id)
    echo_one(case, as_json, lambda removed: f"removed {removed.id} {removed.question!r}")


@eval_.command()
@click.option(
    "--k",
    "k",
    type=click.IntRange(1, 200),
    default=5,
    show_default=True,
    help="recall@k counts expected memories among the top k of search_memory.",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A candidate recall setting, e.g. recall.vector_gate=0.3 (repeatable); "
    "the report shows the current settings and the candidate side by side.",
)
@with_now_json
def run(
    ctx: click.Context, k: int, settings: tuple[str, ...], now_text: str | None, as_json: bool
) -> None:
    """Score every case: recall@k, block recall (expected memories in the recall block) and
    noise (noise memories in the block). Nothing is counted as retrieved."""  # fmt: skip
    from memoryd.evaluation.policy import parse_overrides

    overrides = parsed("set", lambda: parse_overrides(settings))
    with open_store_service(ctx) as service:
        result = service.eval_run(k=k, overrides=overrides, now=now_from(now_text))
    if as_json:
        print_json(result.to_json())
        return
    echo_run(result)


def echo_run(result: EvalRun) -> None:
    """The report: three lines per case and the totals, with a candidate column when there
    is one (``reembed --dry-run --eval`` prints it too)."""
    reports = [result.baseline] + ([result.candidate] if result.candidate else [])
    if not result.baseline.scores:
        click.echo('no evaluation cases; add one with `memoryd eval add "QUESTION" --expect ID`')
        return
    k = result.baseline.k
    _row("", ["current", "candidate"][: len(reports)])
    for index, score in enumerate(result.baseline.scores):
        click.echo(f"{score.case.id} {_clip(score.case.question, 60)!r}")
        case = [report.scores[index] for report in reports]
        expected, noise = len(score.case.expected), len(score.case.noise)
        _row(f"  recall@{k}", [_ratio(len(s.found_in_top), expected) for s in case])
        _row("  block recall", [_ratio(len(s.found_in_block), expected) for s in case])
        _row("  noise in block", [_ratio(len(s.noise_in_block), noise) for s in case])
        if score.inactive:
            click.echo(f"  no longer active (recall cannot show): {', '.join(score.inactive)}")
    click.echo(f"overall ({len(result.baseline.scores)} cases)")
    _row(f"  recall@{k}", [_percent(report.recall_at_k) for report in reports])
    _row("  block recall", [_percent(report.block_recall) for report in reports])
    _row("  noise in block", [_ratio(r.noise_shown, r.noise_total) for r in reports])
    if result.candidate is not None:
        click.echo(f"candidate: {result.candidate.label}")
        if result.candidate.note:
            click.echo(f"  ({result.candidate.note})")


WIDTH = 28


def _row(name: str, cells: list[str]) -> None:
    click.echo(f"{name:<{WIDTH}}" + "".join(f"{cell:<{WIDTH}}" for cell in cells).rstrip())


def _ids(given: tuple[str, ...]) -> list[str]:
    """Ids from repeated options, each of which may hold several (``A,B`` or ``"A B"``)."""
    return [i for value in given for i in value.replace(",", " ").split()]


def _ratio(found: int, total: int) -> str:
    return f"{found}/{total}" if total else "-"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _clip(text: str, width: int) -> str:
    words = " ".join(text.split())
    return words if len(words) < width else words[: width - 2] + "…"


def _case_line(case: EvalCase) -> str:
    parts = [f"{case.id} {case.question!r}"]
    if case.expected:
        parts.append("expect " + " ".join(case.expected))
    if case.noise:
        parts.append("noise " + " ".join(case.noise))
    return "  ".join(parts)
