"""The victim of the crash-safety harness (tests/e2e/test_crash_safety.py).

Run as ``python -m tests.crash_child OPERATION STORE PARAMS_JSON`` (from the repository root),
or forked by the harness's fork server through `run`. It opens the store, prints ``READY``,
then repeats one operation until it is killed:

- ``kb``: ingest generated Markdown documents of several chunks (and now and then re-ingest
  one with new text, or an empty one that fails);
- ``propose``: batches of five distinct items (events, one of them filling a fact slot so the
  slot's holder is superseded, a pending fact and a pending inference);
- ``observe``: queue turns with ``observe_turn`` and run the extraction jobs with ``run_jobs``;
- ``consolidate``: ``consolidate(now=...)`` with ``now`` moving forward every run.

Every line on stdout is ``WORD JSON``, flushed at once. ``TRY`` says what is about to be
written (printed before the call), ``ACK`` what the service call returned (printed only after
it returned), so the parent knows which writes were acknowledged and which may or may not have
landed when the kill came.

The embedder is `CrashEmbedder`: vectors from a hash of the text, so a child starts in a
fraction of a second (no model to load) and distinct texts are never near-duplicates. The
store records its model id, so whoever opens the store afterwards must use it too.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
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
    """A document of ``sections`` sections of about 300 words each (several chunks)."""
    parts = [f"# {title}\n"]
    for number in range(sections):
        parts.append(f"## Section {number} {' '.join(words(rng, 2))}\n")
        for _ in range(3):
            parts.append(" ".join(words(rng, 100)) + ".\n")
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


def emit(word: str, payload: dict[str, Any]) -> None:
    """One flushed line."""
    sys.stdout.write(f"{word} {json.dumps(payload, separators=(',', ':'))}\n")
    sys.stdout.flush()


def run(operation: str, store: str, params: dict[str, Any]) -> None:
    """Open the store, say READY, and loop over the operation until killed."""
    from memoryd.app import open_service
    from memoryd.settings import resolve_settings

    if operation == "observe":
        import openai  # noqa: F401  (imported before READY: the kills should hit the store)

    service = open_service(resolve_settings(store), embedder=CrashEmbedder())
    rng = random.Random(params["seed"])
    emit("READY", {"operation": operation})
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
        if roll < 0.1:  # nothing to index: a new source fails, a stored one keeps its chunks
            uri = rng.choice(ready) if ready and rng.random() < 0.5 else fresh
            data = b"   \n"
        elif roll < 0.3 and ready:  # new text for a stored source: its chunks are replaced
            uri = rng.choice(ready)
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
    from memoryd.model import Source

    cycle = params["cycle"]
    for number in range(10**9):
        tag = f"c{cycle}b{number}"
        dial = rng.randrange(5)
        position = " ".join(words(rng, 2))
        items = [
            {
                "kind": "event",
                "content": f"crash dial {dial} now points at {position} ({tag})",
                "confidence": 0.9,
                "changes_behavior": False,
                "subject": f"crash dial {dial}",
                "predicate": "points at",
                "object": f"{position} {tag}",
            },
            *(
                {
                    "kind": "event",
                    "content": f"{tag} event {i}: {' '.join(words(rng, 8))}",
                    "confidence": 0.9,
                    "changes_behavior": False,
                }
                for i in (1, 2)
            ),
            {
                "kind": "fact",
                "content": f"{tag} fact: {' '.join(words(rng, 8))}",
                "confidence": 0.9,
                "changes_behavior": False,
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
        for extra in range(2 if number % 3 == 0 else 1):
            tag = f"{TURN_MARK}c{cycle}t{number}x{extra}"
            text = f"Today {tag} happened: {' '.join(words(rng, 10))}"
            emit("TRY", {"turn": tag})
            observation = service.observe_turn(text)
            emit("ACK", {"turn": tag, "queued": observation.queued, "job": observation.job_id})
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


def main(argv: list[str]) -> None:
    """``OPERATION STORE PARAMS_JSON``."""
    operation, store, params = argv
    run(operation, store, json.loads(params))


if __name__ == "__main__":
    main(sys.argv[1:])
