"""The recall playground's and forget's HTML (pure): the block with each memory's ranks and
verdict buttons; what forget would erase, then the button that erases it."""

from __future__ import annotations

from datetime import datetime, timedelta
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from memoryd.http.web_html import (
    csrf_field,
    ranks_text,
    table_html,
)

if TYPE_CHECKING:
    from memoryd.memory.forget_policy import ForgetResult
    from memoryd.service import RecallResult


VERDICTS = {"expected": "should have been here", "noise": "should not be here"}


def verdict_button_html(question: str, memory_id: str, verdict: str, csrf: str, back: str) -> str:
    """A button adding ``memory_id`` to the evaluation case for ``question``, as a memory
    recall should find (``expected``) or should not show (``noise``)."""
    return (
        f'<form class="inline" method="post" action="/eval/verdict">{csrf_field(csrf)}'
        f'<input type="hidden" name="question" value="{escape(question)}">'
        f'<input type="hidden" name="memory_id" value="{escape(memory_id)}">'
        f'<input type="hidden" name="verdict" value="{escape(verdict)}">'
        f'<input type="hidden" name="back" value="{escape(back)}">'
        f'<button class="verdict {escape(verdict)}">{escape(VERDICTS[verdict])}</button></form>'
    )


def recall_html(
    message: str,
    budget: str,
    result: RecallResult | None,
    error: str | None = None,
    csrf: str = "",
) -> str:
    """The recall playground: the block a message would get and why, without counting as a
    retrieval; each memory shown can join the evaluation set ("should have been here",
    "should not be here")."""
    form = (
        '<form method="get" action="/recall">'
        '<label for="message">message</label>'
        '<textarea id="message" name="message" rows=3 placeholder="a message to the assistant">'
        f"{escape(message)}</textarea> "
        f'<label>budget <input name="budget" type="number" value="{escape(budget)}" min=0 '
        "max=32000></label> <button>Recall</button></form>"
        '<p class="muted">A preview: memories shown here are not counted as retrieved.</p>'
    )
    if error is not None:
        return f'{form}<p class="error">{escape(error)}</p>'
    if result is None:
        return form
    legs = ", ".join(f"{escape(k)} {escape(v)}" for k, v in result.legs.items())
    back = f"/recall?message={quote(message)}&budget={quote(budget)}"

    def verdicts(memory_id: str, *kinds: str) -> str:
        return "".join(verdict_button_html(message, memory_id, v, csrf, back) for v in kinds)

    lesson_rows = [
        [m.kind.value, escape(m.content), "always", "standing lesson", "", "", "", "",
         verdicts(m.id, "noise")]
        for m in result.packed.lessons
    ]  # fmt: skip
    item_rows = [
        [
            s.memory.kind.value,
            escape(s.memory.content),
            f"{s.score:.4f}",
            escape(", ".join(s.gate_labels())),
            escape(ranks_text(s.ranks)),
            "" if s.cosine is None else f"{s.cosine:.2f}",
            f"{s.recency:.2f}",
            f"{s.weight:.2f}",
            verdicts(s.memory.id, "expected", "noise"),
        ]
        for s in result.packed.items
    ]
    dropped = "".join(
        f'<li><a href="/memories/{quote(d.memory_id)}">{escape(d.memory_id)}</a>: '
        f"{escape(d.reason)} {verdicts(d.memory_id, 'expected')}</li>"
        for d in result.dropped
    )
    silence = (
        f"<p class=muted>memories section empty: {escape(result.silence)}</p>"
        if result.silence
        else ""
    )
    window = (
        f"<p class=muted>time window: {escape(result.window.phrase)} "
        f"({'up' if result.window.open_start else result.window.start.date().isoformat()} "
        f"to {_last_day(result.window.end)})"
        "</p>"
        if result.window
        else ""
    )
    explain = table_html(
        [
            "kind",
            "content",
            "score",
            "gates",
            "leg ranks",
            "cosine",
            "recency",
            "weight",
            "evaluation set",
        ],
        lesson_rows + item_rows,
    )
    return (
        f"{form}<h2>Block ({result.packed.tokens} tokens)</h2>"
        f"<pre>{escape(result.text) or '(empty)'}</pre>{silence}<p class=muted>legs: {legs}</p>"
        f"{window}<h2>Explain</h2>{explain}"
        + (f"<h2>Dropped</h2><ul>{dropped}</ul>" if dropped else "")
    )


def forget_html(by: str, text: str, plan: ForgetResult | None, error: str | None,
                csrf: str) -> str:  # fmt: skip
    """The forget form: what would be erased is listed first; only then a button erases it."""
    options = "".join(
        f'<option value="{v}"{" selected" if v == by else ""}>{label}</option>'
        for v, label in (("entity", "an entity (and its aliases)"), ("query", "a query"))
    )
    form = (
        '<form method="get" action="/forget"><label>forget <select name="by">'
        f"{options}</select></label> "
        f'<input name="text" value="{escape(text)}" size=40 placeholder="Ana" required> '
        "<button>List what would be erased</button></form>"
        '<p class="muted">Nothing is erased until you confirm the list.</p>'
    )
    if error is not None:
        return f'{form}<p class="error">{escape(error)}</p>'
    if plan is None:
        return form
    if plan.empty:
        return f"{form}<p>Nothing names or matches {escape(plan.request.label)}.</p>"
    memories = table_html(
        ["id", "status", "kind", "first words", "why"],
        [
            [
                f'<a href="/memories/{quote(m.id)}">{escape(m.id)}</a>',
                escape(m.status),
                escape(m.kind),
                escape(m.preview),
                escape(m.why),
            ]
            for m in plan.memories
        ],
    )
    documents = table_html(
        ["id", "title", "chunks", "chunks that name or match"],
        [
            [
                escape(d.id),
                escape(d.title),
                str(d.chunk_count),
                escape("; ".join(
                    f"{c.position}: {c.preview}" for c in plan.chunks if c.document_id == d.id
                )),
            ]
            for d in plan.documents
        ],
    )  # fmt: skip
    confirm = (
        f'<form method="post" action="/forget" id="forget-confirm">{csrf_field(csrf)}'
        f'<input type="hidden" name="by" value="{escape(by)}">'
        f'<input type="hidden" name="text" value="{escape(text)}">'
        "<button>Erase all of this</button></form>"
        '<p class="muted">Cannot be undone: memories keep an empty tombstone, documents are '
        "removed whole.</p>"
    )
    return (
        f"{form}<h2>Would erase: {escape(plan.summary)}</h2>"
        + (f"<h3>Memories</h3>{memories}" if plan.memories else "")
        + (f"<h3>Documents (removed whole)</h3>{documents}" if plan.documents else "")
        + confirm
    )


def _last_day(end: datetime) -> str:
    """The last day a half-open window covers."""
    return (end - timedelta(microseconds=1)).date().isoformat()
