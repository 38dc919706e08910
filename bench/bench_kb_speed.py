"""search_kb's time and results, this checkout beside another, interleaved question by question.

    python bench/bench_kb_speed.py --store /tmp/lib.db --scifact-store /tmp/scifact.db \
        --baseline /path/to/older/checkout [--rounds 2]

Each checkout answers in its own worker process (its own ``memoryd`` on ``PYTHONPATH``, this
checkout's interpreter); the parent asks every question of each worker in turn, so the
machine's load falls on both alike. Per store and checkout: CPU and wall ms per search
(p50 / p95 over ``--rounds`` timed rounds), the first asking's CPU ms (caches empty: the
question's first embedding, the chunks' words not yet kept), and a digest of the ranked chunk
ids of every question's top 10 at the first asking: equal digests mean no result changed.
Every search embeds its question for real. Questions: the filings library's 48 + analysts'
(``--store``, a store ``bench_kb.py --set filings --store`` kept) and SciFact's 300 test
claims (``--scifact-store``, a store ``bench_kb.py --store`` kept; its file name must hold
"scifact")."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import percentile  # noqa: E402

SCIFACT = HERE.parents[1] / "shared" / "data" / "scifact"
SETS = (
    HERE / "data" / "filings_questions.jsonl",
    HERE / "data" / "filings_analyst_questions.jsonl",
)


def worker(store: str) -> None:
    """Answer one question a line on stdin: CPU ms, wall ms and the ranked chunk ids."""
    from stores import open_with_store

    from memoryd.providers.embedder import LocalMiniLM

    _, service = open_with_store(store, embedder=LocalMiniLM())
    try:
        print("ready", flush=True)
        for line in sys.stdin:
            question = json.loads(line)
            begun, begun_cpu = time.perf_counter(), time.process_time()
            result = service.kb.search(question, limit=10)
            cpu = (time.process_time() - begun_cpu) * 1000
            wall = (time.perf_counter() - begun) * 1000
            keys = [f"{h.chunk.document_id}:{h.chunk.position}" for h in result.hits]
            print(json.dumps([cpu, wall, keys]), flush=True)
    finally:
        service.close()


def questions_of(store: str) -> list[str]:
    if "scifact" in Path(store).name:
        test = {
            line.split("\t")[0]
            for line in (SCIFACT / "qrels" / "test.tsv").read_text("utf-8").splitlines()[1:]
        }
        records = [json.loads(x) for x in (SCIFACT / "queries.jsonl").read_text().splitlines()]
        return [r["text"] for r in records if r["_id"] in test]
    return [json.loads(x)["question"] for p in SETS for x in p.read_text("utf-8").splitlines()]


def start(tree: Path, store: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    process = subprocess.Popen(
        [sys.executable, __file__, "--worker", store],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tree,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"the worker for {tree} did not start")
    return process


def ask(process: subprocess.Popen[str], question: str) -> tuple[float, float, list[str]]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(question) + "\n")
    process.stdin.flush()
    cpu, wall, keys = json.loads(process.stdout.readline())
    return cpu, wall, keys


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", required=True)
    parser.add_argument("--scifact-store")
    parser.add_argument("--baseline", type=Path, required=True, help="an older checkout")
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds over the questions")
    args = parser.parse_args()
    trees = {"baseline": args.baseline.resolve(), "this checkout": HERE.parent}
    rows = []
    for store in [s for s in (args.store, args.scifact_store) if s]:
        questions = questions_of(store)
        workers = {name: start(tree, store) for name, tree in trees.items()}
        try:
            digests = {}
            first: dict[str, list[float]] = {name: [] for name in workers}
            answers: dict[str, list[list[str]]] = {name: [] for name in workers}
            for question in questions:  # the first asking: embeds, fills caches
                for name, process in workers.items():
                    c, _, keys = ask(process, question)
                    first[name].append(c)
                    answers[name].append(keys)
            for name in workers:
                encoded = json.dumps(answers[name]).encode()
                digests[name] = hashlib.sha256(encoded).hexdigest()[:16]
            cpu: dict[str, list[float]] = {name: [] for name in workers}
            wall: dict[str, list[float]] = {name: [] for name in workers}
            same = dict.fromkeys(workers, True)  # each timed answer as at the first asking
            for _ in range(args.rounds):
                for index, question in enumerate(questions):
                    for name, process in workers.items():
                        c, w, keys = ask(process, question)
                        cpu[name].append(c)
                        wall[name].append(w)
                        same[name] = same[name] and keys == answers[name][index]
        finally:
            for process in workers.values():
                assert process.stdin is not None
                process.stdin.close()
                process.wait()
        for name in workers:
            rows.append(
                (
                    f"{Path(store).name} ({len(questions)})",
                    name,
                    f"{percentile(cpu[name], 0.5):.0f} / {percentile(cpu[name], 0.95):.0f}",
                    f"{percentile(wall[name], 0.5):.0f} / {percentile(wall[name], 0.95):.0f}",
                    f"{percentile(first[name], 0.5):.0f} / {percentile(first[name], 0.95):.0f}",
                    digests[name] + ("" if same[name] else " (a timed round differed)"),
                )
            )
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    header = (
        "store (questions)",
        "code",
        "CPU ms p50 / p95",
        "wall ms p50 / p95",
        "first asking: CPU ms p50 / p95",
        "top-10 digest",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
