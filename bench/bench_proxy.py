"""Chat proxy benchmark: what ``memoryd serve``'s ``/v1/chat/completions`` adds in front of a chat
model server, against the same server called directly, in one run.

A store of ``--memories`` active memories (real MiniLM vectors, filled as bench_recall.py fills
it), a streaming OpenAI-compatible model server on loopback (tests/chat_upstream.py: one word
per event, ``--word-ms`` apart), and a real ``memoryd serve`` over the store with that server as
its upstream. Then:

1. **Time to first token**: ``--requests`` distinct questions, each asked directly and through
   the proxy (interleaved, streamed); the time until the first content event reaches the
   client. The proxy's added time is the difference, per question, and of the percentiles.
2. **Relay delay**: for each proxied request, from the moment the model server wrote its first
   content event to the moment the client read it through the proxy.
3. **Concurrent chats**: ``--chats`` conversations at once, ``--turns`` streamed turns each (the
   history growing as a chat app sends it); errors, and the turns queued for extraction
   counted in the store afterwards (each finished turn exactly once).

    .venv/bin/python bench/bench_proxy.py [--memories 10000] [--requests 200] [--chats 8]
        [--turns 10] [--vectors-cache /tmp/vectors.npy] [--store-dir /tmp/recall-stores]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_recall import NOW, corpus_vectors, filled_store
from corpus import memories, questions
from report import percentile, print_table, progress, stamp

from memoryd.http.server import free_port
from memoryd.providers.embedder import LocalMiniLM
from memoryd.storage.sqlite import SqliteStore
from tests.chat_upstream import ChatUpstream

MEMORYD = Path(sys.executable).parent / "memoryd"
ANSWER = "Here is what I can tell you about that, in a few short words."


def first_token(
    client: httpx.Client, url: str, body: dict[str, Any], seen: dict[str, str] | None = None
) -> tuple[float, float, str]:
    """Stream one completion: (seconds to the first content event, monotonic time it was
    read, the whole answer); ``seen`` gets the proxy's X-Memoryd-Context header."""
    started = time.perf_counter()
    first: float | None = None
    read_at = 0.0
    text = ""
    with client.stream("POST", url, json=body) as answer:
        answer.raise_for_status()
        if seen is not None:
            seen["context"] = answer.headers.get("x-memoryd-context", "")
        for line in answer.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0]["delta"]
            if delta.get("content"):
                if first is None:
                    read_at = time.monotonic()
                    first = time.perf_counter() - started
                text += delta["content"]
    assert first is not None, "no content arrived"
    return first, read_at, text


def environment(root: Path, db: Path, upstream: ChatUpstream) -> dict[str, str]:
    """The environment of the benchmark's ``memoryd`` processes."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root),
        "MEMORYD_HOME": str(root / "home"),
        "MEMORYD_DB": str(db),
        "MEMORYD_LLM_BASE_URL": upstream.base_url + "/v1",
        "MEMORYD_LLM_MODEL": "chat-model",
        # Extraction asks a closed port: the queued turns stay queued, to be counted.
        "MEMORYD_LLM_EXTRACT_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
    }


def serve(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """``memoryd serve`` with ``env``; its base URL."""
    subprocess.run([str(MEMORYD), "init"], env=env, check=True, capture_output=True)
    port = free_port()
    log = (root / "serve.log").open("wb")
    process = subprocess.Popen(
        [str(MEMORYD), "serve", "--port", str(port)], env=env, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(base + "/v1/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit("memoryd serve did not start:\n" + (root / "serve.log").read_text())
        time.sleep(0.2)
    return process, base


def switch(env: dict[str, str], client: httpx.Client, url: str, mode: str, probe: str) -> None:
    """Set ``proxy.inject`` in memoryd.toml and wait until the running server uses it (a
    ``probe`` message that recall answers tells)."""
    subprocess.run([str(MEMORYD), "config", "set", "proxy.inject", mode], env=env,
                   check=True, capture_output=True)  # fmt: skip
    body = {"model": "chat-model", "stream": True,
            "messages": [{"role": "user", "content": probe}]}  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # serve reads memoryd.toml again within seconds
        seen: dict[str, str] = {}
        first_token(client, url, body, seen)
        if seen["context"].startswith(mode):
            return
        time.sleep(0.5)
    raise SystemExit(f"the server did not switch to proxy.inject {mode}")


def chat(
    client: httpx.Client, url: str, name: str, turns: int, errors: list[str], done: Counter[str]
) -> None:
    """One conversation of ``turns`` streamed turns, its history growing."""
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a kind assistant."}]
    for turn in range(turns):
        history.append({"role": "user", "content": f"{name}, turn {turn}: what did I plan?"})
        try:
            _, _, text = first_token(
                client, url, {"model": "chat-model", "stream": True, "messages": history}
            )
        except (httpx.HTTPError, AssertionError) as error:
            errors.append(f"{name} turn {turn}: {error}")
            return
        history.append({"role": "assistant", "content": text})
        done[name] += 1


def main() -> int:
    """Build the store, start the model server and the proxy, measure, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--chats", type=int, default=8)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--word-ms", type=float, default=5.0)
    parser.add_argument("--vectors-cache", type=Path)
    parser.add_argument("--store-dir", type=Path)
    args = parser.parse_args()
    embedder = LocalMiniLM()
    items = list(memories(args.memories, seed=7, now=NOW))
    vectors = corpus_vectors(embedder, items, args.vectors_cache)
    distinct = list(dict.fromkeys(questions(5000, seed=11)))
    asked = distinct[: args.requests]
    with tempfile.TemporaryDirectory() as tmp, ChatUpstream(ANSWER) as upstream:
        root = Path(tmp)
        db = root / "proxy.db"
        kept = None
        if args.store_dir is not None:
            args.store_dir.mkdir(parents=True, exist_ok=True)
            kept = args.store_dir / f"recall-{args.memories}.db"
        progress(f"store of {args.memories:,} memories")
        filled_store(db, kept, embedder, items, vectors)
        upstream.chunk_delay = args.word_ms / 1000
        env = environment(root, db, upstream)
        process, base = serve(root, env)
        token = (root / "home" / "token").read_text().strip()
        try:
            auth = {"Authorization": f"Bearer {token}"}
            proxy_url = base + "/v1/chat/completions"
            direct_url = upstream.base_url + "/v1/chat/completions"
            with httpx.Client(timeout=120, headers=auth) as client:
                for warm in distinct[args.requests : args.requests + 10]:
                    body = {"model": "chat-model", "stream": True,
                            "messages": [{"role": "user", "content": warm}]}  # fmt: skip
                    first_token(client, proxy_url, body)
                    first_token(client, direct_url, body)
                progress(f"time to first token: {len(asked)} questions, direct and proxied")
                direct: list[float] = []
                proxied: list[float] = []
                relay: list[float] = []
                packing: list[float] = []
                for question in asked:
                    body = {"model": "chat-model", "stream": True,
                            "messages": [{"role": "user", "content": question}]}  # fmt: skip
                    seconds, _, _ = first_token(client, direct_url, body)
                    direct.append(seconds * 1000)
                    tagged = {**body, "messages": [{"role": "user", "content": question + " "}]}
                    seen: dict[str, str] = {}
                    seconds, read_at, _ = first_token(client, proxy_url, tagged, seen)
                    proxied.append(seconds * 1000)
                    relay.append((read_at - upstream.first_sent[question + " "]) * 1000)
                    spent = re.search(r"in (\d+) ms", seen["context"])
                    if spent:
                        packing.append(float(spent.group(1)))
                others: dict[str, tuple[list[float], list[float]]] = {}
                for number, mode in enumerate(("memories", "off"), start=1):
                    progress(f"the same with proxy.inject {mode}")
                    switch(env, client, proxy_url, mode, asked[0])
                    start = number * args.requests + 20
                    timed: tuple[list[float], list[float]] = ([], [])
                    for question in distinct[start : start + args.requests]:
                        body = {"model": "chat-model", "stream": True,
                                "messages": [{"role": "user", "content": question}]}  # fmt: skip
                        seen = {}
                        direct_ms = first_token(client, direct_url, body)[0] * 1000
                        timed[0].append(first_token(client, proxy_url, body, seen)[0] * 1000
                                        - direct_ms)  # fmt: skip
                        spent = re.search(r"in (\d+) ms", seen["context"])
                        if spent:
                            timed[1].append(float(spent.group(1)))
                    others[mode] = timed
                switch(env, client, proxy_url, "pack", asked[0])
                packed = sum(
                    1
                    for b in upstream.bodies()
                    if b["messages"][-1]["content"].endswith(" ")
                    and "<memory" in str(b["messages"][0]["content"])
                )
                added = [p - d for p, d in zip(proxied, direct, strict=True)]
                progress(f"{args.chats} concurrent chats of {args.turns} turns")
                before = count_turns(db)
                errors: list[str] = []
                done: Counter[str] = Counter()
                threads = [
                    threading.Thread(
                        target=chat,
                        args=(client, proxy_url, f"chat-{n}", args.turns, errors, done),
                    )
                    for n in range(args.chats)
                ]
                started = time.perf_counter()
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                took = time.perf_counter() - started
            time.sleep(2)  # each turn is queued once its answer has gone out
            queued = count_turns(db) - before
            completed = sum(done.values())
        finally:
            process.terminate()
            process.wait(timeout=60)
    print(
        f"\nChat proxy, {args.memories:,} memories, streamed answers ({args.word_ms:g} ms per "
        f"word), {len(asked)} questions, {stamp()}\n"
    )
    print_table(
        ("measure", "p50 ms", "p95 ms", "max ms"),
        [
            ("first token, direct", *_three(direct)),
            ("first token, through the proxy", *_three(proxied)),
            ("added by the proxy (per question)", *_three(added)),
            ("  of which the pack (the proxy's own timing)", *_three(packing)),
            ("added with proxy.inject memories", *_three(others["memories"][0])),
            ("  of which the memory block", *_three(others["memories"][1] or [0.0])),
            ("added with proxy.inject off (the proxy's plumbing)", *_three(others["off"][0])),
            ("relay: upstream's first event → client", *_three(relay)),
        ],
    )
    print(f"\n{packed} of {len(asked)} proxied questions had a pack in the system message.")
    print(f"\n{args.chats} concurrent chats × {args.turns} turns in {took:.1f} s\n")
    print_table(
        ("turns completed", "errors", "turns queued", "lost", "queued twice"),
        [
            (
                str(completed),
                str(len(errors)),
                str(queued),
                str(max(0, completed - queued)),
                str(max(0, queued - completed)),
            )
        ],
    )
    for error in errors[:5]:
        print("error:", error)
    return 0


def _three(values: list[float]) -> tuple[str, str, str]:
    return (
        f"{percentile(values, 0.5):.1f}",
        f"{percentile(values, 0.95):.1f}",
        f"{max(values):.1f}",
    )


def count_turns(db: Path) -> int:
    """Turn jobs in the store (read beside the running server)."""
    store = SqliteStore(db, create=False)
    try:
        return sum(1 for job in store.jobs.recent(1_000_000) if job.kind == "turn")
    finally:
        store.close()


if __name__ == "__main__":
    raise SystemExit(main())
