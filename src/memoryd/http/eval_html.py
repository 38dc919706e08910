"""The web page's evaluation section (pure): the owner's cases with their memories, a form to
add one, and the report of a run, the current settings beside a candidate's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from urllib.parse import quote

from memoryd.evaluation.policy import EvalCase
from memoryd.evaluation.run import EvalRun
from memoryd.http.web_html import button_html, csrf_field, table_html


def eval_html(
    cases: Sequence[EvalCase],
    labels: Mapping[str, str],
    csrf: str,
    *,
    run: EvalRun | None = None,
    k: str = "5",
    candidate: str = "",
    error: str | None = None,
) -> str:
    """The evaluation page: the cases (each memory by a few words of it, from ``labels``),
    an add form, the Run form and, after a run, its report."""

    def memories(ids: Sequence[str]) -> str:
        return "<br>".join(
            f'<a href="/memories/{quote(i)}">{escape(i[:10])}</a> {escape(labels.get(i, ""))}'
            for i in ids
        )

    rows = [
        [
            escape(case.question),
            memories(case.expected),
            memories(case.noise),
            button_html(f"/eval/{quote(case.id)}/remove", "Remove", csrf, "/eval"),
        ]
        for case in cases
    ]
    listing = (
        table_html(["question", "should be here", "should not be here", ""], rows)
        if rows
        else "<p class=muted>No cases yet: mark results on the Recall page, or add one below.</p>"
    )
    add = (
        f'<h2>Add a case</h2><form method="post" action="/eval/cases">{csrf_field(csrf)}'
        '<label>question <input name="question" size=50></label> '
        '<label>should be here (ids) <input name="expect" size=30></label> '
        '<label>should not be here (ids) <input name="noise" size=30></label> '
        "<button>Add</button></form>"
    )
    form = (
        '<h2>Run</h2><form method="get" action="/eval"><input type="hidden" name="run" value="1">'
        f'<label>k <input name="k" type="number" min=1 max=200 value="{escape(k)}"></label> '
        '<label>candidate settings <input name="candidate" size=40 '
        f'placeholder="recall.vector_gate=0.3, recall.budget_tokens=800" '
        f'value="{escape(candidate)}"></label> <button>Run</button></form>'
        '<p class="muted">A run counts nothing as retrieved and changes nothing.</p>'
    )
    report = ""
    if error:
        report = f'<p class="error">{escape(error)}</p>'
    elif run is not None:
        report = report_html(run)
    return listing + add + form + report


def report_html(run: EvalRun) -> str:
    """A run's report: per case and overall, one column per configuration."""
    reports = [run.baseline] + ([run.candidate] if run.candidate else [])
    if not run.baseline.scores:
        return "<p class=muted>No cases to run.</p>"
    k = run.baseline.k
    headers = ["question", "measure", *(r.label for r in reports)]
    rows: list[list[str]] = []
    for index, score in enumerate(run.baseline.scores):
        case = [r.scores[index] for r in reports]
        expected, noise = len(score.case.expected), len(score.case.noise)
        top = [_ratio(len(s.found_in_top), expected) for s in case]
        rows.append([escape(score.case.question), f"recall@{k}", *top])
        rows.append(["", "block recall", *(_ratio(len(s.found_in_block), expected) for s in case)])
        rows.append(["", "noise in block", *(_ratio(len(s.noise_in_block), noise) for s in case)])
    rows.append(["overall", f"recall@{k}", *(_percent(r.recall_at_k) for r in reports)])
    rows.append(["", "block recall", *(_percent(r.block_recall) for r in reports)])
    rows.append(["", "noise in block", *(_ratio(r.noise_shown, r.noise_total) for r in reports)])
    notes = "".join(
        f"<p class=muted>{escape(r.label)}: {escape(r.note)}</p>" for r in reports if r.note
    )
    return f'<h2>Report</h2><div class="eval-report">{table_html(headers, rows)}</div>{notes}'


def _ratio(found: int, total: int) -> str:
    return f"{found}/{total}" if total else "-"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
