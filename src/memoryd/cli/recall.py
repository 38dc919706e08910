"""``memoryd recall`` (the fenced block, or ``--explain``), ``memoryd context`` (the one pack of
memories and document chunks) and ``memoryd search``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import click

from memoryd.cli.common import (
    memory_line,
    now_from,
    open_store_service,
    parsed,
    print_json,
    with_now_json,
)
from memoryd.clock import parse_instant
from memoryd.errors import InvalidInputError
from memoryd.memory.model import kind_from_user

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from memoryd.recall.context_policy import ContextPack, PackItem
    from memoryd.results import RecallResult
    from memoryd.service import MemoryService


class _Block(Protocol):
    """What recall and context print: a fenced block, or its JSON."""

    @property
    def text(self) -> str: ...

    def to_json(self) -> object: ...


B = TypeVar("B", bound=_Block)


def _block_command(
    name: str,
    fetch: Callable[[MemoryService, str, int | None, datetime, bool], B],
    echo_explain: Callable[[B], None],
    empty: str,
    *,
    help: str,
    budget_help: str,
    explain_help: str,
) -> click.Command:
    """A command printing the fenced block ``fetch`` builds for MESSAGE (recall, context): it
    takes MESSAGE, --budget, --explain, --now and --json, and prints the block's JSON, its
    explanation, or the block (``empty`` when nothing qualifies)."""

    @click.argument("message")
    @click.option("--budget", type=click.IntRange(min=0), help=budget_help)
    @click.option("--explain", is_flag=True, help=explain_help)
    @with_now_json
    def run(
        ctx: click.Context,
        message: str,
        budget: int | None,
        explain: bool,
        now_text: str | None,
        as_json: bool,
    ) -> None:
        if not message.strip():  # as `context` (its service) and `kb search` refuse theirs
            raise InvalidInputError("the message is empty; pass the owner's message for this turn")
        with open_store_service(ctx) as service:
            block = fetch(service, message, budget, now_from(now_text), explain)
        if as_json:
            print_json(block.to_json())
        elif explain:
            echo_explain(block)
        else:
            click.echo(block.text if block.text else empty)

    return click.command(name, help=help)(run)


@click.command()
@click.argument("query")
@click.option("--kind", "kind_name")
@click.option("--since", help="ISO date or time (inclusive).")
@click.option("--until", help="ISO date or time (exclusive).")
@click.option("--limit", type=click.IntRange(min=1, max=200), default=10, show_default=True)
@with_now_json
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
    kind = parsed("kind", lambda: kind_from_user(kind_name))
    start = parsed("since", lambda: parse_instant(since, what="--since")) if since else None
    end = parsed("until", lambda: parse_instant(until, what="--until")) if until else None
    at = now_from(now_text)
    with open_store_service(ctx) as service:
        found = service.search_memory(query, kind=kind, since=start, until=end, limit=limit, now=at)
    if as_json:
        print_json(found.to_json())
        return
    if not found.items:
        click.echo("no matches")
    for scored in found.items:
        click.echo(f"{scored.score:.4f}  {memory_line(scored.memory)}")


def _echo_explain(result: RecallResult) -> None:
    from memoryd.recall.policy import LEGS
    from memoryd.recall.stand_in_policy import stood_in_for
    from memoryd.words import query_terms

    if result.read is not None and not result.read.whole:
        click.echo(
            f"message read: {result.read.describe()} (a longer message is read at both ends)"
        )
    # The question a long message asks, or the message without its sentences about the
    # answer's form (recall/answer_form_policy.py).
    if result.read is not None and result.read.question:
        click.echo(f"question searched: {result.read.question!r}")
    click.echo("legs: " + ", ".join(f"{leg} {state}" for leg, state in result.legs.items()))
    if result.window is not None:
        window = result.window
        start = "up to" if window.open_start else f"{window.start.date()} .."
        click.echo(f"time window: {window.phrase!r} = {start} {window.end.date()} (exclusive)")
    facts = result.facts
    if facts.words:
        # A stand-in says which of the message's words it was searched for ("boss").
        asked = query_terms(result.read.query) if result.read is not None else []
        stood = stood_in_for(facts.words, asked)
        words = ", ".join(
            f"{w} ({facts.word_frequency.get(w, '?')}"
            + (f", for {stood[w]!r})" if w in stood else ")")
            for w in facts.words
        )
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
            f"{'+'.join(item.gate_labels())} · {item.memory.content}"
        )
        click.echo(f"{'':<28}{_relevance(item.relevance, item.contributions)}")
        if item.novel:
            words = ", ".join(item.novel)
            click.echo(
                f"{'':<28}lifted +{item.lifted:.4f}: holds {words}, which no better item holds"
            )
    if result.dropped:
        click.echo("\ndropped:")
        for dropped in result.dropped:
            click.echo(f"{dropped.memory_id:<26}  {dropped.reason}")
            if dropped.relevance is not None:
                click.echo(f"{'':<28}{_relevance(dropped.relevance, dropped.contributions)}")


def _relevance(relevance: float, shares: Mapping[str, float]) -> str:
    """The calibrated relevance and each feature's share of its logit (the bias left out)."""
    moved = [f"{name} {value:+.2f}" for name, value in shares.items() if abs(value) >= 0.005]
    return f"relevance {relevance:.2f} from " + (", ".join(moved) or "nothing")


def _echo_pack(pack: ContextPack) -> None:
    click.echo("legs: " + ", ".join(f"{leg} {state}" for leg, state in pack.legs.items()))
    click.echo(f"pack: {pack.tokens} of {pack.budget} tokens")
    if pack.silence:
        click.echo(f"no memory qualifies: {pack.silence}")
    click.echo("")
    click.echo(f"{'type':<7} {'id':<30} {'score':>7} {'own':>7} {'vector':>6} {'text':>5}  content")
    for lesson in pack.lessons:
        click.echo(f"{'lesson':<7} {lesson.id:<30} {'always':>7} {'':>7} {'':>6} {'':>5}  "
                   f"{_line(lesson.content)}")  # fmt: skip
    for item in pack.items:
        shown = item.memory.content if item.memory is not None else _chunk_label(item)
        vector, text = (str(item.ranks.get(leg, "-")) for leg in ("vector", "text"))
        click.echo(
            f"{item.kind:<7} {item.id:<30} {item.score:>7.4f} {item.source_score:>7.4f} "
            f"{vector:>6} {text:>5}  {_line(shown)}"
        )
        if item.follows:
            click.echo(f"{'':<7} {'':<30} follows the others: {item.follows}")
    if pack.dropped:
        click.echo("\ndropped:")
        for dropped in pack.dropped:
            click.echo(f"{dropped.kind:<7} {dropped.id:<30} {dropped.reason}")


def _chunk_label(item: PackItem) -> str:
    hit = item.hit
    if hit is None:
        return ""
    return f"[{hit.chunk.breadcrumb or hit.document.title}] {hit.chunk.text}"


def _line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


recall = _block_command(
    "recall",
    lambda service, message, budget, now, _: service.recall(message, budget=budget, now=now),
    _echo_explain,
    "(no memories qualify)",
    help="Print the fenced memory block for MESSAGE, as the assistant would get it.",
    budget_help="Token budget (default 1500).",
    explain_help="Show the gates that let each item in, its leg ranks, cosine, recency and score, "
    "and why the others were dropped.",
)

context = _block_command(
    "context",
    lambda service, message, budget, now, explain: service.context(
        message, budget=budget, now=now, explain=explain
    ),
    _echo_pack,
    "(nothing qualifies)",
    help="Print the one context pack for MESSAGE: standing lessons, then memories and document "
    "chunks by relevance, in one fenced block within the token budget.",
    budget_help="Token budget (default: the recall budget).",
    explain_help="Show each item's calibrated score, joint ranks and weight, and what was "
    "dropped and why.",
)
