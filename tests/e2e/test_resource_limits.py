"""Resource limits (issue 20): a pasted document costs a recall bounded time, its question is
what recall searches, and ``--explain`` names the part read; 500 idle connections and a client
trickling its body a byte at a time do not keep a real ``memoryd serve`` from answering an
honest recall, and the idle ones are closed; a body that never finishes is refused with 408."""

from __future__ import annotations

import asyncio
import resource
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from starlette.types import Message

from memoryd.http.connections import HEADER_SECONDS
from memoryd.http.limits import BodyLimit

from .conftest import Cli
from .server import serving, store_env

QUESTION = "What did Ana say about the Lisbon office?"
# A pasted report of 100,000 characters with the question at its end.
FILLER = "The quarterly filing lists revenue, costs and the auditors' notes in full. "
DOCUMENT = (FILLER * (100_000 // len(FILLER) + 1))[:100_000]
IDLE_SOCKETS = 500
HONEST_SECONDS = 10.0


def test_a_pasted_document_is_recalled_from_its_ends_and_explain_says_so(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    with seeded() as service:
        ana = service.remember("Ana said the Lisbon office moves to Alcântara in May").memory
    message = DOCUMENT + " " + QUESTION

    answer = cli.json("recall", message)
    explained = cli.ok("recall", message, "--explain")
    found = cli.json("search", message)

    # The legs search the question at the end, not the pasted report around it, so the answer
    # is in the block and in search's results.
    assert ana.id in {item["id"] for item in answer["items"]}
    read = answer["query"]["read"]
    assert read["chars"] == len(message) and read["whole"] is False
    assert 0 < read["head_chars"] <= 500 and 0 < read["tail_chars"] <= 1500
    assert read["read"] == (
        f"the first {read['head_chars']} and the last {read['tail_chars']:,} of "
        f"{len(message):,} characters"
    )
    # The paste ends mid-sentence, so its last words join the question's sentence.
    assert read["question"].endswith(" " + QUESTION) and len(read["question"]) < 100
    assert f"message read: {read['read']} (a longer message is read at both ends)" in explained
    assert f"question searched: {read['question']!r}" in explained
    assert ana.id in {item["id"] for item in found}
    short = cli.json("recall", QUESTION)
    assert short["query"]["read"]["whole"] is True


def test_idle_connections_and_a_trickled_body_do_not_starve_a_recall(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE_SOCKETS + 200
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    env = store_env(tmp_path)
    Cli(env=env, cwd=tmp_path).ok("init")
    token = (Path(env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
    auth = {"Authorization": f"Bearer {token}"}
    with serving(env, tmp_path) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(IDLE_SOCKETS)]
        stop = threading.Event()
        slow = socket.create_connection(("127.0.0.1", server.port))
        slow.sendall(
            b"POST /v1/recall HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Content-Length: 1000\r\n\r\n{"
        )

        def trickle() -> None:
            while not stop.wait(1.0):
                try:
                    slow.sendall(b" ")
                except OSError:
                    return

        trickler = threading.Thread(target=trickle, daemon=True)
        trickler.start()
        try:
            started = time.monotonic()
            with httpx.Client(
                base_url=server.base_url, headers=auth, timeout=HONEST_SECONDS
            ) as client:
                stored = client.post("/v1/memories", json={"content": "Ana runs the Lisbon office"})
                honest = client.post("/v1/recall", json={"message": QUESTION})
                pasted = client.post("/v1/recall", json={"message": DOCUMENT + " " + QUESTION})
            took = time.monotonic() - started

            assert stored.status_code == 200, stored.text
            assert honest.status_code == 200 and "Ana runs the Lisbon office" in honest.text
            assert pasted.status_code == 200
            assert pasted.json()["query"]["read"]["whole"] is False
            assert pasted.json()["query"]["read"]["question"].endswith(QUESTION)
            assert "Ana runs the Lisbon office" in pasted.text
            assert took < HONEST_SECONDS, f"the honest client waited {took:.1f} s"
            # The idle connections are closed once their headers are late, not held forever.
            deadline = time.monotonic() + HEADER_SECONDS + 20
            closed = 0
            for sock in idle:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    closed += sock.recv(1) == b""
                except (TimeoutError, ConnectionResetError):
                    closed += 0
            assert closed == IDLE_SOCKETS, f"{IDLE_SOCKETS - closed} idle connections still open"
        finally:
            stop.set()
            trickler.join(5)
            slow.close()
            for sock in idle:
                sock.close()


def test_a_body_still_arriving_at_its_deadline_gets_408_and_the_connection_closes() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[Message] = []
    chunks: list[Message] = [{"type": "http.request", "body": b"{", "more_body": True}]

    async def receive() -> Message:
        if chunks:
            return chunks.pop()
        await asyncio.sleep(60)  # the rest of the body never comes
        raise AssertionError("the deadline did not stop the read")

    async def send(message: Message) -> None:
        sent.append(message)

    limited = BodyLimit(app, json_limit=1000, upload_limit=1000, json_seconds=0.2)
    scope = {"type": "http", "path": "/v1/recall", "headers": []}
    started = time.monotonic()
    asyncio.run(limited(scope, receive, send))

    assert time.monotonic() - started < 5
    assert sent[0]["status"] == 408
    assert (b"connection", b"close") in sent[0]["headers"]
    assert b"the request body did not arrive within 0.2 s" in sent[1]["body"]
