"""The web page's HTML: pure functions from data to markup, every value escaped on the way in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from memoryd.memory.model import AuditEntry, Kind, Memory, Status

_STYLE = """
*,*::before,*::after{box-sizing:border-box}
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#23395d;color:#fff;padding:.6em 1.2em;display:flex;flex-wrap:wrap;
gap:.4em 1.2em;align-items:center}
header a{color:#fff;text-decoration:none}header b{margin-right:1em}
main{padding:1em 1.4em;max-width:1150px}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #ddd;padding:.4em .5em;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
th{background:#eef1f6}.muted{color:#777}.error{color:#b00020}.flash{background:#fff7d6;
padding:.5em;border:1px solid #e6d27a}ul.flash{padding-left:1.6em}form.inline{display:inline}
.status-line{color:#777;font-size:.9em}
button{cursor:pointer;margin:.1em}textarea{width:100%;font:inherit}
input,select,textarea{max-width:100%}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f2f2f2;padding:.7em;
border:1px solid #ddd}
.pill{font-size:.8em;padding:.1em .45em;border-radius:.6em;background:#e3e8f0}
.why{margin:.3em 0 0;font-size:.92em}.bulk{margin:.6em 0}
@media (max-width:640px){
header{padding:.5em .8em;gap:.3em .9em}header b{margin-right:.2em}main{padding:.7em}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%}
table.stack tr.head{display:none}table.stack tr{border-bottom:1px solid #ccc;padding:.3em 0}
table.stack td{border:0;padding:.15em .4em}
table.stack td[data-label]:not(:empty)::before{content:attr(data-label) ": ";
font-weight:600;color:#555}
}
"""


@dataclass(frozen=True)
class PendingView:
    """A pending memory as the review page shows it: why it waits for the owner, and the
    active fact it would replace if confirmed."""

    memory: Memory
    reason: str
    would_replace: Memory | None


def page_html(
    title: str,
    body: str,
    csrf: str,
    *,
    nav: bool = True,
    flash: str | None = None,
    report: Sequence[str] = (),
    failing: Sequence[str] = (),
    status: Sequence[str] = (),
) -> str:
    """The page around ``body``: the navigation, the model endpoints that are failing and
    ``status`` lines (the chat proxy's last request; the status area, on every page) and, when
    an action just ran, what it said (``flash``) and its report (one line per thing it did)."""
    links = ""
    if nav:
        links = (
            '<a href="/">Review</a><a href="/memories">Memories</a>'
            '<a href="/reconfirm">Reconfirm</a><a href="/documents">Documents</a>'
            '<a href="/recall">Recall</a><a href="/eval">Evaluation</a>'
            '<a href="/forget">Forget</a>'
            f'<form class="inline" method="post" action="/logout">{csrf_field(csrf)}'
            "<button>Log out</button></form>"
        )
    notice = "".join(f'<p class="error" role="status">{escape(line)}</p>' for line in failing)
    notice += "".join(f'<p class="status-line">{escape(line)}</p>' for line in status)
    notice += f'<p class="flash">{escape(flash)}</p>' if flash else ""
    lines = "".join(f"<li>{escape(line)}</li>" for line in report)
    notice += f'<ul class="flash report">{lines}</ul>' if lines else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · memoryd</title><style>{_STYLE}</style></head><body>"
        f"<header><b>memoryd</b>{links}</header><main><h1>{escape(title)}</h1>{notice}{body}"
        "</main></body></html>"
    )


def csrf_field(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(csrf)}">'


def login_html(next_path: str, error: str | None) -> str:
    problem = f'<p class="error">{escape(error)}</p>' if error else ""
    return (
        f"{problem}<form method=post action=/login>"
        f'<input type="hidden" name="next" value="{escape(next_path)}">'
        '<label>API token <input type="password" name="token" size=40 autofocus></label> '
        "<button>Log in</button></form>"
        '<p class="muted">The token is in <code>$MEMORYD_HOME/token</code> '
        "(or <code>MEMORYD_TOKEN</code>).</p>"
    )


def button_html(path: str, label: str, csrf: str, back: str = "/") -> str:
    return (
        f'<form class="inline" method="post" action="{escape(path)}">{csrf_field(csrf)}'
        f'<input type="hidden" name="back" value="{escape(back)}">'
        f"<button>{escape(label)}</button></form>"
    )


def table_html(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table that stacks into labelled lines on a narrow screen; cells are markup already
    escaped by the caller."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            (f'<td data-label="{escape(h)}">' if h else "<td>") + f"{cell}</td>"
            for h, cell in zip(headers, row, strict=True)
        )
        + "</tr>"
        for row in rows
    )
    return f'<table class="stack"><tr class="head">{head}</tr>{body}</table>'


# ------------------------------------------------------------------ values as readable text


def ranks_text(ranks: Mapping[str, int]) -> str:
    """Each leg's rank of a memory as words: "vector #1, text #3" ("" when no leg found it)."""
    return ", ".join(f"{leg} #{rank}" for leg, rank in ranks.items())


def value_text(value: Any) -> str:
    """A field's value as a person reads it: lists joined, yes/no, nested fields as
    "name: value" (never Python's repr)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {value_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(value_text(v) for v in value)
    return str(value)


def memory_cell_html(memory: Memory) -> str:
    content = "[purged]" if memory.purged_at else escape(memory.content)
    entities = (
        f" · about {escape(value_text(memory.entities))}"
        if memory.entities and not memory.purged_at
        else ""
    )
    return (
        f'<a href="/memories/{escape(memory.id)}">{content}</a><br>'
        f'<span class="pill">{memory.kind.value}</span> '
        f'<span class="pill">{memory.status.value}</span> '
        f'<span class="muted">confidence {memory.confidence:.2f} · {memory.source.value} · '
        f"{memory.created_at.date().isoformat()}{entities}</span>"
    )


# ------------------------------------------------------------------------------ pages


def review_html(queue: Sequence[PendingView], csrf: str) -> str:
    """The pending queue: each memory with why it is pending and what it would replace, its
    own buttons, and a checkbox for the one form that confirms or rejects the chosen ones."""
    if not queue:
        return "<p>Nothing to review.</p>"
    rows = []
    for item in queue:
        memory = item.memory
        if item.would_replace is not None:
            replaces = memory_cell_html(item.would_replace)
        elif memory.kind is Kind.FACT:
            replaces = '<span class="muted">nothing: no active fact holds this slot</span>'
        else:
            replaces = '<span class="muted">nothing: only a fact replaces another</span>'
        base = f"/memories/{memory.id}"
        choose = (
            f'<label><input type="checkbox" name="ids" value="{escape(memory.id)}" form="bulk"'
            ' class="pick"> select</label>'
        )
        rows.append(
            [
                choose,
                memory_cell_html(memory)
                + f'<p class="why"><b>Why pending:</b> {escape(_why(item.reason, memory))}</p>'
                + same_slot_html(memory),
                replaces,
                button_html(f"{base}/confirm", "Confirm", csrf)
                + button_html(f"{base}/reject", "Reject", csrf)
                + split_button_html(memory, csrf, "/")
                + f'<details><summary>Edit</summary><form method="post" action="{base}/edit">'
                + csrf_field(csrf)
                + f'<textarea name="content" rows=2>{escape(memory.content)}</textarea>'
                + "<button>Save</button></form></details>",
            ]
        )
    bulk = (
        f'<form id="bulk" class="bulk" method="post" action="/review">{csrf_field(csrf)}'
        '<label><input type="checkbox" id="pick-all" onclick="for(const b of '
        "document.querySelectorAll('input.pick'))b.checked=this.checked\"> all</label> "
        '<button name="action" value="confirm">Confirm selected</button>'
        '<button name="action" value="reject">Reject selected</button></form>'
    )
    return (
        f"<p>{len(queue)} pending. Nothing here is active until you confirm it.</p>{bulk}"
        + table_html(["", "pending", "would replace", ""], rows)
    )


def same_slot_html(memory: Memory) -> str:
    """For a fact that joined another predicate's slot: which one, in words."""
    if memory.same_slot_as is None or memory.purged_at is not None:
        return ""
    return (
        f'<p class="why same-slot"><b>Treated as the same slot as</b> '
        f"&ldquo;{escape(memory.same_slot_as)}&rdquo; (its own predicate: &ldquo;"
        f"{escape(memory.predicate or '')}&rdquo;). If they mean different things, split "
        "them.</p>"
    )


def split_button_html(memory: Memory, csrf: str, back: str) -> str:
    """The Split button of a fact that joined another predicate's slot (pending or active)."""
    if memory.same_slot_as is None or memory.status not in (Status.PENDING, Status.ACTIVE):
        return ""
    return button_html(f"/memories/{memory.id}/split", "Split", csrf, back)


def _why(reason: str, memory: Memory) -> str:
    # Under "Why pending:" the policy's own "waits for the owner: " would say it twice.
    why = reason.removeprefix("waits for the owner: ")
    if memory.same_slot_as is None:
        # Split since it was proposed: the slot it was placed in is history (its audit).
        why = why.split("; treated as the same slot as ", 1)[0]
    return why


def browser_html(
    memories: Sequence[Memory],
    kind: str,
    status: str,
    query: str,
    ranks: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """The memory browser: a search box and kind/status filters over the list; a search shows
    which legs found each memory (``ranks`` by memory id)."""

    def options(values: Sequence[str], chosen: str) -> str:
        return "".join(
            f'<option value="{v}"{" selected" if v == chosen else ""}>{v or "any"}</option>'
            for v in values
        )

    form = (
        '<form method="get" action="/memories">'
        f'<label>search <input name="q" value="{escape(query)}" placeholder="words or a '
        'question"></label> '
        f'<label>kind <select name="kind">{options(["", *[k.value for k in Kind]], kind)}'
        "</select></label> "
        f'<label>status <select name="status">'
        f"{options(['', *[s.value for s in Status]], status)}</select></label> "
        "<button>Filter</button></form>"
    )

    def found_by(memory: Memory) -> str:
        legs = ranks_text((ranks or {}).get(memory.id, {}))
        return f'<br><span class="muted">found by {escape(legs)}</span>' if legs else ""

    rows = "".join(f"<tr><td>{memory_cell_html(m)}{found_by(m)}</td></tr>" for m in memories)
    return f"{form}<p>{len(memories)} shown.</p><table>{rows}</table>"


FIELD_NAMES = {"changes_behavior": "changes behaviour", "source_ref": "source reference"}


def memory_html(
    memory: Memory, chain: Sequence[Memory], audit: Sequence[AuditEntry], csrf: str
) -> str:
    fields = "".join(
        f"<tr><th>{escape(FIELD_NAMES.get(k, k.replace('_', ' ')))}</th>"
        f"<td>{escape(value_text(v))}</td></tr>"
        for k, v in memory.to_json().items()
        if v not in (None, [], False, "")
    )
    actions = ""
    back = f"/memories/{memory.id}"
    if memory.status is Status.ACTIVE:
        actions = (
            button_html(f"{back}/archive", "Archive", csrf, back)
            + button_html(f"{back}/reject", "Reject", csrf, back)
            + f'<form method="post" action="{back}/edit">{csrf_field(csrf)}'
            + f'<input type="hidden" name="back" value="{back}">'
            + f'<textarea name="content" rows=2>{escape(memory.content)}</textarea>'
            + "<button>Save edit</button></form>"
        )
    elif memory.status is Status.PENDING:
        actions = button_html(f"{back}/confirm", "Confirm", csrf, back) + button_html(
            f"{back}/reject", "Reject", csrf, back
        )
    actions += split_button_html(memory, csrf, back)
    chain_rows = "".join(
        f"<tr><td>{'→ ' if m.id == memory.id else ''}{memory_cell_html(m)}</td></tr>" for m in chain
    )
    audit_rows = [
        [
            e.at.isoformat(timespec="seconds"),
            escape(e.memory_id),
            escape(e.action),
            f"{e.from_status.value if e.from_status else '-'} → {e.to_status.value}",
            e.actor.value,
            escape(e.rule or ""),
            escape(e.reason),
        ]
        for e in audit
    ]
    return (
        f"<table>{fields}</table>{same_slot_html(memory)}<p>{actions}</p>"
        f"<h2>Supersede chain (oldest first)</h2><table>{chain_rows}</table>"
        "<h2>Audit trail</h2>"
        + table_html(["at", "memory", "action", "status", "by", "rule", "reason"], audit_rows)
    )


def reconfirm_html(queue: Sequence[Memory], csrf: str) -> str:
    if not queue:
        return "<p>Nothing to reconfirm.</p>"
    rows = [
        [
            memory_cell_html(m),
            button_html(f"/memories/{m.id}/reconfirm", "Still true", csrf, "/reconfirm")
            + button_html(f"/memories/{m.id}/archive", "Archive", csrf, "/reconfirm"),
        ]
        for m in queue
    ]
    return (
        "<p>Facts nobody confirmed for a year; consolidation lowered their confidence.</p>"
        + table_html(["fact", ""], rows)
    )
