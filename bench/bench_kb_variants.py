"""search_kb's fusion variants on one ingested filings store, both question sets, one process.

    python bench/bench_kb_variants.py --store /tmp/now.db   # a store bench_kb.py --set filings kept

Each row is a :class:`KbSearchPolicy` change from the default; the table gives hit@1 / hit@5 /
hit@10 / right document first / page hit@5 / page hit@10 for the 48 questions written from the
page, the analysts' questions and each half of them, and search p50 / p95 over all of them.
Questions are embedded for real (cached after the first variant: the same text gives the same
vector)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kb_filings import SETS, score_set
from kb_cache import CachedEmbedder
from report import percentile, print_table, progress
from stores import open_with_store

from memoryd.kb import bridge_policy
from memoryd.kb.model import Document
from memoryd.kb.search import KbSearchPolicy
from memoryd.providers.embedder import LocalMiniLM

BASE = KbSearchPolicy()
# Main at 7ecd3e0: the row under the question's year ordered by its cover alone, the fusion's
# reciprocal-rank constant (the "row and year" rows below vary this).
MAIN_ORDER = replace(
    BASE,
    row_evidence_order="cover",
    row_evidence_constant=60,
    row_evidence_weight=0.5,
    row_evidence_min=0.3,
)
# Main before a row naming the question's line item and year counted (the rows below this one).
PAGES = replace(BASE, row_evidence_weight=0.0)
ONE_PER_CHUNK = replace(PAGES, merge_pages=False)
MAIN = replace(
    ONE_PER_CHUNK,
    expand_labels=False,
    route_by_symbols=False,
    route_topic_only=False,
    bridge_labels=False,
)
VARIANTS: dict[str, KbSearchPolicy] = {
    "none of the three": MAIN,
    "abbreviations spelled out, keyword legs only": replace(
        MAIN, expand_labels=True, expand_label_vector=False
    ),
    "abbreviations spelled out, keyword legs and row-label vector": replace(
        MAIN, expand_labels=True
    ),
    "+ tickers name documents": replace(ONE_PER_CHUNK, route_topic_only=False, bridge_labels=False),
    "+ named documents searched without their names": replace(ONE_PER_CHUNK, bridge_labels=False),
    "+ words carried across by the library's numbers": ONE_PER_CHUNK,
    "the same, two labels reached per word": ONE_PER_CHUNK,
    "a page's chunks merged, fusion 2x deep": replace(PAGES, merge_depth=2, merge_most=None),
    "a page's chunks merged, fusion 3x deep": replace(PAGES, merge_depth=3, merge_most=None),
    "a page's chunks merged, fusion 4x deep": replace(PAGES, merge_most=None),
    "a page's chunks merged, fusion 6x deep": replace(PAGES, merge_depth=6, merge_most=None),
    "4x deep, at most 2 chunks a result": replace(PAGES, merge_most=2),
    "4x deep, at most 3 chunks a result (main)": PAGES,
}
# A row naming the question's line item and year put first (kb.result_policy.row_evidence):
# share of the label's / the question's words, or their product; the least share; the weight.
for _share, _least in (("label", 0.5), ("label", 1.0), ("question", 0.3), ("both", 0.2)):
    for _weight in (0.5, 1.0, 2.0):
        _policy = replace(
            MAIN_ORDER,
            row_evidence_weight=_weight,
            row_evidence_share=_share,
            row_evidence_min=_least,
        )
        _name = f"row and year: {_share} >= {_least}, weight {_weight}"
        VARIANTS[_name + (" (main at 7ecd3e0)" if _policy == MAIN_ORDER else "")] = _policy
# The evidence first, the statement before its excerpts (kb.result_policy.row_evidence_first):
# the results whose row names the line item under the question's year ranked by the cover
# ("cover"), then by how many rows of their chunk have a value under that year ("cover,
# rows"), or by those rows alone ("rows"); the points' reciprocal-rank constant and weight;
# the least share of the question's words a row's label holds.
for _order, _constant, _weight, _least in (
    *(
        (o, c, w, 0.3)
        for o in ("cover", "cover, rows", "rows")
        for c, w in ((60, 0.5), (5, 0.1), (5, 0.2))
    ),
    *((o, 5, 0.2, m) for o in ("cover, rows", "rows") for m in (0.4, 0.5)),
):
    _policy = replace(
        BASE,
        row_evidence_order=_order,
        row_evidence_constant=_constant,
        row_evidence_weight=_weight,
        row_evidence_min=_least,
    )
    _name = f"evidence by {_order}, constant {_constant}, weight {_weight}, question >= {_least}"
    VARIANTS[_name + (" (the default)" if _policy == BASE else "")] = _policy
# Words across the gap (issue 29, kbvocab9): ties by a difference of two rows, off and on.
_DIFFERENCES = replace(BASE, bridge_differences=True)
VARIANTS["vocabulary: no ties by differences"] = replace(BASE, bridge_differences=False)
_NEAR = "vocabulary: ties by differences of two rows, operands at 0.6 of their words"
VARIANTS[_NEAR] = _DIFFERENCES
VARIANTS["vocabulary: ties by differences of two rows, operands whole (the default)"] = _DIFFERENCES
# A figure printed twice read where it is stated whole (kb.result_policy.sources_first).
VARIANTS["sources: a copy's figure before its statement"] = replace(BASE, row_sources_first=False)
VARIANTS["sources: the statement before its copy (the default)"] = BASE
# The fusion's and the evidence order's knobs one step each side of the default, re-swept on
# today's code (issue 29, kbpage11: the evidence page in the top 5).
for _knob, _values in (
    ("row_weight", (0.3, 0.7)),
    ("row_vector_weight", (0.3, 0.7)),
    ("route_weight", (0.7, 1.5)),
    ("merge_most", (2, 4)),
    ("row_evidence_weight", (0.15, 0.3)),
    ("row_evidence_constant", (3, 10)),
    ("rank_constant", (30, 90)),
):
    for _value in _values:
        _knobs: dict[str, Any] = {_knob: _value}
        VARIANTS[f"knobs: {_knob} {_value}"] = replace(BASE, **_knobs)
VARIANTS["knobs: the default"] = BASE
# The question's words the chunk's heading holds counted for its rows (issue 29, first48:
# "In its 2016 cash flow statement, how much ..." names the table by its heading).
VARIANTS["heading: the label's words alone"] = replace(BASE, row_evidence_share="question")
VARIANTS["heading: the label's or the heading's words (the default)"] = BASE
# A fiscal year at most three filings end names them when nothing else does (first48).
VARIANTS["year: a year alone names no filing"] = replace(BASE, route_by_year=False)
VARIANTS["year: a year at most three filings end names them (the default)"] = BASE
# Row-and-year evidence only in the documents a question names, when it names any (first48).
VARIANTS["named: every document's rows are evidence"] = replace(BASE, row_evidence_named=False)
VARIANTS["named: only the named documents' rows (the default)"] = BASE
# Per variant, kb.bridge_policy constants set for its run (the others keep their values).
CONSTANTS: dict[str, dict[str, float]] = {
    "the same, two labels reached per word": {"MAX_REACHED": 2},
    _NEAR: {"DIFFERENCE_SHARE": 0.6},
}
DEFAULTS = {
    "MAX_REACHED": bridge_policy.MAX_REACHED,
    "DIFFERENCE_SHARE": bridge_policy.DIFFERENCE_SHARE,
}
MEASURES = ("hit@1", "hit@5", "hit@10", "right document first", "page hit@5", "page hit@10")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument(
        "--only", default="", help="only variants whose name holds one of these (comma-separated)"
    )
    parser.add_argument(
        "--latency",
        action="store_true",
        help="only time the searches, the variants interleaved question by question",
    )
    args = parser.parse_args()
    embedder = CachedEmbedder(LocalMiniLM())
    _, service = open_with_store(str(args.store), embedder=embedder)
    try:
        documents: dict[str, Document] = {
            Path(d.source_uri).name: d for d in service.kb.list_documents(collection="filings")
        }
        sets = {
            label: [json.loads(line) for line in path.read_text("utf-8").splitlines()]
            for label, path in SETS.items()
        }
        # Values are chosen on one half of the analysts' questions and reported on the other.
        analyst = sets["analyst"]
        sets["analyst, even"] = analyst[0::2]
        sets["analyst, odd"] = analyst[1::2]
        chosen = {
            name: policy
            for name, policy in VARIANTS.items()
            if any(part in name for part in args.only.split(","))
        }
        if args.latency:
            # Questions embedded for real in the timed searches (a spelled-out question's
            # second embedding included), not from the cache.
            service.kb.embedder = embedder.inner
            _latency(service, chosen, [q["question"] for qs in sets.values() for q in qs])
            return
        rows = []
        for name, policy in chosen.items():
            service.kb.search_policy = policy
            _set_constants(CONSTANTS.get(name, {}))
            latencies: list[float] = []
            cells: list[str] = [name]
            for questions in sets.values():
                scores, _ = score_set(service, documents, questions, latencies)
                cells.append(" / ".join(f"{scores[m]:.2f}" for m in MEASURES))
            cells.append(f"{percentile(latencies, 0.5):.0f} / {percentile(latencies, 0.95):.0f}")
            progress(f"  {' | '.join(cells)}")
            rows.append(tuple(cells))
        print()
        print_table(("fusion", *[f"{label} ({len(q)})" for label, q in sets.items()], "ms"), rows)
    finally:
        service.close()


def _set_constants(values: dict[str, float]) -> None:
    """kb.bridge_policy's constants as ``values`` says, the others at their defaults."""
    for constant, default in DEFAULTS.items():
        setattr(bridge_policy, constant, values.get(constant, default))


def _latency(service: Any, chosen: dict[str, KbSearchPolicy], questions: list[str]) -> None:
    """search_kb ms per variant, each question asked of every variant in turn (the machine's
    load falls on all alike), after one untimed round that embeds every question."""
    for question in questions:
        service.kb.search(question, limit=10)
    times: dict[str, list[float]] = {name: [] for name in chosen}
    cpu: dict[str, list[float]] = {name: [] for name in chosen}
    for question in questions:
        for name, policy in chosen.items():
            service.kb.search_policy = policy
            _set_constants(CONSTANTS.get(name, {}))
            begun, begun_cpu = time.perf_counter(), time.process_time()
            service.kb.search(question, limit=10)
            cpu[name].append((time.process_time() - begun_cpu) * 1000)
            times[name].append((time.perf_counter() - begun) * 1000)
    first = next(iter(times.values()))
    rows = [
        (
            name,
            f"{percentile(ms, 0.5):.0f} / {percentile(ms, 0.95):.0f}",
            f"{percentile(ms, 0.5) / percentile(first, 0.5):.2f} / "
            f"{percentile(ms, 0.95) / percentile(first, 0.95):.2f}",
            f"{percentile(cpu[name], 0.5):.0f} / {percentile(cpu[name], 0.95):.0f}",
        )
        for name, ms in times.items()
    ]
    print()
    print_table(("fusion", "search p50 / p95 ms", "ratio to the first", "CPU ms p50 / p95"), rows)


if __name__ == "__main__":
    main()
