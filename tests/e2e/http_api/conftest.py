"""``memoryd serve`` over real sockets (SPEC §7): the real executable in a subprocess, reached
with httpx and with :class:`memoryd.client.Client`.

One server (the ``server`` fixture) runs for the whole package (the embedder takes seconds to
load), so every test writes its own distinct content and never relies on what another test left
behind. The tests about start-up and shutdown (test_start_stop.py) run servers of their own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import Cli
from ..server import serving, store_env

ABSENT_ID = "01ABSENTABSENTABSENTABSENT"


def _no_traceback(response: httpx.Response) -> None:
    """Response hook: no answer, error or not, ever carries a stack trace."""
    response.read()
    body = response.text
    assert "Traceback" not in body, body[:2000]
    assert 'File "' not in body, body[:2000]


def http_client(base_url: str, token: str | None) -> httpx.Client:
    """An httpx client for ``base_url`` sending ``token`` (none if None) that fails any answer
    carrying a stack trace."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(
        base_url=base_url,
        headers=headers,
        timeout=60.0,
        event_hooks={"response": [_no_traceback]},
    )


@dataclass
class Server:
    """A running ``memoryd serve`` and clients for it."""

    base_url: str
    token: str
    home: Path
    files: Path  # a scratch folder for documents to upload or ingest
    http: httpx.Client  # sends the right token
    anon: httpx.Client  # sends no token

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request that must answer 200; the decoded JSON."""
        response = self.http.request(method, path, **kwargs)
        assert response.status_code == 200, (method, path, response.status_code, response.text)
        return response.json()

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        """An owner remember that must activate; the memory."""
        result = self.ok("POST", "/v1/memories", json={"content": content, **fields})
        assert result["outcome"] == "activated", result
        memory: dict[str, Any] = result["memory"]
        assert memory["status"] == "active"
        return memory

    def show(self, memory_id: str) -> dict[str, Any]:
        shown: dict[str, Any] = self.ok("GET", f"/v1/memories/{memory_id}")
        return shown

    def upload(self, name: str, text: str, **form: str) -> dict[str, Any]:
        """Upload a Markdown document; the ready document, once the server's worker has
        stored its vectors (the upload itself returns when the chunks are written)."""
        response = self.http.post(
            "/v1/kb/upload",
            files={"file": (name, text.encode(), "text/markdown")},
            data=form,
        )
        assert response.status_code == 200, response.text
        result = response.json()
        assert result["outcome"] == "ok", result
        document: dict[str, Any] = result["document"]
        assert document["status"] == "ready", document
        return self.embedded(document)

    def embedded(self, document: dict[str, Any]) -> dict[str, Any]:
        """The document once the server's worker has stored all its vectors."""
        deadline = time.monotonic() + 60
        while document["embedded_chunks"] != document["chunks"]:
            assert time.monotonic() < deadline, f"the worker never embedded {document}"
            time.sleep(0.05)
            document = self.ok("GET", f"/v1/kb/documents/{document['id']}")
        return document


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``memoryd init`` and one ``memoryd serve`` for the package, with clients for it."""
    root = tmp_path_factory.mktemp("http-api")
    env = store_env(root)
    Cli(env=env, cwd=root).ok("init")
    with serving(env, root, log=root / "serve.log") as running:
        home = Path(env["MEMORYD_HOME"])
        token = (home / "token").read_text(encoding="ascii").strip()
        files = root / "files"
        files.mkdir()
        with (
            http_client(running.base_url, token) as http,
            http_client(running.base_url, None) as anon,
        ):
            yield Server(running.base_url, token, home, files, http, anon)
    assert running.returncode is not None
