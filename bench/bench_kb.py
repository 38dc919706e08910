"""Knowledge-base benchmarks.

``--set scifact`` (the default): nDCG@10 and recall@100 of search_kb on SciFact's test qrels,
each leg alone and fused; ingestion throughput; search latency; pages/s on a generated PDF.
Every SciFact document goes through the real pipeline (Markdown bytes → converter → chunker →
embedder → one transaction per document). Ranking is scored per document: a document's rank is
that of its best chunk. For recall@100 the result list is taken 100 deep with the same fusion
(search_kb itself returns at most 20).

``--set filings``: the library of eleven SEC filings of ``../shared/data/filings/`` and its
``library/`` ingested as PDFs, and two question sets: the 48 of
``bench/data/filings_questions.jsonl`` (written while reading the three first filings) and the
analyst questions of ``bench/data/filings_analyst_questions.jsonl`` (over all eleven, in an
analyst's words). Each names its evidence page and a short quote from it. Reports hit@1/3/5/10
(the evidence quote, with case, spaces and punctuation ignored, inside a returned chunk of the
right document), the right document first, page hit@5 and @10, the chunk size distribution,
chunks without a page, and how many chunks still hold running-header text (lines repeated on
many pages of the raw text, found independently of the converter). PDF reads and vectors are
cached on disk (``bench/kb_cache.py``); ``--baseline TREE`` runs the same measures with an
older checkout's code in a subprocess, so before and after come from one run.

    .venv/bin/python bench/bench_kb.py [--set scifact|filings] [--store PATH] [--queries N]
        [--baseline TREE] [--baseline-store PATH]

``--store`` keeps the ingested store between runs (an unchanged document is skipped).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_cache import CachedEmbedder
from report import elapsed_ms, percentile, print_table, progress
from stores import open_with_store

from memoryd.kb.model import SourceType
from memoryd.kb.results import IngestResult
from memoryd.kb.search import KbSearchPolicy
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def load(data: Path) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus records, test queries by id, and qrels (query → doc → relevance)."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    queries = {
        q["_id"]: q["text"]
        for q in (json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8"))
    }
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (data / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels[query_id][doc_id] = int(score)
    return corpus, {q: queries[q] for q in qrels}, dict(qrels)


def ingest_abstract(service: MemoryService, record: dict[str, Any]) -> IngestResult:
    """One SciFact abstract as a Markdown document (title as its heading), ``scifact:ID``."""
    body = f"# {record['title']}\n\n{record['text']}\n".encode()
    return service.kb.ingest_bytes(
        body,
        f"{record['_id']}.md",
        source_uri=f"scifact:{record['_id']}",
        source_type=SourceType.CURATED,
    )


def ingest(service: MemoryService, corpus: list[dict[str, Any]]) -> tuple[float, int, int]:
    """Every document through ingest_bytes; returns (seconds, documents ingested, chunks)."""
    started = time.perf_counter()
    done = chunks = 0
    for index, record in enumerate(corpus):
        result = ingest_abstract(service, record)
        if result.outcome == "ok":
            done += 1
            chunks += result.document.chunk_count if result.document else 0
        elif result.outcome != "skipped":
            progress(f"  {record['_id']}: {result.outcome} {result.reason}")
        if index % 500 == 0:
            progress(f"  ingested {index}/{len(corpus)}")
    return time.perf_counter() - started, done, chunks


def ranked_documents(service: MemoryService, query: str, uri_of: dict[str, str]) -> list[str]:
    """SciFact doc ids in result order (best chunk per document)."""
    result = service.kb.search(query, limit=service.kb.search_policy.max_limit)
    seen: list[str] = []
    for hit in result.hits:
        doc = uri_of[hit.document.id]
        if doc not in seen:
            seen.append(doc)
    return seen


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    """nDCG@k with graded relevance."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / best if best else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    """Share of relevant documents in the top k."""
    wanted = {d for d, r in relevant.items() if r > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def evaluate(
    service: MemoryService,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    uri_of: dict[str, str],
    policy: KbSearchPolicy,
) -> tuple[float, float, list[float]]:
    """Mean nDCG@10, mean recall@100 and per-query latencies (ms) under ``policy``."""
    service.kb.search_policy = policy
    ndcgs, recalls, latencies = [], [], []
    for query_id, text in queries.items():
        started = time.perf_counter()
        ranked = ranked_documents(service, text, uri_of)
        latencies.append((time.perf_counter() - started) * 1000)
        ndcgs.append(ndcg_at(ranked, qrels[query_id], 10))
        recalls.append(recall_at(ranked, qrels[query_id], 100))
    return statistics.mean(ndcgs), statistics.mean(recalls), latencies


def pdf_pages_per_second(service: MemoryService, pages: int, directory: Path) -> float:
    """Ingest a generated PDF of ``pages`` pages with headings; pages per second."""
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    words = "measurement cohort protein expression trial outcome dose variant signal".split()
    story = []
    for page in range(pages):
        story.append(Paragraph(f"Chapter {page + 1}", styles["Heading1"]))
        for paragraph in range(6):
            text = " ".join(words[(page + paragraph + i) % len(words)] for i in range(70))
            story.append(Paragraph(text.capitalize() + ".", styles["BodyText"]))
        story.append(PageBreak())
    path = directory / "generated.pdf"
    SimpleDocTemplate(str(path)).build(story)
    started = time.perf_counter()
    result = service.kb.ingest([path], collection="bench-pdf")
    seconds = time.perf_counter() - started
    assert result[0].outcome == "ok", result[0].reason
    # Out again, so that a kept store (--store) is scored on SciFact's chunks alone next time:
    # left in, its 100 chunks were a 5,686th to 5,785th distractor on every rerun.
    assert result[0].document is not None
    service.kb.delete(result[0].document.id)
    return pages / seconds


def main() -> None:
    """Run the chosen set and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", choices=["scifact", "filings"], default="scifact")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--store", type=Path, help="keep the ingested store here")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="filings: a checkout of older code (its src/) measured beside this one",
    )
    parser.add_argument("--baseline-store", type=Path, help="filings: keep the baseline's store")
    parser.add_argument("--queries", type=int, default=0, help="only the first N queries")
    parser.add_argument("--pdf-pages", type=int, default=100)
    parser.add_argument(
        "--docs",
        type=int,
        default=0,
        help="ingest only the first N documents and report throughput (no retrieval scores)",
    )
    args = parser.parse_args()
    if args.set == "filings":
        from bench_kb_filings import run as run_filings

        run_filings(args.store, args.baseline, args.baseline_store)
        return

    corpus, queries, qrels = load(args.data)
    if args.docs:
        corpus = corpus[: args.docs]
    if args.queries:
        queries = dict(list(queries.items())[: args.queries])
    workdir = Path(tempfile.mkdtemp(prefix="memoryd-kb-bench-"))
    store = args.store or workdir / "kb.db"
    # Vectors are cached on disk only for scoring runs; a throughput run (--docs) embeds.
    embedder = LocalMiniLM() if args.docs else CachedEmbedder(LocalMiniLM())
    kb_store, service = open_with_store(str(store), embedder=embedder)
    try:
        seconds, documents, chunks = ingest(service, corpus)
        if args.docs:
            rows = [
                ("documents/s", f"{documents / seconds:.1f}"),
                ("chunks/s", f"{chunks / seconds:.1f}"),
            ]
            if args.pdf_pages:
                rate = pdf_pages_per_second(service, args.pdf_pages, workdir)
                rows.append((f"generated {args.pdf_pages}-page PDF, pages/s", f"{rate:.1f}"))
            print()
            print_table((f"ingest, first {len(corpus)} SciFact documents", "value"), rows)
            return
        # Queries are embedded for real: only the documents' vectors come from the cache.
        service.kb.embedder = getattr(embedder, "inner", embedder)
        uri_of = {
            d.id: d.source_uri.removeprefix("scifact:")
            for d in service.kb.list_documents()
            if d.source_uri.startswith("scifact:")
        }
        deep = replace(KbSearchPolicy(), max_limit=100, pool=200, per_document=1)
        policies = [
            ("fused, equal weights (the default)", deep),
            ("vector leg alone (cos >= 0.25)", replace(deep, keyword_weight=0.0)),
            ("keyword leg alone (>= 2 words)", replace(deep, vector_weight=0.0)),
            ("fused, keyword weight 0.1 (the earlier default)", replace(deep, keyword_weight=0.1)),
            ("fused, keyword weight 0.3", replace(deep, keyword_weight=0.3)),
        ]
        scores = []
        for label, policy in policies:
            ndcg, recall, _ = evaluate(service, queries, qrels, uri_of, policy)
            scores.append((label, f"{ndcg:.3f}", f"{recall:.3f}"))
            progress(f"  {label}: nDCG@10 {ndcg:.3f}")
        print(f"\nSciFact: {len(corpus)} documents, {len(queries)} test queries\n")
        print_table(("ranking", "nDCG@10", "recall@100"), scores)
        service.kb.search_policy = KbSearchPolicy()
        plain = [
            elapsed_ms(functools.partial(service.kb.search, text)) for text in queries.values()
        ]
        measures = []
        if documents:
            measures.append(("ingest, SciFact documents/s", f"{documents / seconds:.1f}"))
            measures.append(("ingest, SciFact chunks/s", f"{chunks / seconds:.1f}"))
        measures.append(("chunks stored", str(kb_store.kb.chunk_count())))
        measures.append(
            (
                "search_kb p50 / p95 ms (limit 5)",
                f"{percentile(plain, 0.5):.1f} / {percentile(plain, 0.95):.1f}",
            )
        )
        if args.pdf_pages:
            rate = pdf_pages_per_second(service, args.pdf_pages, workdir)
            measures.append(
                (f"ingest, generated {args.pdf_pages}-page PDF, pages/s", f"{rate:.1f}")
            )
        print()
        print_table(("measure", "value"), measures)
    finally:
        service.close()


if __name__ == "__main__":
    main()
