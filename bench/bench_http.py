"""HTTP benchmark: recall over ``memoryd serve`` with concurrent clients, and the time to first
byte of the review page with many pending memories.

Starts a real ``memoryd serve`` on loopback over a store seeded with ``--memories`` active facts
and ``--pending`` pending items, then runs ``--clients`` threads that each post recall requests
for ``--seconds``.

    .venv/bin/python bench/bench_http.py [--memories 2000] [--pending 1000] [--clients 8]
        [--old OTHER_CHECKOUT/src --rounds 2]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

import memoryd
from memoryd.http.server import free_port
from memoryd.memory.model import Source

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import memories as generated
from corpus import questions
from report import percentile, print_table, progress

MEMORYD = Path(sys.executable).parent / "memoryd"
QUESTIONS = questions(64, seed=7)


def seed(db: Path, memories: int, pending: int) -> None:
    """Generated memories, then pending behaviour-changing lessons (waiting for the owner)."""
    service = memoryd.open(db)
    try:
        now = datetime.now(UTC)
        for item in generated(memories, seed=11, now=now):
            service.remember(
                item.content,
                kind=item.kind,
                occurred_at=item.occurred_at,
                importance=item.importance,
                confidence=item.confidence,
            )
        for start in range(0, pending, 50):
            batch = {"memories": [
                {"kind": "lesson", "content": f"Rule {n}: always mention topic number {n} first",
                 "confidence": 0.9, "changes_behavior": True, "importance": "low"}
                for n in range(start, min(pending, start + 50))
            ]}  # fmt: skip
            service.propose(batch, source=Source.TURN)
        progress(f"seeded: {len(service.list_memories())} memories")
    finally:
        service.close()


@dataclass
class Served:
    """One server's recall load and review-page time to first byte."""

    latencies: list[float]
    errors: int
    elapsed: float
    ttfb: list[float]
    page_bytes: int


def serve_and_load(home: Path, source: Path | None, args: argparse.Namespace) -> Served:
    """``memoryd serve`` on the seeded store (``source`` is another checkout's src to run
    instead of this one), warmed up, then ``--clients`` recall clients for ``--seconds``."""
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_DB": str(home / "memoryd.db")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    port = free_port()
    server = subprocess.Popen(
        [str(MEMORYD), "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    token = (home / "token").read_text().strip()
    try:
        while True:
            try:
                if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers) as warm:
            for question in QUESTIONS:
                warm.post("/v1/recall", json={"message": question})

        latencies: list[float] = []
        errors = 0
        lock = threading.Lock()
        stop_at = time.monotonic() + args.seconds

        def client(number: int) -> None:
            nonlocal errors
            with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
                index = number
                while time.monotonic() < stop_at:
                    started = time.perf_counter()
                    response = http.post(
                        "/v1/recall", json={"message": QUESTIONS[index % len(QUESTIONS)]}
                    )
                    took = (time.perf_counter() - started) * 1000
                    with lock:
                        latencies.append(took)
                        errors += response.status_code != 200
                    index += 1

        started = time.monotonic()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started

        # Time to first byte of the review page (logged in through the form).
        with httpx.Client(base_url=base, follow_redirects=False) as web:
            web.post("/login", data={"token": token, "next": "/"})
            ttfb: list[float] = []
            size = 0
            for _ in range(5):
                began = time.perf_counter()
                with web.stream("GET", "/") as response:
                    parts = response.iter_raw()
                    first = next(parts)
                    ttfb.append((time.perf_counter() - began) * 1000)
                    size = len(first) + sum(len(part) for part in parts)
        return Served(latencies, errors, elapsed, ttfb, size)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def main() -> None:
    """Seed a store, serve it with each version in turn, load it with clients, print the
    table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=1, help="rounds per version, interleaved")
    parser.add_argument(
        "--old", type=Path, help="another checkout's src directory, served beside this one"
    )
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="memoryd-http-bench-"))
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_DB": str(home / "memoryd.db")}
    subprocess.run([str(MEMORYD), "init"], env=env, check=True, capture_output=True)
    seed(home / "memoryd.db", args.memories, args.pending)
    versions: list[tuple[str, Path | None]] = [("new", None)]
    if args.old is not None:
        versions.insert(0, ("old", args.old.resolve()))
    runs: dict[str, list[Served]] = {label: [] for label, _ in versions}
    for round_ in range(args.rounds):
        for label, source in versions:
            progress(f"round {round_ + 1}: {label} ...")
            runs[label].append(serve_and_load(home, source, args))
    print(
        f"\nmemoryd serve on SQLite: {args.memories} active memories, {args.pending} "
        f"pending, {args.clients} concurrent clients, {args.rounds} round(s) of "
        f"{args.seconds:.0f} s per version\n"
    )
    rows = []
    for label, served in runs.items():
        for served_round in served:
            latencies = served_round.latencies
            rows.append(
                (
                    label,
                    f"{len(latencies)} ({served_round.errors} errors)",
                    f"{len(latencies) / served_round.elapsed:.1f}",
                    f"{percentile(latencies, 0.5):.1f} / {percentile(latencies, 0.95):.1f}",
                    f"{percentile(served_round.ttfb, 0.5):.0f} ms "
                    f"({served_round.page_bytes / 1e6:.1f} MB)",
                )
            )
    print_table(
        (
            "code",
            "recall requests",
            "requests/s",
            "p50 / p95 ms",
            f"review page ({args.pending} pending) first byte, median of 5",
        ),
        rows,
    )


if __name__ == "__main__":
    main()
