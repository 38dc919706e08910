"""Schemathesis hooks for tests/e2e/test_api_fuzz.py, loaded by the ``schemathesis`` CLI
through ``SCHEMATHESIS_HOOKS`` (never imported by pytest).

- The knowledge-base ingest route reads paths on the server's disk and fetches http(s) URLs:
  every generated source that could name a URL or a path outside the server's (empty) working
  folder becomes a plain file name that does not exist. Anything else (NUL bytes, odd Unicode,
  non-strings) is sent as generated. The same holds for the location of a synced source.
- Every answered request is logged as ``METHOD PATH<TAB>STATUS`` to the file named by
  ``MEMORYD_FUZZ_CALLS``, so the test can count requests per operation.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

INGEST = ("POST", "/v1/kb/ingest")
SYNC_ADD = ("POST", "/v1/kb/sync")


def _unsafe_source(value: str) -> bool:
    return any(mark in value for mark in ("/", "\\", ":")) or value.startswith("~") or value == ".."


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    operation = case.operation
    called = (operation.method.upper(), operation.path)
    body = case.body
    if called == SYNC_ADD:
        location = body.get("location") if isinstance(body, dict) else None
        if isinstance(location, str) and _unsafe_source(location):
            case.body = {**body, "location": "absent-synced-folder"}
        return
    if called != INGEST:
        return
    if not isinstance(body, dict) or not isinstance(body.get("sources"), list):
        return
    sources = [
        f"absent-source-{index}.md" if isinstance(value, str) and _unsafe_source(value) else value
        for index, value in enumerate(body["sources"])
    ]
    case.body = {**body, "sources": sources}


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    log = os.environ.get("MEMORYD_FUZZ_CALLS")
    if log:
        with open(log, "a", encoding="utf-8") as sink:
            sink.write(f"{case.operation.label}\t{response.status_code}\n")
