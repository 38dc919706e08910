"""Ingest speed on real SEC filings: PDF conversion (pages/s, peak RSS) and, with ``--embed``,
chunking and embedding (chunks/s), old code beside new in one run.

Each measurement runs in a fresh subprocess (``--child``) with ``PYTHONPATH`` pointing at the
code under test, so its peak RSS (``ru_maxrss``) belongs to one document and one version.
Rounds interleave old and new (old, new, old, new …): on a shared machine the ratio is stable
and an absolute time is not. The conversion uses the local OCR reader, as ``kb ingest`` does
without a caption route.

    python bench/bench_ingest.py                      # every filing, 2 rounds, old beside new
    python bench/bench_ingest.py --only ORACLE --rounds 3 --embed
    python bench/bench_ingest.py --no-ocr             # the text layer alone, pictures unread
    python bench/bench_ingest.py --filings DIR --old /path/to/old/src
    python bench/bench_ingest.py --only ORACLE --store --old ../head/src

``--store`` times the whole ingest instead (``service.kb.ingest`` of the chosen filings, in one
call, into a fresh SQLite store): when each filing became keyword-searchable (its chunks
committed) and when it was done (its vectors stored), counted from the start of the call,
and the resident memory of the ingesting process and of its conversion children, sampled
together every 0.1 s (``bench/rss_sampler.py``): each one's peak, the two added at one
instant (the machine's real high-water mark), and what the ingest was doing then.
``--library`` adds the eight filings of ``filings/library`` (the whole library of 11);
``--trace`` also records the Python heap's peak (tracemalloc; slower).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import percentile, print_table, progress
from rss_sampler import RssSampler

HERE = Path(__file__).resolve().parent
NEW_SOURCE = HERE.parent / "src"
FILINGS = HERE.parents[1] / "shared" / "data" / "filings"


def peak_rss_mb() -> float:
    """This process's peak resident set so far, in MB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class NoPictures:
    """An image reader that reads nothing: the text layer's cost alone (``--no-ocr``)."""

    name = "none"

    def read(self, image: bytes) -> str:
        """Nothing."""
        return ""


def measure_one(path: Path, embed: bool, ocr: bool) -> dict[str, Any]:
    """Convert ``path`` (and, with ``embed``, chunk and embed it) in this process."""
    import memoryd
    from memoryd.kb.convert import convert
    from memoryd.kb.images import LocalOCR

    data = path.read_bytes()
    started = time.perf_counter()
    converted = convert(data, path.name, LocalOCR() if ocr else NoPictures())
    result: dict[str, Any] = {
        "code": memoryd.__file__,
        "pages": converted.pages or 0,
        "convert_s": time.perf_counter() - started,
        "convert_rss_mb": peak_rss_mb(),
        # Code that converts in a bounded child process: that child's peak (0 when none ran).
        "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "images": converted.images_read,
        "markdown_chars": len(converted.markdown),
    }
    if embed:
        result.update(chunk_and_embed(converted.title, converted.markdown))
    return result


def chunk_and_embed(title: str, markdown: str) -> dict[str, Any]:
    """Chunk the Markdown as ingest does and embed every chunk (the model loaded first)."""
    from memoryd.kb.chunking import ChunkPolicy, breadcrumb, chunk_markdown
    from memoryd.kb.model import Chunk
    from memoryd.providers.embedder import LocalMiniLM
    from memoryd.providers.tokenizer import O200kTokenizer

    tokenizer = O200kTokenizer()

    def tail(text: str, tokens: int) -> str:
        if tokens <= 0:
            return ""
        ids = tokenizer.encode(text)
        return tokenizer.decode(ids[-tokens:]) if tokens < len(ids) else text

    started = time.perf_counter()
    drafts = chunk_markdown(markdown, tokenizer.count, tail, ChunkPolicy())
    chunks = [
        Chunk(
            document_id="",
            position=d.position,
            headings=d.headings,
            breadcrumb=breadcrumb(title, d.headings),
            text=d.text,
            tokens=d.tokens,
            overlap_chars=d.overlap_chars,
            pages=d.pages,
        )
        for d in drafts
    ]
    chunk_s = time.perf_counter() - started
    embedder = LocalMiniLM()
    list(embedder.embed(["warm the model up"]))
    started = time.perf_counter()
    list(embedder.embed([c.embedded_text for c in chunks]))
    return {
        "chunks": len(chunks),
        "chunk_s": chunk_s,
        "embed_s": time.perf_counter() - started,
        "total_rss_mb": peak_rss_mb(),
    }


def measure_store(paths: list[Path], trace: bool = False) -> dict[str, Any]:
    """Ingest ``paths`` in one ``kb.ingest`` call into a fresh store (model loaded first):
    per filing, seconds from the call's start until its chunks were committed (keyword-
    searchable; the end of its ingest for code that commits chunks with their vectors) and
    until its ingest was done."""
    import inspect
    import tempfile

    import memoryd

    if trace:
        import tracemalloc

        tracemalloc.start()
    with tempfile.TemporaryDirectory() as directory, RssSampler() as sampler:
        service = memoryd.open(Path(directory) / "bench.db")
        try:
            list(service.kb.embedder.embed(["warm the model up"]))
            searchable: dict[str, float] = {}
            done: dict[str, float] = {}
            started = time.perf_counter()
            sampler.mark(f"converting {paths[0].name}")

            class Watcher:
                def written(self, result: Any) -> None:
                    name = Path(result.source).name
                    searchable[name] = time.perf_counter() - started
                    sampler.mark(f"{name} written, {len(done)} done")

                def embedding(self, progress: Any) -> None:
                    pass

            def finished(result: Any) -> None:
                name = Path(result.source).name
                done[name] = time.perf_counter() - started
                searchable.setdefault(name, done[name])
                sampler.mark(f"{name} done, {len(searchable)} written")

            options: dict[str, Any] = {"progress": finished}
            if "watcher" in inspect.signature(service.kb.ingest).parameters:
                options["watcher"] = Watcher()
            results = service.kb.ingest([str(p) for p in paths], **options)
            total_s = time.perf_counter() - started
        finally:
            service.close()
    documents = {Path(r.source).name: r.document for r in results if r.document is not None}
    python_peak = 0.0
    if trace:
        python_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return {
        "code": memoryd.__file__,
        "total_s": total_s,
        "rss_mb": peak_rss_mb(),
        "python_peak_mb": python_peak,
        "memory": sampler.summary(),
        "filings": {
            name: {
                "searchable_s": searchable[name],
                "done_s": done[name],
                "chunks": documents[name].chunk_count if name in documents else 0,
            }
            for name in done
        },
    }


def run_child(
    source: Path,
    path: Path | list[Path],
    embed: bool,
    ocr: bool,
    store: bool = False,
    trace: bool = False,
) -> dict[str, Any]:
    """One measurement in a fresh interpreter importing memoryd from ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    paths = path if isinstance(path, list) else [path]
    command = [sys.executable, str(Path(__file__).resolve()), "--child", *map(str, paths)]
    if store:
        command.append("--store")
    if trace:
        command.append("--trace")
    if embed:
        command.append("--embed")
    if not ocr:
        command.append("--no-ocr")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        names = ", ".join(p.name for p in paths)
        raise SystemExit(f"child failed on {names} ({source}):\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not str(result["code"]).startswith(str(source)):
        raise SystemExit(f"child imported {result['code']}, not the code under {source}")
    return result


def spread(values: list[float], digits: int = 1) -> str:
    """'median (min–max)' of repeated measurements."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (
        f"{percentile(values, 0.5):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"
    )


def main() -> None:
    """Measure every filing with old and new code, interleaved, and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--filings", type=Path, default=FILINGS)
    parser.add_argument(
        "--old", type=Path, help="another checkout's src directory, measured beside this one"
    )
    parser.add_argument("--new", type=Path, default=NEW_SOURCE, help="new code's src directory")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="only filings whose name contains this")
    parser.add_argument("--embed", action="store_true", help="also chunk and embed (slow)")
    parser.add_argument(
        "--no-ocr", action="store_true", help="read no pictures: the text layer's cost alone"
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="time the whole ingest into a store: keyword-searchable after, end to end",
    )
    parser.add_argument(
        "--library", action="store_true", help="also the filings in FILINGS/library (all 11)"
    )
    parser.add_argument(
        "--trace", action="store_true", help="with --store: the Python heap's peak too (slower)"
    )
    parser.add_argument("--child", type=Path, nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.store:
            print(json.dumps(measure_store(args.child, args.trace)))
        else:
            print(json.dumps(measure_one(args.child[0], args.embed, not args.no_ocr)))
        return
    found = [
        *args.filings.glob("*.pdf"),
        *(args.filings.glob("library/*.pdf") if args.library else []),
    ]
    paths = sorted((p for p in found if args.only.lower() in p.name.lower()), key=lambda p: p.name)
    if not paths:
        raise SystemExit(f"no filings (*.pdf) under {args.filings}")
    versions = [("old", args.old.resolve())] if args.old is not None else []
    versions.append(("new", args.new.resolve()))
    if args.store:
        stored = store_runs(paths, versions, args.rounds, not args.no_ocr, args.trace)
        print_store(paths, versions, stored)
        return
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in paths:
        for round_number in range(args.rounds):
            for label, source in versions:
                progress(f"{path.name} round {round_number + 1} {label}")
                result = run_child(source, path, args.embed, not args.no_ocr)
                runs.setdefault((path.name, label), []).append(result)
    print_conversion(paths, versions, runs)
    if args.embed:
        print()
        print_split(paths, versions, runs)


def print_conversion(
    paths: list[Path],
    versions: list[tuple[str, Path]],
    runs: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    """Conversion alone: seconds, pages/s, peak RSS, images read; new/old speed-up."""
    rows = []
    for path in paths:
        rates: dict[str, float] = {}
        for label, _ in versions:
            results = runs[(path.name, label)]
            pages = results[0]["pages"]
            per_second = [r["pages"] / r["convert_s"] for r in results]
            rates[label] = percentile(per_second, 0.5)
            rows.append(
                [
                    path.name,
                    label,
                    pages,
                    spread([r["convert_s"] for r in results]),
                    spread(per_second),
                    spread([r["convert_rss_mb"] for r in results], 0),
                    spread([r.get("child_rss_mb", 0.0) for r in results], 0),
                    results[0]["images"],
                ]
            )
        if "old" in rates:
            ratio = rates["new"] / rates["old"]
            rows.append([path.name, "**new/old**", "", "", f"**{ratio:.2f}×**", "", "", ""])
    headers = [
        "filing", "code", "pages", "convert s", "pages/s", "peak RSS MB", "converter child MB",
        "images read",
    ]  # fmt: skip
    print_table(headers, rows, numeric_right=True)


def print_split(
    paths: list[Path],
    versions: list[tuple[str, Path]],
    runs: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    """The time split convert / chunk / embed and the chunks per second of embedding."""
    rows = []
    for path in paths:
        for label, _ in versions:
            results = runs[(path.name, label)]
            convert_s = percentile([r["convert_s"] for r in results], 0.5)
            chunk_s = percentile([r["chunk_s"] for r in results], 0.5)
            embed_s = percentile([r["embed_s"] for r in results], 0.5)
            total = convert_s + chunk_s + embed_s
            pages = results[0]["pages"]
            rows.append(
                [
                    path.name,
                    label,
                    results[0]["chunks"],
                    f"{convert_s:.1f} ({convert_s / total:.0%})",
                    f"{chunk_s:.1f} ({chunk_s / total:.0%})",
                    f"{embed_s:.1f} ({embed_s / total:.0%})",
                    f"{results[0]['chunks'] / embed_s:.1f}",
                    f"{pages / total:.2f}",
                    spread([r["total_rss_mb"] for r in results], 0),
                ]
            )
    headers = [
        "filing", "code", "chunks", "convert s", "chunk s", "embed s", "chunks/s (embed)",
        "pages/s (all three)", "peak RSS MB",
    ]  # fmt: skip
    print_table(headers, rows, numeric_right=True)


def store_runs(
    paths: list[Path], versions: list[tuple[str, Path]], rounds: int, ocr: bool, trace: bool
) -> dict[str, list[dict[str, Any]]]:
    """``rounds`` whole ingests of ``paths`` per version, interleaved."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_number in range(rounds):
        for label, source in versions:
            progress(f"ingest of {len(paths)} filing(s) round {round_number + 1} {label}")
            runs.setdefault(label, []).append(
                run_child(source, paths, False, ocr, store=True, trace=trace)
            )
    return runs


def print_store(
    paths: list[Path], versions: list[tuple[str, Path]], runs: dict[str, list[dict[str, Any]]]
) -> None:
    """Per filing: keyword-searchable after and done after (seconds from the start of the
    ingest), then the whole ingest's time, pages/s end to end and peak RSS."""
    from pypdfium2 import PdfDocument

    pages = {p.name: len(PdfDocument(str(p))) for p in paths}
    rows = []
    for path in paths:
        for label, _ in versions:
            results = [r["filings"][path.name] for r in runs[label]]
            rows.append(
                [
                    path.name,
                    label,
                    pages[path.name],
                    results[0]["chunks"],
                    spread([r["searchable_s"] for r in results]),
                    spread([r["done_s"] for r in results]),
                ]
            )
    headers = ["filing", "code", "pages", "chunks", "keyword-searchable after s", "done after s"]
    print_table(headers, rows, numeric_right=True)
    print()
    total_pages = sum(pages.values())
    rows = []
    for label, _ in versions:
        results = runs[label]
        rows.append(
            [
                label,
                len(paths),
                total_pages,
                spread([r["total_s"] for r in results]),
                spread([total_pages / r["total_s"] for r in results], 2),
                spread([r["memory"]["main_peak_mb"] for r in results], 0),
                spread([r["memory"]["children_peak_mb"] for r in results], 0),
                spread([r["memory"]["total_peak_mb"] for r in results], 0),
                spread([r["python_peak_mb"] for r in results], 0),
            ]
        )
    headers = [
        "code", "filings", "pages", "end to end s", "pages/s end to end", "peak RSS MB (main)",
        "peak MB (children)", "peak MB (main + children)", "Python heap peak MB",
    ]  # fmt: skip
    print_table(headers, rows, numeric_right=True)
    for label, _ in versions:
        for result in runs[label]:
            memory = result["memory"]
            progress(f"{label}: main + children peaked at {memory['total_peak_at']}")
            progress(f"{label}: timeline (s, phase, main MB, children MB) {memory['timeline']}")


if __name__ == "__main__":
    main()
