"""A child for tests/unit/test_kb_sandbox.py: ``python -m tests.sandbox_child TASK MEMORY``
served by :func:`memoryd.kb.sandbox.serve_task`, each task a way a converter can end."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from memoryd.kb.sandbox import ChildServer, Task, serve_task


def _exec_under_cap(data: bytes, params: Mapping[str, Any], server: ChildServer) -> dict[str, Any]:
    # A program started under the cap: the dynamic loader cannot map its libraries (exit 127).
    os.execv(sys.executable, [sys.executable, "-c", "pass"])


def _abort_holding(data: bytes, params: Mapping[str, Any], server: ChildServer) -> dict[str, Any]:
    # A native allocator giving up without a word (pdfium's aborts), after ``hold`` bytes.
    held = bytearray(int(params["hold"]))
    held[::4096] = b"x" * len(held[::4096])  # touch every page: resident, not just reserved
    time.sleep(0.5)  # a real parse grows for seconds before the allocator gives up
    os.abort()


def _noisy(data: bytes, params: Mapping[str, Any], server: ChildServer) -> dict[str, Any]:
    # A library that prints on stdout while the file is parsed.
    print('Warning: something a parser says {"error": "memory"}', flush=True)
    sys.stdout.write("x" * 100_000)
    return {"markdown": data.decode()}


def _asks(data: bytes, params: Mapping[str, Any], server: ChildServer) -> dict[str, Any]:
    # A PDF's pictures: each read by the server, in order.
    return {"read": [server.read(data) for _ in range(int(params["times"]))]}


TASKS: dict[str, Task] = {
    "exec": _exec_under_cap,
    "abort": _abort_holding,
    "noisy": _noisy,
    "asks": _asks,
}

if __name__ == "__main__":
    serve_task(TASKS)
