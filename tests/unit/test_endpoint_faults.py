"""Model endpoints that misbehave: a hang, 500s, a byte at a time, an endless body, megabytes of
JSON. Every call ends within its route's timeout (the whole call, retries included) with an
error naming the route and what went wrong, and reads at most its cap; the embeddings endpoint
says so to remember/recall and recovers when the endpoint answers again.

The calls run side by side (one scripted server each), so the whole file takes about the
longest timeout.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic  # noqa: F401 - imported before the clock starts: the calls are timed
import openai  # noqa: F401
import pytest

from memoryd.errors import EmbeddingUnavailableError
from memoryd.providers.endpoint_calls import retry_delay
from memoryd.providers.llm import (
    AnthropicChat,
    Gateway,
    LLMUnavailableError,
    Message,
    OpenAIChat,
    Provider,
    Route,
)
from memoryd.providers.remote_embedder import EmbedSettings, OpenAICompatibleEmbedder
from tests.fake_embeddings import HUGE_BYTES, FakeEmbeddingServer
from tests.fake_llm import FakeLLMServer, Flavor, Misbehave, Reply, Status, Step

TIMEOUT = 1.0
# What each misbehaviour must say; the time it may take is the timeout plus scheduling slack.
LATE = "the extract route did not answer within its 1 s timeout (the whole call, retries included)"
LARGE = "the extract route answered more than 1 MiB"
SLACK = 1.0
CASES: dict[str, tuple[Flavor, Step, str]] = {
    "openai-hang": ("openai", Misbehave("hang"), LATE),
    "openai-slow": ("openai", Misbehave("slow", interval=0.3), LATE),
    "openai-endless": ("openai", Misbehave("endless", interval=0.2), LATE),
    "openai-huge": ("openai", Misbehave("huge"), LARGE),
    "openai-500": (
        "openai",
        Status(500),
        "failed (HTTP 500; tried 2 times within its 1 s timeout)",
    ),
    "anthropic-slow": ("anthropic", Misbehave("slow", interval=0.3), LATE),
    "anthropic-huge": ("anthropic", Misbehave("huge"), LARGE),
}
SCHEMA = {"type": "object", "properties": {"proposals": {"type": "array"}}}


def _first(sent: list[int]) -> int:
    """The first misbehaving answer's size, once the server has noticed the client left."""
    deadline = time.monotonic() + 5
    while not sent and time.monotonic() < deadline:
        time.sleep(0.02)
    return sent[0]


def _gateway(server: FakeLLMServer, timeout: float) -> Gateway:
    route = Route(
        "extract",
        Provider(server.flavor),
        "fake-model",
        base_url=server.sdk_base_url,
        api_key="k",
        timeout=timeout,
        max_retries=2,
    )
    client = AnthropicChat(route) if route.provider is Provider.ANTHROPIC else OpenAIChat(route)
    return Gateway({"extract": route}, {"extract": client})


def _ask(server: FakeLLMServer, gateway: Gateway) -> tuple[float, str]:
    messages = [Message("user", "I ran Porto in 1:52")]
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError) as failed:
        gateway.complete_json("extract", "Extract.", messages, SCHEMA)
    return time.monotonic() - started, str(failed.value)


def test_every_misbehaving_llm_call_ends_within_its_timeout_with_a_clear_error() -> None:
    servers = {
        case: FakeLLMServer(flavor, default=step) for case, (flavor, step, _) in CASES.items()
    }
    # A first answer per wire format loads the SDK's modules (they load on first use, which
    # on a busy machine takes longer than the timeout under test).
    for flavor in ("openai", "anthropic"):
        with FakeLLMServer(flavor, default=Reply('{"proposals": []}')) as warm:
            _gateway(warm, 30).complete_json("extract", "Extract.", [Message("user", "hi")], SCHEMA)
    try:
        gateways = [_gateway(server, TIMEOUT) for server in servers.values()]
        with ThreadPoolExecutor(len(servers)) as pool:
            outcomes = dict(zip(servers, pool.map(_ask, servers.values(), gateways), strict=True))
        for case, (elapsed, error) in outcomes.items():
            flavor, _, said = CASES[case]
            assert said in error, (case, error)
            assert f"extract: {flavor} model 'fake-model' at http://127.0.0.1" in error, error
            # A slow model is told which setting gives it more time; other failures are not.
            hint = "`memoryd config set llm.extract.timeout 120` (or llm.timeout for every route)"
            assert (hint in error) == (said == LATE), (case, error)
            assert elapsed < TIMEOUT + SLACK, (case, elapsed)
        # A 500 is retried while the wait fits the timeout (0.5 s, not 1 s more); nothing else is.
        counts = {case: server.request_count for case, server in servers.items()}
        assert counts == {case: 2 if case == "openai-500" else 1 for case in CASES}
        # The huge answers were cut off: the endpoint got to send a few MiB of its 64 MiB.
        for case in ("openai-huge", "anthropic-huge"):
            assert _first(servers[case].misbehaved_bytes) < HUGE_BYTES // 4, case
    finally:
        for server in servers.values():
            server.stop()


def test_a_healthy_answer_after_a_hang_is_read_by_the_next_call() -> None:
    with FakeLLMServer("openai") as server:
        server.script(Misbehave("hang"), Reply('{"proposals": []}'))
        route = Route("extract", Provider.OPENAI, "m", server.sdk_base_url, timeout=TIMEOUT)
        gateway = Gateway({"extract": route})
        with pytest.raises(LLMUnavailableError, match="did not answer within its 1 s"):
            gateway.complete("extract", "s", [Message("user", "hi")])
        assert gateway.complete("extract", "s", [Message("user", "hi")]) == '{"proposals": []}'


def _embed(embedder: OpenAICompatibleEmbedder) -> tuple[float, str]:
    started = time.monotonic()
    with pytest.raises(EmbeddingUnavailableError) as failed:
        embedder.embed(["the owner rides a blue bike"])
    return time.monotonic() - started, str(failed.value)


def test_a_misbehaving_embeddings_endpoint_fails_fast_and_clearly_then_recovers() -> None:
    modes = ("hang", "slow", "endless", "huge")
    servers = {mode: FakeEmbeddingServer(dimension=8) for mode in modes}
    try:
        embedders: dict[str, OpenAICompatibleEmbedder] = {}
        for mode, server in servers.items():
            server.__enter__()
            settings = EmbedSettings(
                model=server.model, base_url=server.base_url, timeout=TIMEOUT, max_retries=1
            )
            embedders[mode] = OpenAICompatibleEmbedder(settings)
            embedders[mode].embed(["a first answer warms the SDK up: the next call is timed"])
            server.misbehave = mode
        with ThreadPoolExecutor(len(modes)) as pool:
            outcomes = dict(zip(modes, pool.map(_embed, embedders.values()), strict=True))
        for mode, (elapsed, error) in outcomes.items():
            said = "answered more than" if mode == "huge" else "did not answer within its 1 s"
            assert error.startswith("the embeddings endpoint (model 'fake-embed' at http"), error
            assert said in error and error.endswith("; try again later"), (mode, error)
            assert elapsed < TIMEOUT + SLACK, (mode, elapsed)
            failing = embedders[mode].failing
            assert failing is not None and failing[1] == error
        assert _first(servers["huge"].misbehaved_bytes) < HUGE_BYTES // 4

        # The endpoint answers again: so does the embedder, and it no longer reports a failure.
        servers["hang"].misbehave = None
        vectors = embedders["hang"].embed(["the owner rides a blue bike"])
        assert vectors.shape == (1, 8)
        assert embedders["hang"].failing is None
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)


@pytest.mark.parametrize(
    ("tries", "status", "retry_after", "remaining", "wait"),
    [
        (1, None, None, 10.0, 0.5),  # a refused connection: back off
        (2, 503, None, 10.0, 1.0),  # doubling
        (3, 500, None, 10.0, None),  # out of retries (2)
        (1, 429, 3.0, 10.0, 3.0),  # the endpoint's Retry-After
        (1, 429, 30.0, 10.0, None),  # a wait past the deadline: give up now, not after it
        (1, 400, None, 10.0, None),  # a refusal is not worth repeating
        (1, 404, None, 10.0, None),
    ],
)
def test_retries_wait_as_asked_and_never_past_the_deadline(
    tries: int, status: int | None, retry_after: float | None, remaining: float, wait: Any
) -> None:
    assert retry_delay(tries, 2, status, retry_after, remaining) == wait
