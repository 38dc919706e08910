"""Schemathesis over the OpenAPI document of a live ``memoryd serve`` (loopback, with the token):
every operation gets valid and invalid inputs, and no answer may be a 5xx or break the
documented response schema.

The knowledge-base ingest route reads paths on the server's disk and fetches http(s) URLs, so
its generated sources are replaced by plain file names that resolve inside an empty folder
(no URL is ever fetched, no folder outside the test's is walked).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from memoryd.http.server import free_port

from .conftest import Cli
from .test_http_api import _env, _start, _stop, _wait_healthy

# Per operation, for the fuzzing phase (the coverage phase adds its boundary cases on top).
MAX_EXAMPLES = 15
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
INGEST_PATH = "/v1/kb/ingest"
# A source the server may look up: a plain name in its (empty) working folder.
_SAFE_SOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.\-]{0,63}")


@dataclass
class FuzzServer:
    base_url: str
    token: str
    calls: Counter[str]  # operation label → requests sent
    statuses: Counter[tuple[str, int]]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzServer]:
    root = tmp_path_factory.mktemp("api-fuzz")
    env = _env(root)
    Cli(env=env, cwd=root).ok("init")
    workdir = root / "workdir"  # the server's working folder: relative sources land here
    workdir.mkdir()
    log = workdir / "serve.log"
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    process = _start(env, log, "--port", str(port))
    try:
        _wait_healthy(base_url, process, log)
        token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
        yield FuzzServer(base_url, token, Counter(), Counter())
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def api_schema(fuzz_server: FuzzServer) -> Any:
    config = schemathesis.Config.from_dict(
        {
            "base-url": fuzz_server.base_url,
            "headers": {"Authorization": f"Bearer {fuzz_server.token}"},
            "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "database": "none"},
            "request-timeout": 60,
        }
    )
    return schemathesis.openapi.from_url(
        fuzz_server.base_url + "/openapi.json",
        config=config,
        headers={"Authorization": f"Bearer {fuzz_server.token}"},
        timeout=30,
    )


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
def test_no_operation_answers_a_server_error_or_breaks_its_schema(
    case: schemathesis.Case, fuzz_server: FuzzServer
) -> None:
    if case.method.upper() == "POST" and case.path == INGEST_PATH:
        _keep_ingest_local(case)
    response = case.call_and_validate(checks=CHECKS, timeout=60)
    label = f"{case.method.upper()} {case.path}"
    fuzz_server.calls[label] += 1
    fuzz_server.statuses[(label, response.status_code)] += 1


def test_every_operation_was_fuzzed(fuzz_server: FuzzServer, api_schema: Any) -> None:
    operations = {
        f"{method.upper()} {path}"
        for path, methods in api_schema.raw_schema["paths"].items()
        for method in methods
    }
    print(f"\n{sum(fuzz_server.calls.values())} requests over {len(fuzz_server.calls)} operations")
    for label in sorted(operations):
        codes = {code: n for (name, code), n in fuzz_server.statuses.items() if name == label}
        print(f"  {label}: {fuzz_server.calls[label]} requests, statuses {dict(sorted(codes.items()))}")

    assert operations <= set(fuzz_server.calls), operations - set(fuzz_server.calls)


def _keep_ingest_local(case: schemathesis.Case) -> None:
    """Replace every generated source that is not a plain file name (URLs, absolute or
    relative paths, ``~user``) by a name that does not exist."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("sources"), list):
        return
    sources = [
        value
        if not isinstance(value, str) or _SAFE_SOURCE.fullmatch(value)
        else f"absent-source-{index}.md"
        for index, value in enumerate(body["sources"])
    ]
    case.body = {**body, "sources": sources}
