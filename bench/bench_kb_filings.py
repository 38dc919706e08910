"""``bench_kb.py --set filings``: search_kb on three real SEC filings (see bench_kb.py)."""

from __future__ import annotations

import json
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import percentile, print_table, progress
from stores import open_with_store

from memoryd.kb.model import Chunk, Document

HERE = Path(__file__).resolve().parent
FILINGS = HERE.parents[1] / "shared" / "data" / "filings"
QUESTIONS = HERE / "data" / "filings_questions.jsonl"
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


def run(store_path: Path | None) -> None:
    """Ingest the filings, ask the questions, print the tables."""
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    workdir = Path(tempfile.mkdtemp(prefix="memoryd-filings-bench-"))
    store = store_path or workdir / "filings.db"
    kb_store, service = open_with_store(str(store))
    try:
        paths = sorted(FILINGS.glob("*.pdf"))
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
        hits = {k: 0 for k in KS}
        page_hits = 0
        by_kind: dict[str, list[int]] = {}
        misses: list[str] = []
        latencies: list[float] = []
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
                    if hit.document.id == document.id and quote in squash(hit.chunk.text)
                ),
                None,
            )
            for k in KS:
                hits[k] += rank is not None and rank <= k
            by_kind.setdefault(question["kind"], []).append(rank or 0)
            wanted = set(question["pages"])
            if any(
                hit.document.id == document.id and wanted & _pages(hit.chunk) for hit in found[:5]
            ):
                page_hits += 1
            if rank is None:
                misses.append(f"{question['file']} p{question['pages']}: {question['question']}")
        n = len(questions)
        every = [c for name in chunks for c in chunks[name]]
        sizes = sorted(c.tokens for c in every)
        with_headings = sum(1 for c in every if c.headings)
        headers = {name: recurring_lines(FILINGS / name) for name in chunks}
        with_furniture = sum(
            1
            for name, list_ in chunks.items()
            for c in list_
            if any(line in squash(c.text) for line in headers[name])
        )
        quote_anywhere = sum(
            1
            for q in questions
            if any(squash(q["quote"]) in squash(c.text) for c in chunks[q["file"]])
        )
        controls = sum(1 for c in every if CONTROL.search(c.text))
        total_pages = sum(_page_count(FILINGS / name) for name in documents)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        rows: list[tuple[str, str]] = []
        for k in KS:
            rows.append((f"hit@{k} (evidence quote in a top-{k} chunk)", share(hits[k], n)))
        for kind, ranks in sorted(by_kind.items()):
            top1 = sum(1 for r in ranks if r == 1)
            top10 = sum(1 for r in ranks if r)
            rows.append(
                (f"{kind} questions: hit@1, hit@10", f"{top1}/{len(ranks)}, {top10}/{len(ranks)}")
            )
        rows += [
            ("page hit@5 (a top-5 result cites an evidence page)", share(page_hits, n)),
            ("evidence quote found in some chunk", f"{quote_anywhere}/{n}"),
            ("chunks", str(len(every))),
            (
                "chunk tokens: median / p99 / max",
                f"{percentile(sizes, 0.5):.0f} / {percentile(sizes, 0.99):.0f} / {sizes[-1]}",
            ),
            ("chunks under 40 tokens", str(sum(1 for t in sizes if t < 40))),
            ("breadcrumbs with more than the title", share(with_headings, len(every))),
            ("longest breadcrumb (characters)", str(max(len(c.breadcrumb) for c in every))),
            ("chunks holding running-header text", share(with_furniture, len(every))),
            ("chunks with a NUL or control character", str(controls)),
            ("ingest seconds, pages/s", f"{seconds:.0f}, {total_pages / seconds:.1f}"),
            (
                "search_kb p50 / p95 ms",
                f"{percentile(latencies, 0.5):.0f} / {percentile(latencies, 0.95):.0f}",
            ),
            ("peak RSS of this process", f"{rss} MB"),
        ]
        print(f"\nFilings: {len(documents)} documents, {total_pages} pages, {n} questions\n")
        print_table(
            ("document", "title", "chunks"),
            [(name, d.title, d.chunk_count) for name, d in sorted(documents.items())],
        )
        print()
        print_table(("measure", "value"), rows)
        if misses:
            print("\nNot in the top 10:")
            for miss in misses:
                print(f"- {miss}")
    finally:
        service.close()
