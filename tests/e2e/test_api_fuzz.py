"""Fuzzing the HTTP API of a live ``memoryd serve`` (loopback, with the token).

1. Schemathesis over the OpenAPI document the server publishes: every operation gets valid
   and invalid inputs (its examples, coverage and fuzzing phases), and no answer may be a 5xx
   or break the documented response schema or content type. It runs as the ``schemathesis``
   CLI in a subprocess: in-process, schemathesis patches Hypothesis globally (its falsifying
   examples print empty), and ``schemathesis.pytest.from_fixture`` sets ``Node._nodeid``,
   which pytest 9 no longer has. Hooks: tests/e2e/schemathesis_hooks.py.
2. What the document cannot describe: the free-form JSON of ``/v1/propose`` items and
   ``/v1/tools/call`` arguments (near-valid batches from Hypothesis, lone surrogates), NUL
   bytes in ingest sources, and instants at the ends of the calendar in every ``now``,
   ``occurred_at``, ``since`` and ``until`` — none may answer a 5xx or break later reads.

The knowledge-base ingest route reads paths on the server's disk and fetches http(s) URLs, so
every generated source that could name a URL or a path outside the server's (empty) working
folder is replaced by a plain file name: no URL is ever fetched, no other folder is walked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Cli
from .server import serving, store_env

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
# Per operation, for the fuzzing phase (the coverage phase adds its boundary cases on top).
MAX_EXAMPLES = 30
CHECKS = "not_a_server_error,response_schema_conformance,content_type_conformance"
INGEST_PATH = "/v1/kb/ingest"


@dataclass
class Server:
    base_url: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def request(self, method: str, path: str, body: Any = None) -> int:
        """The status of one request, on a new connection."""
        with httpx.Client(base_url=self.base_url, headers=self.headers, timeout=60) as http:
            return http.request(method, path, json=body).status_code

    def post_raw(self, path: str, body: str | bytes) -> httpx.Response:
        """POST a JSON text as is, on a new connection (after a 500, uvicorn closes the one it
        answered on)."""
        data = body.encode() if isinstance(body, str) else body
        headers = {**self.headers, "content-type": "application/json"}
        with httpx.Client(base_url=self.base_url, headers=headers, timeout=60) as http:
            return http.post(path, content=data)


@contextmanager
def _serving(root: Path) -> Iterator[Server]:
    """``memoryd init`` and ``memoryd serve`` on a fresh SQLite store under ``root``; the
    server's working folder holds nothing but its log."""
    root.mkdir(parents=True, exist_ok=True)
    env = store_env(root)
    Cli(env=env, cwd=root).ok("init")
    workdir = root / "workdir"
    workdir.mkdir()
    with serving(env, workdir, log=workdir / "serve.log") as running:
        token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
        yield Server(running.base_url, token)


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with _serving(tmp_path_factory.mktemp("api-edges")) as server:
        yield server


# ------------------------------------------------------------------ schemathesis


def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path: Path) -> None:
    calls_log = tmp_path / "calls.tsv"
    report = tmp_path / "report.json"
    with _serving(tmp_path / "server") as server:
        operations = _operations(httpx.get(server.base_url + "/openapi.json", timeout=30).json())
        command = [
            str(SCHEMATHESIS), "--no-color", "run", f"{server.base_url}/openapi.json",
            "--header", f"Authorization: Bearer {server.token}",
            "--checks", CHECKS,
            "--phases", "examples,coverage,fuzzing",
            "--mode", "all",
            "--max-examples", str(MAX_EXAMPLES),
            "--workers", "1",
            "--request-timeout", "60",
            "--report", "json", "--report-json-path", str(report),
        ]  # fmt: skip
        run = subprocess.run(
            command,
            cwd=tmp_path,
            env={
                **{k: v for k, v in os.environ.items() if "proxy" not in k.lower()},
                "NO_PROXY": "127.0.0.1,localhost",
                "SCHEMATHESIS_HOOKS": str(HOOKS),
                "MEMORYD_FUZZ_CALLS": str(calls_log),
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
    logged = calls_log.read_text().splitlines() if calls_log.exists() else []
    calls = Counter(line.split("\t")[0] for line in logged)
    statuses = Counter(tuple(line.split("\t")) for line in logged)
    print(f"\nschemathesis: {sum(calls.values())} requests over {len(calls)} operations")
    for label in sorted(operations):
        codes = {int(code): n for (name, code), n in statuses.items() if name == label}
        print(f"  {label}: {calls[label]} requests, statuses {dict(sorted(codes.items()))}")
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(report.read_text())
    print(f"  seed {summary['seed']}, test cases {summary['test_cases']}")

    details = _section(run.stdout, "FAILURES") + _section(run.stdout, "ERRORS")
    assert summary["errors"] == [], details
    assert summary["failures"] == [], details
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert summary["operations"]["tested"] == len(operations), summary["operations"]
    assert operations <= set(calls), operations - set(calls)


def _section(output: str, title: str) -> str:
    """One ``=== TITLE ===`` section of the CLI's output (up to the next one)."""
    lines = output.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("====")]
    start = next((i for i in heads if title in lines[i]), None)
    if start is None:
        return ""
    end = next((i for i in heads if i > start), len(lines))
    return "\n".join(lines[start:end])[:8000]


def _operations(document: dict[str, Any]) -> set[str]:
    paths: dict[str, dict[str, Any]] = document["paths"]
    return {f"{method.upper()} {path}" for path, methods in paths.items() for method in methods}


# ------------------------------------------------------- what the document cannot describe

LONE_SURROGATES = ["\ud800", "tea \udfff", "\udc00 at dawn"]

_EVENT = {"kind": "event", "content": "Rowed on the Douro at dawn", "confidence": 0.9,
          "changes_behavior": False}  # fmt: skip


def _surrogate_bodies() -> list[tuple[str, dict[str, Any]]]:
    """Free-form JSON (not described by the schema) carrying a lone surrogate somewhere."""
    bodies: list[tuple[str, dict[str, Any]]] = []
    for text in LONE_SURROGATES:
        for field in ("content", "subject", "predicate", "object", "occurred_at", "importance"):
            item = {**_EVENT, field: text}
            if field in ("subject", "predicate"):
                item = {**item, "subject": "owner", "predicate": "rows", field: text}
            bodies.append(("/v1/propose", {"memories": [item]}))
        bodies.append(("/v1/propose", {"memories": [{**_EVENT, "entities": [text]}]}))
        bodies += [
            ("/v1/tools/call", {"name": "remember", "arguments": {"content": text}}),
            ("/v1/tools/call", {"name": "search_memory", "arguments": {"query": text}}),
            ("/v1/tools/call", {"name": "search_kb", "arguments": {"query": text}}),
            ("/v1/tools/call", {"name": "read_kb", "arguments": {"doc": text}}),
        ]
    return bodies


def test_lone_surrogates_in_free_form_json_are_refused_not_5xx(edge_server: Server) -> None:
    """JSON allows ``\\ud800`` escapes; Python decodes them into strings that cannot be encoded
    or tokenized. The typed fields refuse them with a 422; the free-form ones must too."""
    failures = []
    for path, body in _surrogate_bodies():
        response = edge_server.post_raw(path, json.dumps(body))  # ensure_ascii keeps the escape
        if response.status_code >= 500:
            failures.append((path, json.dumps(body)[:120], response.status_code))

    assert not failures, "\n".join(map(str, failures))


def test_a_nul_byte_in_an_ingest_source_is_refused_not_5xx(edge_server: Server) -> None:
    statuses = {
        source: edge_server.post_raw(INGEST_PATH, json.dumps({"sources": [source]})).status_code
        for source in ("\u0000", "notes\u0000.md")
    }

    assert all(status < 500 for status in statuses.values()), statuses


_ISO_INSTANTS = [
    "0001-01-01", "0001-01-01T00:00:00Z", "0999-12-31T23:59:59+00:00", "1000-01-01T00:00:00Z",
    "9999-12-31", "9999-12-31T23:59:59.999999Z",
]  # fmt: skip
_near_valid_items = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["fact", "event", "lesson", "inference", "opinion"]),
        "content": st.text(min_size=1, max_size=40) | st.sampled_from(LONE_SURROGATES),
        "confidence": st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from([0.9, 1, 0, 10**30]),
        "changes_behavior": st.booleans() | st.none(),
    },
    optional={
        "general_knowledge": st.booleans(),
        "subject": st.text(max_size=12) | st.sampled_from(LONE_SURROGATES),
        "predicate": st.text(max_size=12),
        "object": st.text(max_size=12),
        "entities": st.lists(st.text(max_size=12) | st.sampled_from(LONE_SURROGATES), max_size=3),
        "occurred_at": st.sampled_from(_ISO_INSTANTS) | st.text(max_size=12),
        "importance": st.sampled_from(["low", "high", "critical", "urgent"]),
        "reason": st.text(max_size=5),
    },
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(_near_valid_items, min_size=1, max_size=4), st.sampled_from(["turn", "tool"]))
def test_near_valid_proposal_batches_never_answer_5xx(
    edge_server: Server, items: list[dict[str, Any]], source: str
) -> None:
    response = edge_server.post_raw(
        "/v1/propose", json.dumps({"memories": items, "source": source})
    )

    assert response.status_code < 500, response.text
    if response.status_code == 200:
        assert len(response.json()) == len(items)


def _dated_requests(instant: str, memory_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every route that takes an instant, with ``instant`` in it."""
    tag = f"({instant})"
    return [
        ("/v1/memories", {"content": f"Owner rowed across the Douro {tag}"}),
        ("/v1/memories", {"content": f"Owner rowed to Gaia {tag}", "kind": "event",
                          "occurred_at": instant}),
        ("/v1/propose", {"memories": [{**_EVENT, "content": f"Rowed at dusk {tag}",
                                       "occurred_at": instant}]}),
        ("/v1/recall", {"message": f"Where did the owner row on {instant}?"}),
        ("/v1/search", {"query": f"owner rowed {instant}"}),
        ("/v1/search", {"query": "owner rowed", "since": instant}),
        ("/v1/search", {"query": "owner rowed", "until": instant}),
        (f"/v1/memories/{memory_id}/reconfirm", {}),
        ("/v1/observe", {"user": f"I rowed today {tag}", "at": instant}),
        ("/v1/mission", {"title": "Row", "outcome": f"rowed {tag}", "finished_at": instant}),
    ]  # fmt: skip


def test_instants_at_the_ends_of_the_calendar_never_answer_5xx_nor_break_reads(
    tmp_path: Path,
) -> None:
    """Any ISO date the API accepts must be stored and read back, or refused with a 4xx; a
    request must never leave the store unreadable for the requests that follow it. (A server
    of its own: a failure here may leave its store broken.)"""
    failures: list[str] = []
    with _serving(tmp_path) as server:
        seeded = server.post_raw("/v1/memories", json.dumps({"content": "Owner rows a skiff"}))
        assert seeded.status_code == 200, seeded.text
        memory_id = seeded.json()["memory"]["id"]
        for instant in _ISO_INSTANTS:
            for path, body in _dated_requests(instant, memory_id):
                status = server.post_raw(path, json.dumps(body)).status_code
                if status >= 500:
                    failures.append(f"{path} {json.dumps(body)} -> {status}")
                reads = {
                    "GET /v1/memories": server.request("GET", "/v1/memories?limit=10000"),
                    "POST /v1/search": server.request("POST", "/v1/search", {"query": "skiff"}),
                }
                broken = [f"{name} {code}" for name, code in reads.items() if code != 200]
                if broken:
                    failures.append(f"  after {path} {json.dumps(body)}: {', '.join(broken)}")

    assert not failures, "\n".join(failures)
