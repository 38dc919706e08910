"""``memoryd serve`` handles a bounded number of requests at once and admits the others in
arrival order: a real uvicorn server, real HTTP, a route that holds its thread."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from memoryd.http.server import admit_in_order, free_port, request_threads


def test_the_default_is_four_requests_per_core_and_at_least_eight() -> None:
    assert request_threads(1) == 8
    assert request_threads(2) == 8
    assert request_threads(16) == 64


def test_at_most_n_requests_run_at_once_and_the_rest_start_in_arrival_order() -> None:
    app = FastAPI()
    lock = threading.Lock()
    running = 0
    most = 0
    started: list[int] = []

    @app.get("/hold/{number}")
    def hold(number: int) -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            started.append(number)
        time.sleep(0.3)
        with lock:
            running -= 1
        return {"number": number}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    admit_in_order(server, 2)
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        # Each request is sent whole from this one thread, 100 ms apart, so the order they
        # reach the server is the order sent even when the machine is too busy to run a client
        # thread on time.
        sockets = []
        for number in range(6):
            connection = socket.create_connection(("127.0.0.1", port), timeout=30)
            request = f"GET /hold/{number} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            connection.sendall(f"{request}\r\n".encode())
            sockets.append(connection)
            time.sleep(0.1)  # arrival order: 0, 1, 2, …
        answers: dict[int, int] = {}
        for number, connection in enumerate(sockets):
            with connection:
                reply = b""
                while chunk := connection.recv(65536):
                    reply += chunk
            answers[number] = json.loads(reply.split(b"\r\n\r\n", 1)[1])["number"]
    finally:
        server.should_exit = True
        serving.join(10)

    assert answers == {n: n for n in range(6)}
    assert most == 2
    assert started == list(range(6))
