"""How long a misbehaving model endpoint holds a caller, and how soon calls answer once it is
back: for each fault (hang, 500s, a byte every second, an endless body, 64 MiB of JSON) an
extract route and the embeddings endpoint are called with a ``--timeout`` second route, then the
endpoint recovers and the next call is timed.

    .venv/bin/python bench/bench_model_faults.py [--timeout 2]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memoryd.errors import MemorydError
from memoryd.providers.llm import Gateway, Message, Provider, Route
from memoryd.providers.remote_embedder import EmbedSettings, OpenAICompatibleEmbedder
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import FakeLLMServer, Misbehave, Reply, Status, Step

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import print_table, stamp

FAULTS: dict[str, Step | None] = {
    "hang": Misbehave("hang"),
    "HTTP 500": Status(500),
    "a byte a second": Misbehave("slow", interval=1.0),
    "endless body": Misbehave("endless", interval=0.5),
    "64 MiB of JSON": Misbehave("huge"),
}
EMBED_MODES = {"hang": "hang", "a byte a second": "slow", "endless body": "endless"}
EMBED_MODES["64 MiB of JSON"] = "huge"
ANSWER = Reply('{"proposals": []}')


def _timed(call: Callable[[], object]) -> tuple[float, str]:
    started = time.monotonic()
    try:
        call()
        outcome = "answered"
    except MemorydError as error:
        # Without where the endpoint is (the LLM's route description, the embedder's model).
        outcome = re.sub(r" \(model '[^']*' at [^)]*\)", "", str(error)).split(": ")[0]
    return time.monotonic() - started, outcome


def _llm_row(name: str, step: Step, timeout: float) -> list[object]:
    with FakeLLMServer("openai", default=ANSWER) as server:
        route = Route("extract", Provider.OPENAI, "m", server.sdk_base_url, timeout=timeout)
        gateway = Gateway({"extract": route})
        messages = [Message("user", "hi")]
        gateway.complete("extract", "s", messages)  # loads the SDK
        server.default = step
        held, said = _timed(lambda: gateway.complete("extract", "s", messages))
        server.default = ANSWER
        back, _ = _timed(lambda: gateway.complete("extract", "s", messages))
    return ["extract route", name, f"{held:.2f}", f"{back * 1000:.0f}", said]


def _embed_row(name: str, mode: str | None, timeout: float) -> list[object]:
    with FakeEmbeddingServer(dimension=64) as server:
        settings = EmbedSettings(server.model, server.base_url, timeout=timeout, max_retries=2)
        embedder = OpenAICompatibleEmbedder(settings)
        embedder.embed(["warm"])
        if mode is None:
            server.fail(100, 500)
        server.misbehave = mode
        held, said = _timed(lambda: embedder.embed(["the owner rides a blue bike"]))
        server.recover()
        back, _ = _timed(lambda: embedder.embed(["the owner rides a blue bike"]))
    return ["embeddings", name, f"{held:.2f}", f"{back * 1000:.0f}", said]


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args()
    rows = [_llm_row(name, step, args.timeout) for name, step in FAULTS.items() if step]
    rows += [_embed_row(name, EMBED_MODES.get(name), args.timeout) for name in FAULTS]
    print(f"Model endpoint faults, timeout {args.timeout:g} s, {stamp()}\n")
    print_table(
        ["endpoint", "fault", "call held (s)", "next call once back (ms)", "what the caller sees"],
        rows,
    )


if __name__ == "__main__":
    main()
