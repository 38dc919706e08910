"""``memoryd reembed``: move the store's vectors to another embedding model while memoryd
keeps serving, with a progress line (rate, time left) on stderr; ``--dry-run`` counts."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

import click

from memoryd.cli.common import db_option_of, open_store_service, print_json, with_json
from memoryd.cli.evals import echo_run
from memoryd.config.settings import resolve_settings
from memoryd.errors import InvalidInputError

if TYPE_CHECKING:
    from memoryd.ops.reembed import ReembedPlan, ReembedProgress, ReembedResult
    from memoryd.ops.reembed_admin import ReembedAdmin
    from memoryd.providers.embedder import Embedder


@click.command()
@click.option("--model", help="Target model: an endpoint's model name, or 'local' for MiniLM.")
@click.option("--base-url", help="The target's OpenAI-compatible endpoint (…/v1).")
@click.option("--dimensions", type=int, help="Ask the endpoint for vectors of this size.")
@click.option("--api-key-file", type=click.Path(dir_okay=False), help="File holding its key.")
@click.option("--batch-size", type=int, help="Texts per request to the endpoint.")
@click.option("--dry-run", is_flag=True, help="Count the texts and tokens; change nothing.")
@click.option(
    "--eval",
    "with_eval",
    is_flag=True,
    help="With --dry-run: run the evaluation set (`memoryd eval`) with the target model's "
    "vectors held in memory, beside the current model's results.",
)
@click.option("--k", "k", type=click.IntRange(1, 200), default=5, show_default=True,
              help="With --eval: recall@k counts expected memories among the top k.")  # fmt: skip
@with_json
def reembed(
    ctx: click.Context,
    model: str | None,
    base_url: str | None,
    dimensions: int | None,
    api_key_file: str | None,
    batch_size: int | None,
    dry_run: bool,
    with_eval: bool,
    k: int,
    as_json: bool,
) -> None:
    """Re-embed every memory and document chunk with another model (by default the one
    memoryd.toml or MEMORYD_EMBED_* configure) into a second vector set, then switch the
    store to it in one transaction. memoryd keeps serving meanwhile; Ctrl-C or a crash
    keeps the work done, and running it again resumes. With --dry-run --eval, the owner's
    evaluation set is scored with the target model beside the current one first."""
    from memoryd.providers.remote_embedder import embedder_with
    from memoryd.wiring import reembed_admin

    settings = resolve_settings(db_option_of(ctx))
    overrides = {
        name: str(value)
        for name, value in (
            ("model", model),
            ("base_url", base_url),
            ("dimensions", dimensions),
            ("api_key_file", api_key_file),
            ("batch_size", batch_size),
        )
        if value is not None
    }
    if with_eval and not dry_run:
        raise InvalidInputError(
            "--eval compares models before anything changes; use it with --dry-run",
            fields=("eval",),
        )
    embedder = embedder_with(settings.home, overrides)
    if with_eval:
        _dry_run_eval(ctx, embedder, k, as_json)
        return
    with reembed_admin(settings) as admin:
        if dry_run:
            plan = admin.plan(embedder, batch_size=_batch(embedder))
            if as_json:
                print_json(plan.to_json())
                return
            click.echo(_plan_text(plan, embedder))
            return
        result = _run(admin, embedder)
    if as_json:
        print_json(result.to_json())
        return
    click.echo(
        f"switched: the store now holds {result.target.dimension}-dimension vectors from "
        f"{result.target.model!r} ({result.embedded} texts in {result.seconds:.1f} s, "
        f"{result.rate:.0f} texts/s)"
    )
    from memoryd.providers.remote_embedder import configured_embedder

    if configured_embedder(settings.home).model != result.target.model:
        click.echo(
            f"next: set the embedder every memoryd process uses to {result.target.model!r} "
            "([embed] in memoryd.toml, or MEMORYD_EMBED_MODEL and MEMORYD_EMBED_BASE_URL) and "
            "restart `memoryd serve`; until then they refuse to embed"
        )


def _batch(embedder: Embedder) -> int:
    return int(getattr(getattr(embedder, "settings", None), "batch_size", 64))


def _plan_text(plan: ReembedPlan, embedder: Embedder) -> str:
    resumed = f"; {plan.already} already done" if plan.already else ""
    return (
        f"would embed {plan.memories} memories and {plan.chunks} chunks ({plan.texts} "
        f"texts, {plan.tokens} o200k tokens) with {plan.target_model!r} in "
        f"{plan.calls} calls of up to {_batch(embedder)}{resumed}; the store now holds "
        f"{plan.source.dimension}-dimension vectors from {plan.source.model!r}. "
        "Nothing was changed."
    )


def _dry_run_eval(ctx: click.Context, embedder: Embedder, k: int, as_json: bool) -> None:
    """The plan, then the evaluation set under the current model and the target's vectors
    held in memory (the store is only read)."""
    with open_store_service(ctx) as service:
        plan = service.admin.plan_reembed(embedder, batch_size=_batch(embedder))
        result = service.eval_run(k=k, embedder=embedder)
    if as_json:
        print_json({**plan.to_json(), "eval": result.to_json()})
        return
    click.echo(_plan_text(plan, embedder))
    echo_run(result)


def _run(admin: ReembedAdmin, embedder: Embedder) -> ReembedResult:
    from memoryd.ops.reembed import ReembedError

    line = ProgressLine(sys.stderr, redraw=sys.stderr.isatty())
    try:
        return admin.run(embedder, progress=line.update)
    except KeyboardInterrupt:
        line.close()
        done, total = admin.kept()
        raise ReembedError(
            f"stopped: {done} of {total} new vectors are kept and the store still uses "
            f"{admin.store_model()!r}; run `memoryd reembed` again to resume"
        ) from None
    finally:
        line.close()


class ProgressLine:
    """ "re-embedding 1280/10035 texts, 412.5 texts/s, 21 s left", redrawn in place on a
    terminal, a line per update elsewhere (every 10th batch)."""

    def __init__(self, out: TextIO, *, redraw: bool) -> None:
        self._out = out
        self._redraw = redraw
        self._open = False
        self._updates = 0

    def update(self, progress: ReembedProgress) -> None:
        """Another batch of vectors is committed."""
        from memoryd.kb.vector_fill import duration

        self._updates += 1
        if not self._redraw and self._updates % 10 != 1:
            return
        parts = [f"re-embedding {progress.done}/{progress.total} texts"]
        if progress.rate > 0:
            parts.append(f"{progress.rate:.1f} texts/s")
        eta = progress.eta_seconds
        if eta is not None:
            parts.append(f"{duration(eta)} left")
        text = ", ".join(parts)
        if self._redraw:
            self._out.write("\r\x1b[2K" + text)
            self._open = True
        else:
            self._out.write(text + "\n")
        self._out.flush()

    def close(self) -> None:
        """End a line still being redrawn."""
        if self._open:
            self._out.write("\n")
            self._out.flush()
            self._open = False
