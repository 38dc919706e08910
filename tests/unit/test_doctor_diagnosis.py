"""What ``doctor`` makes of an SDK's failure: the problem in words and the next step, with
Ollama's own commands when the endpoint is Ollama's port."""

from __future__ import annotations

import httpx2
import openai
import pytest

from memoryd.ops.doctor import diagnose
from memoryd.providers.llm import LLMUnavailableError

OLLAMA = "http://localhost:11434/v1"
OTHER = "http://gpu-box:8000/v1"


def failure(cause: Exception) -> LLMUnavailableError:
    """What the gateway raises: its own error, the SDK's behind it (``from None`` keeps it as
    the context)."""
    try:
        try:
            raise cause
        except Exception:
            raise LLMUnavailableError("the extract LLM route failed") from None
    except LLMUnavailableError as error:
        return error


# The SDK's errors carry its own HTTP client's (httpx2) requests and responses.
def status_error(code: int, url: str) -> openai.APIStatusError:
    request = httpx2.Request("POST", url + "/chat/completions")
    response = httpx2.Response(code, request=request, json={"error": {"message": "no"}})
    return openai.APIStatusError("no", response=response, body=None)


def connection_error(url: str) -> openai.APIConnectionError:
    return openai.APIConnectionError(request=httpx2.Request("POST", url))


def timeout_error(url: str) -> openai.APITimeoutError:
    return openai.APITimeoutError(request=httpx2.Request("POST", url))


@pytest.mark.parametrize(
    ("cause", "url", "key_source", "problem", "step"),
    [
        (connection_error(OLLAMA), OLLAMA, None, f"cannot reach {OLLAMA}",
         f"is Ollama running? Start it with `ollama serve` (tried {OLLAMA})"),
        (connection_error(OTHER), OTHER, None, f"cannot reach {OTHER}",
         f"is the server running? (tried {OTHER})"),
        (timeout_error(OTHER), OTHER, None, "no answer within 4 s",
         f"is the server up and the URL right? (tried {OTHER})"),
        (status_error(401, OTHER), OTHER, "MEMORYD_LLM_API_KEY",
         "the endpoint refused the API key (HTTP 401)", "check the key from MEMORYD_LLM_API_KEY"),
        (status_error(403, OTHER), OTHER, None, "the endpoint refused the API key (HTTP 403)",
         "check no key is set: set llm.api_key_file"),
        (status_error(404, OLLAMA), OLLAMA, None, "model 'qwen3:4b' not found (HTTP 404)",
         "`ollama list` shows the models; `ollama pull qwen3:4b` fetches it"),
        (status_error(429, OTHER), OTHER, None, "rate limited (HTTP 429)", "try again later"),
        (status_error(502, OTHER), OTHER, None, "the server failed (HTTP 502)",
         "see the server's log"),
    ],
    ids=["ollama-down", "down", "timeout", "401", "403", "ollama-404", "429", "502"],
)  # fmt: skip
def test_each_failure_gets_its_words_and_next_step(
    cause: Exception, url: str, key_source: str | None, problem: str, step: str
) -> None:
    found = diagnose(
        failure(cause),
        what="openai model 'qwen3:4b'",
        url=url,
        model="qwen3:4b",
        timeout=4.0,
        key_source=key_source,
        key_names="llm.api_key_file",
    )

    assert found.problem == problem
    assert found.next_step is not None and found.next_step.startswith(step), found.next_step
