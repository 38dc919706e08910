"""The victim of the crash-safety harness (tests/e2e/test_crash_safety.py).

``python -m tests.crash_child OPERATION STORE PARAMS_JSON`` (from the repository root) opens
the store, prints ``READY``, then repeats one operation until it is killed:

- ``kb``: ingest generated Markdown documents of several chunks: mostly new text for a few
  stored sources (their chunks are replaced), sometimes a new source, now and then an empty
  one (a new source fails; a stored one keeps its chunks);
- ``propose``: batches of five distinct items: three events (they activate), a fact with a
  slot and an inference (they wait for the owner);
- ``observe``: queue turns with ``observe_turn`` and run the extraction jobs with ``run_jobs``;
- ``consolidate``: ``consolidate(now=...)`` with ``now`` moving forward every run.

Every line on stdout is ``WORD JSON``, flushed at once. ``TRY`` says what is about to be
written (printed before the call), ``ACK`` what the service call returned (printed only after
it returned), so the parent knows which writes were acknowledged and which may or may not have
landed when the kill came.

``python -m tests.crash_child serve`` is the harness's fork server: it imports everything a
victim needs once (memoryd, both store drivers, the OpenAI SDK, the o200k tokenizer), then
forks one victim per ``RUN`` request read from stdin, so a victim is ready in milliseconds
instead of the second or two a fresh interpreter takes on a busy machine.

The embedder is `CrashEmbedder`: vectors from a hash of the text, so no model has to load and
distinct texts are never near-duplicates. The store records its model id, so whoever opens the
store afterwards must use it too.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import traceback
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

CRASH_MODEL = "crash-hash-embedder"
CRASH_DIMENSION = 384
TURN_MARK = "crash-turn-"


class CrashEmbedder:
    """A deterministic stand-in for MiniLM: a unit vector seeded by the text's SHA-256."""

    @property
    def model(self) -> str:
        """The id the store records."""
        return CRASH_MODEL

    @property
    def dimension(self) -> int:
        """384, like MiniLM."""
        return CRASH_DIMENSION

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text; equal texts get equal vectors, different ones are
        nearly orthogonal."""
        out = np.zeros((len(texts), CRASH_DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
            vector = np.random.default_rng(seed).standard_normal(CRASH_DIMENSION)
            out[row] = (vector / np.linalg.norm(vector)).astype(np.float32)
        return out


def words(rng: random.Random, count: int) -> list[str]:
    """Random lower-case pseudo-words: practically never repeated, never stop words."""
    letters = "bcdfghjklmnpqrstvwxz"
    vowels = "aeiou"
    return [
        "".join(rng.choice(letters) + rng.choice(vowels) for _ in range(rng.randint(3, 4)))
        for _ in range(count)
    ]


def markdown_document(rng: random.Random, title: str, sections: int) -> bytes:
    """A document of ``sections`` sections of 120 words each: a chunk or so per section."""
    parts = [f"# {title}\n"]
    for number in range(sections):
        parts.append(f"## Section {number} {' '.join(words(rng, 2))}\n")
        parts.append(" ".join(words(rng, 120)) + ".\n")
    return "\n".join(parts).encode("utf-8")


def turn_reply_items(tag: str) -> list[dict[str, Any]]:
    """What the fake extractor proposes for one turn: a fixed function of its tag, so a job
    that runs again after a crash proposes exactly the same."""
    rng = random.Random(tag)
    return [
        {
            "kind": "event",
            "content": f"the owner mentioned {tag} while {' '.join(words(rng, 6))}",
            "confidence": 0.9,
            "changes_behavior": False,
        },
        {
            "kind": "fact",
            "content": f"the owner keeps {tag} near {' '.join(words(rng, 6))}",
            "confidence": 0.9,
            "changes_behavior": False,
        },
    ]


def emit(word: str, payload: Mapping[str, object]) -> None:
    """One flushed line."""
    sys.stdout.write(f"{word} {json.dumps(payload, separators=(',', ':'))}\n")
    sys.stdout.flush()


def run(operation: str, store: str, params: dict[str, Any]) -> None:
    """Open the store, say READY, and loop over the operation until killed."""
    from memoryd.config.settings import resolve_settings
    from memoryd.wiring import open_service

    if operation == "observe":
        import openai  # noqa: F401  (loaded before READY: the kills should hit the store)
    if operation == "kb":
        from memoryd.providers.tokenizer import O200kTokenizer

        O200kTokenizer().count("warm up")

    service = open_service(resolve_settings(store), embedder=CrashEmbedder())
    rng = random.Random(params["seed"])
    emit("READY", {"operation": operation, "pid": os.getpid()})
    loops = {
        "kb": _ingest_loop,
        "propose": _propose_loop,
        "observe": _observe_loop,
        "consolidate": _consolidate_loop,
    }
    loops[operation](service, rng, params)


def _ingest_loop(service: Any, rng: random.Random, params: dict[str, Any]) -> None:
    cycle = params["cycle"]
    ready: list[str] = list(params.get("ready", []))
    for number in range(10**9):
        roll = rng.random()
        fresh = f"upload:crash-{cycle}-{number}.md"
        # Mostly new text for a few stored sources (their chunks are replaced), so the store
        # stays small and every check stays quick.
        recent = ready[-8:]
        if roll < 0.06:  # nothing to index: a new source fails, a stored one keeps its chunks
            uri = rng.choice(recent) if recent and rng.random() < 0.7 else fresh
            data = b"   \n"
        elif roll < 0.94 and recent:
            uri = rng.choice(recent)
            data = markdown_document(rng, f"Revised {uri}", rng.randint(2, 5))
        else:
            uri = fresh
            data = markdown_document(rng, f"Document {uri}", rng.randint(2, 5))
        digest = hashlib.sha256(data).hexdigest()
        emit("TRY", {"uri": uri, "hash": digest})
        result = service.kb.ingest_bytes(data, uri.removeprefix("upload:"))
        document = result.document
        emit(
            "ACK",
            {
                "uri": uri,
                "hash": digest,
                "outcome": result.outcome,
                "doc": document.id if document else None,
                "status": document.status.value if document else None,
                "chunks": document.chunk_count if document else None,
            },
        )
        if result.outcome == "ok" and uri not in ready:
            ready.append(uri)


def _propose_loop(service: Any, rng: random.Random, params: dict[str, Any]) -> None:
    from memoryd.memory.model import Source

    cycle = params["cycle"]
    for number in range(10**9):
        tag = f"c{cycle}b{number}"
        dial = rng.randrange(5)
        position = " ".join(words(rng, 2))
        items = [
            *(
                {
                    "kind": "event",
                    "content": f"{tag} event {i}: {' '.join(words(rng, 8))}",
                    "confidence": 0.9,
                    "changes_behavior": False,
                }
                for i in range(3)
            ),
            {
                "kind": "fact",
                "content": f"crash dial {dial} points at {position} ({tag})",
                "confidence": 0.9,
                "changes_behavior": False,
                "subject": f"crash dial {dial}",
                "predicate": "points at",
                "object": f"{position} {tag}",
            },
            {
                "kind": "inference",
                "content": f"{tag} inference: {' '.join(words(rng, 8))}",
                "confidence": 0.6,
                "changes_behavior": False,
            },
        ]
        emit("TRY", {"batch": tag, "contents": [i["content"] for i in items]})
        results = service.propose({"memories": items}, source=Source.TURN)
        emit(
            "ACK",
            {
                "batch": tag,
                "outcomes": [r.outcome.value for r in results],
                "ids": [r.memory.id if r.memory else None for r in results],
            },
        )


def _observe_loop(service: Any, rng: random.Random, params: dict[str, Any]) -> None:
    cycle = params["cycle"]
    for number in range(10**9):
        # Two turns for every job run now and then, so a backlog is left for the drain.
        for extra in range(2 if number % 10 == 0 else 1):
            tag = f"{TURN_MARK}c{cycle}t{number}x{extra}"
            text = f"Today {tag} happened: {' '.join(words(rng, 10))}"
            emit("TRY", {"turn": tag})
            observation = service.observe_turn(text)
            emit("ACK", {"turn": tag, "queued": observation.queued, "job": observation.job_id})
        emit("TRY", {"run_jobs": 1})
        for report in service.run_jobs(limit=1):
            emit(
                "ACK",
                {
                    "job": report.job.id,
                    "status": report.job.status.value,
                    "memories": [r.memory.id for r in report.results if r.memory is not None],
                },
            )


def _consolidate_loop(service: Any, rng: random.Random, params: dict[str, Any]) -> None:
    start = datetime.fromisoformat(params["start"])
    step = timedelta(seconds=params["step_seconds"])
    for number in range(10**9):
        now = start + number * step
        emit("TRY", {"now": now.isoformat()})
        report = service.consolidate(now=now)
        emit(
            "ACK",
            {
                "now": now.isoformat(),
                "stages": report.stages,
                "steps": [[s.memory_id, s.action.value, s.stage.value] for s in report.steps],
            },
        )


def warm() -> None:
    """Import and load, once, everything a victim would otherwise load after READY."""
    import openai  # noqa: F401
    import pgvector.psycopg  # noqa: F401
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401

    import memoryd.storage.postgres
    import memoryd.storage.sqlite
    import memoryd.wiring  # noqa: F401
    from memoryd.extraction.extractor import load_prompt
    from memoryd.providers.tokenizer import O200kTokenizer

    O200kTokenizer().count("warm up")
    load_prompt("extract")
    CrashEmbedder().embed(["warm up"])


def serve() -> None:
    """The fork server: ``RUN {request}`` forks a victim and answers ``PID n``; ``REAP n``
    waits for that victim and answers ``EXIT code`` (negative: killed by that signal)."""
    warm()
    print("SERVING", flush=True)
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        command, _, argument = line.strip().partition(" ")
        if command == "RUN":
            request = json.loads(argument)
            pid = os.fork()
            if pid == 0:
                _victim(request)
            print(f"PID {pid}", flush=True)
        elif command == "REAP":
            _, status = os.waitpid(int(argument), 0)
            print(f"EXIT {os.waitstatus_to_exitcode(status)}", flush=True)
        else:
            print(f"ERROR unknown command {command!r}", flush=True)


def _victim(request: dict[str, Any]) -> None:
    """In the forked child: stdout to the request's file, stderr appended to its log, the
    request's MEMORYD_* environment, then the operation until killed. Never returns."""
    code = 0
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
        os.dup2(os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
        for key in [k for k in os.environ if k.startswith("MEMORYD_")]:
            del os.environ[key]
        os.environ.update(request["env"])
        run(request["operation"], request["store"], request["params"])
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main(argv: list[str]) -> None:
    """``serve``, or ``OPERATION STORE PARAMS_JSON``."""
    if argv == ["serve"]:
        serve()
        return
    operation, store, params = argv
    run(operation, store, json.loads(params))


if __name__ == "__main__":
    main(sys.argv[1:])
