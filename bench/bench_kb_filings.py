"""``bench_kb.py --set filings``: search_kb on a library of eleven real SEC filings (see
bench_kb.py); ``--baseline TREE`` measures an older checkout beside this one."""

from __future__ import annotations

import argparse
import functools
import json
import operator
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_cache import CachedEmbedder, cache_pdf_reads
from report import percentile, print_table, progress
from stores import open_with_store

from memoryd.kb.model import Chunk, Document
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService

HERE = Path(__file__).resolve().parent
FILINGS = HERE.parents[1] / "shared" / "data" / "filings"
KS = (1, 3, 5, 10)
# A raw edge line on at least this share of a filing's pages is running-header text.
RECURRING_SHARE = 0.3


def squash(text: str) -> str:
    """Letters and digits only, case-folded: how a quote is looked for in a chunk."""
    return re.sub(r"[^0-9a-z]+", "", text.casefold())


def recurring_lines(path: Path) -> set[str]:
    """Running headers and footers of the raw page text (pdfium, no layout): the lines in the
    top or bottom tenth of a page that repeat on many pages, digits ignored."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(path.read_bytes())
    try:
        pages: Counter[str] = Counter()
        for index in range(len(document)):
            page = document[index]
            width, height = page.get_width(), page.get_height()
            textpage = page.get_textpage()
            bands = (
                textpage.get_text_bounded(0, height * 0.9, width, height),
                textpage.get_text_bounded(0, 0, width, height * 0.1),
            )
            lines = {
                squash(re.sub(r"\d+", "", line)) for band in bands for line in band.splitlines()
            }
            pages.update(line for line in lines if len(line) >= 6)
            textpage.close()
            page.close()
        total = len(document)
    finally:
        document.close()
    return {line for line, n in pages.items() if n >= RECURRING_SHARE * total}


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")


def _pages(chunk: Chunk) -> set[int]:
    """The pages a chunk cites (none for a release that did not record pages)."""
    span = getattr(chunk, "page_range", None)
    return set(range(span[0], span[1] + 1)) if span else set()


def _hit_pages(hit: Any) -> set[int]:
    """The pages a result cites: all its chunks' since results of one page are merged (a
    release before that: its one chunk's)."""
    return _pages(hit if hasattr(hit, "merged") else hit.chunk)


def _hit_text(hit: Any) -> str:
    """A result's text: all its chunks' (a release before merging: its one chunk's)."""
    return str(getattr(hit, "text", hit.chunk.text))


def share(part: int, whole: int) -> str:
    """'0.50 (24/48)', or '-' for nothing to share."""
    return f"{part / whole:.2f} ({part}/{whole})" if whole else "-"


def _page_count(path: Path) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(path.read_bytes())
    try:
        return len(document)
    finally:
        document.close()


SETS = {
    "old 48": HERE / "data" / "filings_questions.jsonl",
    "analyst": HERE / "data" / "filings_analyst_questions.jsonl",
}


def library() -> list[Path]:
    """The whole library: the three filings and the eight of ``library/``."""
    return sorted(FILINGS.glob("*.pdf")) + sorted((FILINGS / "library").glob("*.pdf"))


# The figure a quote gives ("10,708", "6.11", "164,000"): a first result in the right
# document that shows it answers the question as a reader would accept, whichever of the
# filing's copies of the figure (statement, MD&A, note) it is.
FIGURE = re.compile(r"\d[\d,]*\.\d+|\d{1,3}(?:,\d{3})+|\d{3,}")


def shows_figure(quote: str, text: str) -> bool:
    """Whether ``text`` shows the first figure of ``quote`` (the quote itself, when it has no
    figure)."""
    figure = FIGURE.search(quote)
    if figure is None:
        return squash(quote) in squash(text)
    return re.search(rf"(?<![\d.,]){re.escape(figure.group())}(?![\d]|[.,]\d)", text) is not None


def score_set(
    service: MemoryService,
    documents: dict[str, Document],
    questions: list[dict[str, Any]],
    latencies: list[float],
) -> tuple[dict[str, float], list[str]]:
    """One question set's measures (shares 0-1) and the questions missed in the top 10."""
    hits = {k: 0 for k in KS}
    page5 = page10 = right_first = figure_first = 0
    by_kind: dict[str, list[int]] = {}
    misses: list[str] = []
    for question in questions:
        document = documents[question["file"]]
        begun = time.perf_counter()
        found = service.kb.search(question["question"], limit=10).hits
        latencies.append((time.perf_counter() - begun) * 1000)
        quote = squash(question["quote"])
        rank = next(
            (
                i
                for i, hit in enumerate(found, start=1)
                if hit.document.id == document.id and quote in squash(_hit_text(hit))
            ),
            None,
        )
        for k in KS:
            hits[k] += rank is not None and rank <= k
        by_kind.setdefault(question["kind"], []).append(rank or 0)
        right_first += bool(found) and found[0].document.id == document.id
        figure_first += (
            bool(found)
            and found[0].document.id == document.id
            and shows_figure(question["quote"], _hit_text(found[0]))
        )
        wanted = set(question["pages"])
        cited = [hit.document.id == document.id and bool(wanted & _hit_pages(hit)) for hit in found]
        page5 += any(cited[:5])
        page10 += any(cited)
        if rank is None:
            misses.append(f"{question['file']} p{question['pages']}: {question['question']}")
    n = len(questions)
    measures = {f"hit@{k}": hits[k] / n for k in KS}
    measures["right document first"] = right_first / n
    measures["the quote's figure first (right document)"] = figure_first / n
    measures["page hit@5"] = page5 / n
    measures["page hit@10"] = page10 / n
    for kind, ranks in sorted(by_kind.items()):
        measures[f"{kind}: hit@1 ({len(ranks)})"] = sum(r == 1 for r in ranks) / len(ranks)
        measures[f"{kind}: hit@10 ({len(ranks)})"] = sum(r > 0 for r in ranks) / len(ranks)
    return measures, misses


def measure(store_path: Path | None) -> dict[str, Any]:
    """Ingest the library (cached reads and vectors), ask every set; the measures as JSON."""
    cache_pdf_reads()
    workdir = Path(tempfile.mkdtemp(prefix="memoryd-filings-bench-"))
    store = store_path or workdir / "filings.db"
    embedder = CachedEmbedder(LocalMiniLM())
    kb_store, service = open_with_store(str(store), embedder=embedder)
    try:
        paths = library()
        started = time.perf_counter()
        results = service.kb.ingest(paths, collection="filings")
        seconds = time.perf_counter() - started
        for result in results:
            if result.outcome not in ("ok", "skipped"):
                progress(f"  {result.source}: {result.outcome} {result.reason}")
        documents: dict[str, Document] = {
            Path(d.source_uri).name: d for d in service.kb.list_documents(collection="filings")
        }
        chunks: dict[str, list[Chunk]] = {
            name: kb_store.kb.chunks(d.id) for name, d in documents.items()
        }
        # Questions are embedded for real: only the chunks' vectors come from the cache.
        service.kb.embedder = embedder.inner
        latencies: list[float] = []
        sets: dict[str, Any] = {}
        for label, path in SETS.items():
            if not path.exists():
                continue
            questions = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
            scores, misses = score_set(service, documents, questions, latencies)
            anywhere = sum(
                1
                for q in questions
                if any(squash(q["quote"]) in squash(c.text) for c in chunks[q["file"]])
            )
            scores["evidence quote in some chunk"] = anywhere / len(questions)
            sets[label] = {"n": len(questions), "scores": scores, "misses": misses}
        every = [c for name in chunks for c in chunks[name]]
        sizes = sorted(c.tokens for c in every)
        by_path = {p.name: p for p in paths}
        headers = {name: recurring_lines(by_path[name]) for name in chunks}
        with_furniture = sum(
            1
            for name, list_ in chunks.items()
            for c in list_
            if any(line in squash(c.text) for line in headers[name])
        )
        pageless = sum(1 for c in every if not c.pages)
        total_pages = sum(_page_count(by_path[name]) for name in documents)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        return {
            "titles": {name: d.title for name, d in sorted(documents.items())},
            "chunks by document": {name: d.chunk_count for name, d in sorted(documents.items())},
            "sets": sets,
            "chunks": len(every),
            "chunks without a page": pageless,
            "chunk tokens p50/p99/max": (
                f"{percentile(sizes, 0.5):.0f} / {percentile(sizes, 0.99):.0f} / {sizes[-1]}"
            ),
            "breadcrumbs with more than the title": sum(1 for c in every if c.headings),
            "chunks holding running-header text": with_furniture,
            "chunks with a NUL or control character": sum(
                1 for c in every if CONTROL.search(c.text)
            ),
            "pages": total_pages,
            "ingest seconds (cached reads and vectors)": round(seconds),
            "search p50 ms": round(percentile(latencies, 0.5), 1),
            "search p95 ms": round(percentile(latencies, 0.95), 1),
            "peak RSS MB": rss,
        }
    finally:
        service.close()


def baseline(tree: Path, store_path: Path | None) -> dict[str, Any]:
    """The same measures with the code of ``tree`` (a checkout's ``src``) in a subprocess."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    command = [sys.executable, str(Path(__file__)), "--json"]
    if store_path is not None:
        command += ["--store", str(store_path)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def run(
    store_path: Path | None, base_tree: Path | None = None, base_store: Path | None = None
) -> None:
    """Measure this code (and, with ``base_tree``, the old code beside it); print tables."""
    now = measure(store_path)
    before = baseline(base_tree, base_store) if base_tree is not None else None
    columns = ("measure", "before", "now") if before else ("measure", "now")

    def row(label: str, key: Callable[[dict[str, Any]], object]) -> tuple[object, ...]:
        if before is None:
            return (label, key(now))
        try:
            old = key(before)
        except KeyError:
            old = "-"
        return (label, old, key(now))

    print(f"\nFilings: {len(now['titles'])} documents, {now['pages']} pages\n")
    print_table(
        ("document", "title", "chunks"),
        [(name, title, now["chunks by document"][name]) for name, title in now["titles"].items()],
    )
    if before:
        print("\nBefore, titles:")
        for name, title in before["titles"].items():
            print(f"- {name}: {title}")
    for label, measured in now["sets"].items():
        n = measured["n"]
        print(f"\n{label}: {n} questions\n")
        print_table(
            columns,
            [
                row(key, functools.partial(_set_score, label=label, key=key, n=n))
                for key in measured["scores"]
            ],
        )
    print()
    keys = [k for k in now if k not in ("titles", "chunks by document", "sets", "pages")]
    print_table(columns, [row(k, operator.itemgetter(k)) for k in keys])
    for label, measured in now["sets"].items():
        if measured["misses"]:
            print(f"\n{label}, not in the top 10:")
            for miss in measured["misses"]:
                print(f"- {miss}")


def _set_score(measured: dict[str, Any], *, label: str, key: str, n: int) -> str:
    """One score of one question set, as the table shows it."""
    return _shown(measured["sets"][label]["scores"][key], n, key)


def _shown(value: float, n: int, label: str = "") -> str:
    """'0.50 (24/48)'; a per-kind measure ("table: hit@1 (18)") counts out of its kind."""
    counted = re.search(r"\((\d+)\)$", label)
    whole = int(counted.group(1)) if counted else n
    return f"{value:.2f} ({round(value * whole)}/{whole})"


def main() -> None:
    """``--json``: print this code's measures as one JSON line (the baseline's subprocess)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--store", type=Path)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.store)))


if __name__ == "__main__":
    main()
