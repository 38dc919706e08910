"""A small Python client for the memoryd HTTP API (``memoryd serve``).

from memoryd.client import Client
mem = Client("http://127.0.0.1:8765", token=open(".../token").read().strip())
block = mem.recall("What does Ana cook?")["text"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from memoryd.errors import MemorydError


class ApiError(MemorydError):
    """The server answered with an error status; ``status`` and the server's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class Client:
    """One connection pool to one memoryd server; every method returns decoded JSON."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 60.0) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- memories

    def health(self) -> dict[str, Any]:
        """Liveness and version."""
        return dict(self._call("GET", "/v1/health"))

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        """An owner action (kind, subject, predicate, object, entities, importance, …)."""
        return dict(self._call("POST", "/v1/memories", {"content": content, **fields}))

    def propose(
        self, memories: list[dict[str, Any]], *, source: str = "turn", source_ref: str | None = None
    ) -> list[dict[str, Any]]:
        """A batch under the proposal contract; one outcome per item."""
        body = {"memories": memories, "source": source, "source_ref": source_ref}
        return list(self._call("POST", "/v1/propose", body))

    def observe_turn(self, user: str, summary: str | None = None) -> dict[str, Any]:
        """Queue a finished turn for extraction."""
        return dict(self._call("POST", "/v1/observe", {"user": user, "summary": summary}))

    def recall(self, message: str, *, budget: int | None = None) -> dict[str, Any]:
        """The memory block for a message (``["text"]`` goes into the prompt)."""
        return dict(self._call("POST", "/v1/recall", {"message": message, "budget": budget}))

    def context(
        self, message: str, *, budget: int | None = None, explain: bool = False
    ) -> dict[str, Any]:
        """The one context pack for a message: memories and document chunks in one fenced
        block (``["text"]`` goes into the prompt), with what was dropped and why."""
        body = {"message": message, "budget": budget, "explain": explain}
        return dict(self._call("POST", "/v1/context", body))

    def search_memory(self, query: str, **filters: Any) -> list[dict[str, Any]]:
        """A ranked list of memories (kind, since, until, limit)."""
        return list(self._call("POST", "/v1/search", {"query": query, **filters}))

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        """Memories, newest first (status, kind, limit)."""
        params = {k: v for k, v in filters.items() if v is not None}
        return list(self._call("GET", "/v1/memories", params=params))

    def show(self, memory_id: str) -> dict[str, Any]:
        """A memory with its chain and audit trail."""
        return dict(self._call("GET", f"/v1/memories/{memory_id}"))

    def review_queue(self) -> list[dict[str, Any]]:
        """Pending memories with the fact each would replace."""
        return list(self._call("GET", "/v1/review"))

    def confirm(self, memory_id: str) -> dict[str, Any]:
        """Owner action."""
        return dict(self._call("POST", f"/v1/memories/{memory_id}/confirm", {}))

    def reject(self, memory_id: str) -> dict[str, Any]:
        """Owner action."""
        return dict(self._call("POST", f"/v1/memories/{memory_id}/reject", {}))

    def archive(self, memory_id: str) -> dict[str, Any]:
        """Owner action."""
        return dict(self._call("POST", f"/v1/memories/{memory_id}/archive", {}))

    def split(self, memory_id: str) -> dict[str, Any]:
        """Owner action: a fact treated as the same slot as another predicate gets its own
        slot back ({"memory", "was_same_slot_as", "restored"})."""
        return dict(self._call("POST", f"/v1/memories/{memory_id}/split", {}))

    def edit(self, memory_id: str, content: str, *, object: str | None = None) -> dict[str, Any]:
        """Owner action: supersede with new text."""
        body = {"content": content, "object": object}
        return dict(self._call("POST", f"/v1/memories/{memory_id}/edit", body))

    def consolidate(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Run (or plan) the daily consolidation now."""
        return dict(self._call("POST", "/v1/consolidate", {"dry_run": dry_run}))

    # ---------------------------------------------------------- knowledge base

    def kb_ingest(
        self, sources: list[str], *, collection: str = "default", source_type: str = "curated"
    ) -> list[dict[str, Any]]:
        """Ingest paths on the server's disk or URLs."""
        body = {"sources": sources, "collection": collection, "source_type": source_type}
        return list(self._call("POST", "/v1/kb/ingest", body))

    def kb_upload(
        self, path: str | Path, *, collection: str = "default", source_type: str = "curated"
    ) -> dict[str, Any]:
        """Upload a local file."""
        file = Path(path)
        with file.open("rb") as handle:
            response = self._http.post(
                "/v1/kb/upload",
                files={"file": (file.name, handle)},
                data={"collection": collection, "source_type": source_type},
            )
        return dict(_decoded(response))

    def kb_search(
        self, query: str, *, pinned_collections: list[str] | None = None, limit: int = 5
    ) -> dict[str, Any]:
        """search_kb."""
        body = {"query": query, "pinned_collections": pinned_collections or [], "limit": limit}
        return dict(self._call("POST", "/v1/kb/search", body))

    def kb_read(
        self,
        doc: str,
        *,
        section: str | None = None,
        chunks: str | None = None,
        max_tokens: int = 2000,
    ) -> dict[str, Any]:
        """read_kb."""
        body = {"doc": doc, "section": section, "chunks": chunks, "max_tokens": max_tokens}
        return dict(self._call("POST", "/v1/kb/read", body))

    def kb_documents(self, *, collection: str | None = None) -> list[dict[str, Any]]:
        """Documents with their status."""
        params = {"collection": collection} if collection else {}
        return list(self._call("GET", "/v1/kb/documents", params=params))

    def kb_delete(self, doc: str) -> dict[str, Any]:
        """Remove a document."""
        return dict(self._call("DELETE", f"/v1/kb/documents/{doc}"))

    # ------------------------------------------------------------- model tools

    def tool_definitions(self, style: str = "anthropic") -> list[dict[str, Any]]:
        """The model's four tools as JSON Schema."""
        return list(self._call("GET", "/v1/tools", params={"style": style}))

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        pinned_collections: list[str] | None = None,
        *,
        session: str | None = None,
        turn: str | None = None,
        untrusted: bool = False,
    ) -> dict[str, Any]:
        """Run a model's tool call (as the model); ``session``, ``turn`` and ``untrusted`` as
        in :meth:`memoryd.service.MemoryService.call_tool`."""
        body: dict[str, Any] = {
            "name": name,
            "arguments": arguments,
            "pinned_collections": pinned_collections or [],
        }
        if session is not None:
            body["session"] = session
        if turn is not None:
            body["turn"] = turn
        if untrusted:
            body["untrusted"] = True
        return dict(self._call("POST", "/v1/tools/call", body))

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        clean = {k: v for k, v in body.items() if v is not None} if body is not None else None
        response = self._http.request(method, path, json=clean, params=params)
        return _decoded(response)


def _decoded(response: httpx.Response) -> Any:
    try:
        payload = response.json()
    except ValueError:
        payload = {"error": response.text[:200]}
    if response.status_code >= 400:
        message = payload.get("error") if isinstance(payload, dict) else None
        raise ApiError(response.status_code, str(message or response.reason_phrase))
    return payload
