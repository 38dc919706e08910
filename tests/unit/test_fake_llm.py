"""Self-test of tests/fake_llm.py, driven through the real openai and anthropic SDKs."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.fake_llm import Delay, FakeLLMServer, Hang, Recorded, Reply, Status, error_body

MESSAGES: list[Any] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def oa_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as server:
        yield server


@pytest.fixture
def an_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("anthropic") as server:
        yield server


def oa_client(server: FakeLLMServer, timeout: float = 10.0, key: str = "test-key") -> Any:
    return openai.OpenAI(
        base_url=server.base_url + "/v1", api_key=key, max_retries=0, timeout=timeout
    )


def an_client(server: FakeLLMServer, timeout: float = 10.0, key: str = "test-key") -> Any:
    return anthropic.Anthropic(
        base_url=server.base_url, api_key=key, max_retries=0, timeout=timeout
    )


def oa_call(client: Any) -> str:
    result = client.chat.completions.create(
        model="m", messages=MESSAGES, response_format={"type": "json_object"}
    )
    return str(result.choices[0].message.content)


def an_call(client: Any) -> str:
    result = client.messages.create(model="m", max_tokens=100, messages=MESSAGES)
    return str(result.content[0].text)


# -- openai ------------------------------------------------------------------------------------


def test_openai_reply_and_recording(oa_server: FakeLLMServer) -> None:
    oa_server.script(Reply('{"answer": 42}'), Reply("second", truncated=True))
    with oa_client(oa_server) as client:
        result = client.chat.completions.create(
            model="m", messages=MESSAGES, response_format={"type": "json_object"}
        )
        assert result.choices[0].message.content == '{"answer": 42}'
        assert result.choices[0].finish_reason == "stop"
        assert result.model == "m"
        assert result.object == "chat.completion"
        assert result.usage is not None and result.usage.total_tokens > 0
        second = client.chat.completions.create(model="m", messages=MESSAGES)
        assert second.choices[0].message.content == "second"
        assert second.choices[0].finish_reason == "length"
    assert oa_server.request_count == 2
    first = oa_server.requests[0]
    assert isinstance(first, Recorded)
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer test-key"
    assert first.api_key == "test-key"
    assert first.body["response_format"] == {"type": "json_object"}
    assert first.body["messages"] == MESSAGES
    assert oa_server.last_body()["model"] == "m"
    assert oa_server.remaining == 0


def test_openai_models_list(oa_server: FakeLLMServer) -> None:
    with oa_client(oa_server) as client:
        assert [m.id for m in client.models.list()] == ["fake-model"]
    assert oa_server.last_request().method == "GET"


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (Status(500), openai.InternalServerError),
        (Status(429), openai.RateLimitError),
        (Status(400), openai.BadRequestError),
        (Status(404), openai.NotFoundError),
    ],
)
def test_openai_status_errors(
    oa_server: FakeLLMServer, step: Status, error: type[Exception]
) -> None:
    oa_server.script(step)
    with oa_client(oa_server) as client, pytest.raises(error) as caught:
        oa_call(client)
    assert caught.value.status_code == step.code  # type: ignore[attr-defined]
    assert caught.value.body == error_body("openai", step.code)["error"]  # type: ignore[attr-defined]


def test_openai_429_carries_retry_after_and_default_is_503(oa_server: FakeLLMServer) -> None:
    oa_server.script(Status(429))
    with oa_client(oa_server) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            oa_call(client)
        assert caught.value.response.headers["retry-after"] == "0"
        assert caught.value.code == "rate_limit_exceeded"
        with pytest.raises(openai.InternalServerError) as default:
            oa_call(client)  # script empty: default Status(503)
        assert default.value.status_code == 503


def test_openai_timeout_then_recovers(oa_server: FakeLLMServer) -> None:
    oa_server.script(Delay(5.0, then=Reply("too late")), Reply("on time"))
    with oa_client(oa_server, timeout=0.5) as client:
        with pytest.raises(openai.APITimeoutError):
            oa_call(client)
        assert oa_call(client) == "on time"


def test_openai_down_and_up(oa_server: FakeLLMServer) -> None:
    port = oa_server.port
    oa_server.script(Reply("back"))
    with oa_client(oa_server) as client:
        oa_server.down()
        assert not oa_server.is_up
        with pytest.raises(openai.APIConnectionError) as caught:
            oa_call(client)
        assert not isinstance(caught.value, openai.APITimeoutError)
        oa_server.up()
        assert oa_server.port == port
        assert oa_call(client) == "back"
    assert oa_server.request_count == 1


def test_openai_hang_drops_connection(oa_server: FakeLLMServer) -> None:
    oa_server.script(Hang(0.2))
    with oa_client(oa_server) as client, pytest.raises(openai.APIConnectionError):
        oa_call(client)


def test_openai_api_key_enforced() -> None:
    with FakeLLMServer("openai", api_key="right") as server:
        server.script(Reply("ok"))
        with oa_client(server, key="wrong") as client, pytest.raises(openai.AuthenticationError):
            oa_call(client)
        with oa_client(server, key="right") as client:
            assert oa_call(client) == "ok"


# -- anthropic ---------------------------------------------------------------------------------


def test_anthropic_reply_and_recording(an_server: FakeLLMServer) -> None:
    an_server.script(Reply("bonjour", input_tokens=7, output_tokens=3))
    with an_client(an_server) as client:
        result = client.messages.create(model="m", max_tokens=100, messages=MESSAGES)
    assert result.content[0].text == "bonjour"
    assert result.type == "message"
    assert result.role == "assistant"
    assert result.stop_reason == "end_turn"
    assert result.stop_sequence is None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (7, 3)
    rec = an_server.last_request()
    assert rec.path == "/v1/messages"
    # anthropic 2.14 sends api_key as "Authorization: Bearer"; older SDKs used x-api-key.
    assert "test-key" in (rec.headers.get("x-api-key"), rec.headers.get("authorization", "")[7:])
    assert rec.api_key == "test-key"
    assert "anthropic-version" in rec.headers
    assert rec.body == {"model": "m", "max_tokens": 100, "messages": MESSAGES}


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (Status(500), anthropic.InternalServerError),
        (Status(429), anthropic.RateLimitError),
        (Status(400), anthropic.BadRequestError),
        (Status(529), anthropic.InternalServerError),
    ],
)
def test_anthropic_status_errors(
    an_server: FakeLLMServer, step: Status, error: type[Exception]
) -> None:
    an_server.script(step)
    with an_client(an_server) as client, pytest.raises(error) as caught:
        an_call(client)
    assert caught.value.status_code == step.code  # type: ignore[attr-defined]
    assert caught.value.body == error_body("anthropic", step.code)  # type: ignore[attr-defined]
    assert caught.value.body["type"] == "error"  # type: ignore[attr-defined]


def test_anthropic_timeout_down_up(an_server: FakeLLMServer) -> None:
    an_server.script(Delay(5.0, then=Reply("late")), Reply("after timeout"), Reply("after up"))
    with an_client(an_server, timeout=0.5) as client:
        with pytest.raises(anthropic.APITimeoutError):
            an_call(client)
        assert an_call(client) == "after timeout"
        an_server.down()
        with pytest.raises(anthropic.APIConnectionError) as caught:
            an_call(client)
        assert not isinstance(caught.value, anthropic.APITimeoutError)
        an_server.up()
        assert an_call(client) == "after up"


def test_anthropic_models_and_custom_error_body(an_server: FakeLLMServer) -> None:
    an_server.script(Status(503, body="<html>bad gateway</html>"))
    with an_client(an_server) as client:
        assert [m.id for m in client.models.list()] == ["fake-model"]
        with pytest.raises(anthropic.InternalServerError) as caught:
            an_call(client)
        assert "bad gateway" in caught.value.response.text


# -- generic behaviour -------------------------------------------------------------------------


def test_responder_unknown_path_and_validation(oa_server: FakeLLMServer) -> None:
    oa_server.script(lambda rec: Reply("echo " + rec.body["messages"][0]["content"]))
    with oa_client(oa_server) as client:
        assert oa_call(client) == "echo hello"

    def post(path: str, payload: Any) -> tuple[int, Any]:
        request = urllib.request.Request(
            oa_server.base_url + path,
            data=json.dumps(payload).encode(),
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    assert post("/v1/nowhere", {})[0] == 404
    code, body = post("/v1/chat/completions", {"model": "m", "messages": []})
    assert code == 400
    assert body["error"]["type"] == "invalid_request_error"
    assert oa_server.request_count == 3


def test_concurrent_requests_are_all_recorded(oa_server: FakeLLMServer) -> None:
    oa_server.script(*(Reply(f"r{i}") for i in range(6)))
    answers: list[str] = []
    with oa_client(oa_server) as client:
        threads = [
            threading.Thread(target=lambda: answers.append(oa_call(client))) for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    assert sorted(answers) == [f"r{i}" for i in range(6)]
    assert len(oa_server.wait_for_requests(6, timeout=1)) == 6


def test_bad_step_and_flavor_rejected() -> None:
    with pytest.raises(ValueError):
        FakeLLMServer("gemini")  # type: ignore[arg-type]
    with FakeLLMServer() as server, pytest.raises(TypeError):
        server.script("not a step")  # type: ignore[arg-type]


def test_anthropic_api_key_enforced() -> None:
    with FakeLLMServer("anthropic", api_key="right") as server:
        server.script(Reply("ok"))
        with an_client(server, key="wrong") as client, pytest.raises(anthropic.AuthenticationError):
            an_call(client)
        with an_client(server, key="right") as client:
            assert an_call(client) == "ok"
