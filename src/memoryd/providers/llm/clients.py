"""The two chat clients a route builds: any OpenAI-compatible endpoint through the ``openai`` SDK,
and Anthropic's Messages API through the ``anthropic`` SDK; each call within the route's
deadline, size cap and retries, and each failure said without the key."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from memoryd.providers.endpoint_calls import (
    ONE_MIB,
    DeadlineExceeded,
    EndpointLimitError,
    Limits,
    attempts_of,
    bounded_http_client,
    call_within,
)
from memoryd.providers.llm.types import (
    Answer,
    AnswerCutOffError,
    ChatClient,
    LLMConfigError,
    LLMUnavailableError,
    Message,
    Route,
    Structured,
)

# Why 1 MiB: an answer of 4,096 tokens is about 16 KB of JSON; anything near a megabyte is an
# endpoint gone wrong, and reading more would only grow the worker's memory.
MAX_ANSWER_BYTES = ONE_MIB

log = logging.getLogger("memoryd.providers.llm")
T = TypeVar("T")


# Anthropic's API needs a cap on every answer; this one is far above any batch of memories.
ANTHROPIC_MAX_TOKENS = 4096


class OpenAIChat:
    """Any OpenAI-compatible chat endpoint, through the official SDK (which retries timeouts,
    429 and 5xx with backoff)."""

    def __init__(self, route: Route) -> None:
        import openai

        self._route = route
        self._errors = openai
        self._limits = route_limits(route)
        # Local servers (Ollama, llama.cpp) need no key, but the SDK wants one.
        self._client = openai.OpenAI(**_sdk_options(route, route.api_key or "not-needed"))
        # auto becomes json_object for good once the endpoint refuses a schema.
        self.structured = route.structured

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str:
        """One chat completion; JSON mode where asked."""
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        try:
            return self._create(system, messages, extra)
        except self._errors.APIError as error:
            raise LLMUnavailableError(_describe_failure(self._route, error)) from None

    def complete_schema(
        self, system: str, messages: Sequence[Message], schema: Mapping[str, Any], name: str
    ) -> Answer:
        """One chat completion constrained to ``schema`` as far as the route allows."""
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": dict(schema)},
        }
        return schema_or_fallback(
            self,
            lambda: self._create(system, messages, {"response_format": response_format}),
            system,
            messages,
        )

    def _create(self, system: str, messages: Sequence[Message], extra: dict[str, Any]) -> str:
        payload: list[Any] = [{"role": "system", "content": system}]
        payload.extend({"role": m.role, "content": _openai_content(m)} for m in messages)
        response = _bounded(
            self._route,
            self._limits,
            lambda: self._client.chat.completions.create(
                model=self._route.model, messages=payload, **extra
            ),
        )
        content = response.choices[0].message.content if response.choices else None
        cut = bool(response.choices) and response.choices[0].finish_reason == "length"
        if cut and "response_format" in extra:
            raise AnswerCutOffError(content or "")
        return content or ""


class AnthropicChat:
    """Anthropic's Messages API through the official SDK (retries 429, 5xx and timeouts)."""

    def __init__(self, route: Route) -> None:
        import anthropic

        if not route.api_key:
            raise LLMConfigError(
                f"the {route.operation} route uses Anthropic but has no API key; set "
                f"MEMORYD_LLM_API_KEY (or MEMORYD_LLM_{route.operation.upper()}_API_KEY, or "
                "api_key_file in memoryd.toml)"
            )
        self._route = route
        self._errors = anthropic
        self._transform = anthropic.transform_schema
        self._limits = route_limits(route)
        self._client = anthropic.Anthropic(**_sdk_options(route, route.api_key))
        self.structured = route.structured

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str:
        """One message; for JSON the answer is primed with "{" (no JSON mode in this API)."""
        payload: list[Any] = [{"role": m.role, "content": _anthropic_content(m)} for m in messages]
        if json_mode:
            payload.append({"role": "assistant", "content": "{"})
        try:
            text = self._create(system, payload, {}, json_expected=json_mode)
        except self._errors.APIError as error:
            raise LLMUnavailableError(_describe_failure(self._route, error)) from None
        return "{" + text if json_mode and not text.lstrip().startswith("{") else text

    def complete_schema(
        self, system: str, messages: Sequence[Message], schema: Mapping[str, Any], name: str
    ) -> Answer:
        """One message constrained to ``schema`` (structured outputs, ``output_config``) as far
        as the route allows; else primed with "{" (json_object) or plain (off)."""

        def ask() -> str:
            payload = [{"role": m.role, "content": _anthropic_content(m)} for m in messages]
            output = {"format": {"type": "json_schema", "schema": self._transform(dict(schema))}}
            return self._create(system, payload, {"output_config": output})

        return schema_or_fallback(self, ask, system, messages)

    def _create(
        self, system: str, payload: list[Any], extra: dict[str, Any], json_expected: bool = True
    ) -> str:
        response = _bounded(
            self._route,
            self._limits,
            lambda: self._client.messages.create(
                model=self._route.model,
                max_tokens=ANTHROPIC_MAX_TOKENS,
                system=system,
                messages=payload,
                **extra,
            ),
        )
        text = "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        )
        if json_expected and response.stop_reason == "max_tokens":
            raise AnswerCutOffError(text, asked=ANTHROPIC_MAX_TOKENS)
        return text


def _sdk_options(route: Route, api_key: str) -> dict[str, Any]:
    """What either SDK's client is built with: the route's endpoint and timeout, no retries of
    its own (call_within retries, within the route's deadline) and a size-capped HTTP client."""
    return {
        "api_key": api_key,
        "base_url": route.base_url,
        "timeout": route.timeout,
        "max_retries": 0,
        "http_client": bounded_http_client(route_limits(route)),
    }


def route_limits(route: Route) -> Limits:
    """What one call on ``route`` may take: its timeout for the whole call, its retries, and
    :data:`MAX_ANSWER_BYTES`."""
    return Limits(
        f"the {route.operation} route", route.timeout, MAX_ANSWER_BYTES, route.max_retries
    )


def _bounded(route: Route, limits: Limits, call: Callable[[], T]) -> T:
    """``call()`` within the route's limits; running out of them is the route being
    unavailable (the job retries later)."""
    try:
        return call_within(limits, call)
    except DeadlineExceeded as error:
        raise LLMUnavailableError(f"{error}: {route.describe()}; {timeout_hint(route)}") from None
    except EndpointLimitError as error:
        raise LLMUnavailableError(f"{error}: {route.describe()}") from None


def timeout_hint(route: Route) -> str:
    """The setting that gives a slow model on ``route`` more time."""
    return (
        f"a slower model needs a longer timeout: `memoryd config set llm.{route.operation}.timeout "
        f"{max(route.timeout * 4, 120):g}` (or llm.timeout for every route)"
    )


def _openai_content(message: Message) -> Any:
    if not message.images:
        return message.content
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    for image in message.images:
        url = "data:image/png;base64," + base64.b64encode(image).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _anthropic_content(message: Message) -> Any:
    if not message.images:
        return message.content
    parts: list[dict[str, Any]] = [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(image).decode("ascii"),
            },
        }
        for image in message.images
    ]
    parts.append({"type": "text", "text": message.content})
    return parts


# What an endpoint that does not take a JSON Schema says when refusing one (OpenAI-compatible
# servers name response_format or json_schema; Anthropic names output_config or format).
_REFUSAL_WORDS = ("response_format", "json_schema", "schema", "output_config", "format")


def _refuses_schema(error: Exception) -> bool:
    """Whether a failed request was refused because of its JSON Schema request."""
    if getattr(error, "status_code", None) not in (400, 422):
        return False
    said = (str(getattr(error, "message", "")) + json.dumps(getattr(error, "body", None))).lower()
    return any(word in said for word in _REFUSAL_WORDS)


def _after_refusal(route: Route, structured: Structured, error: Exception) -> Structured:
    """The mode after a schema request failed: json_object when the route is ``auto`` and the
    endpoint refused the schema (logged once: the client keeps the mode); otherwise the error
    the job must see."""
    if not _refuses_schema(error):
        raise LLMUnavailableError(_describe_failure(route, error)) from None
    status = getattr(error, "status_code", None)
    refused = (
        f"the {route.operation} route's endpoint refused a JSON Schema answer format (HTTP "
        f"{status}): {route.describe()}"
    )
    if structured is Structured.JSON_SCHEMA:
        raise LLMConfigError(
            f'{refused}; set structured = "auto" or "json_object" for this route '
            f"(MEMORYD_LLM_{route.operation.upper()}_STRUCTURED, or [llm] in memoryd.toml)"
        ) from None
    log.warning("%s; asking for plain JSON mode on this route from now on", refused)
    return Structured.JSON_OBJECT


class _RouteClient(Protocol):
    """What :func:`schema_or_fallback` needs of a built-in client."""

    structured: Structured

    @property
    def _route(self) -> Route: ...

    @property
    def _errors(self) -> Any: ...

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str: ...


def schema_or_fallback(
    client: _RouteClient, ask: Callable[[], str], system: str, messages: Sequence[Message]
) -> Answer:
    """``ask()`` (the request with the answer's JSON Schema) while the client's mode allows
    one; after the endpoint refuses it (:func:`_after_refusal`), or when the route says so, the
    answer without a schema."""
    if client.structured in (Structured.AUTO, Structured.JSON_SCHEMA):
        try:
            return Answer(ask(), Structured.JSON_SCHEMA.value)
        except AnswerCutOffError as cut:
            cut.structured = Structured.JSON_SCHEMA.value
            raise
        except client._errors.APIError as error:
            client.structured = _after_refusal(client._route, client.structured, error)
    return unconstrained(client, client.structured, system, messages)


def unconstrained(
    client: ChatClient, structured: Structured, system: str, messages: Sequence[Message]
) -> Answer:
    """The answer without a schema: JSON mode, or nothing but the prompt when ``off``."""
    if structured is Structured.OFF:
        return Answer(client.complete(system, messages, json_mode=False), Structured.OFF.value)
    try:
        text = client.complete(system, messages, json_mode=True)
    except AnswerCutOffError as cut:
        cut.structured = Structured.JSON_OBJECT.value
        raise
    return Answer(text, Structured.JSON_OBJECT.value)


def _describe_failure(route: Route, error: Exception) -> str:
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    detail = f"HTTP {status}" if status else kind
    attempts = attempts_of(error)
    tried = "once" if attempts == 1 else f"{attempts} times"
    # Why not str(error): provider messages can echo request details; ours never hold the key.
    if "Connection" in kind and "Timeout" not in kind:
        # Refused at once, not a slow answer: the timeout says nothing; where to look does.
        url = route.base_url or "the provider's endpoint"
        return (
            f"the {route.operation} LLM route cannot reach {url} (tried {tried}): "
            f"{unreachable_hint(url)}; {route.describe()}"
        )
    said = (
        f"the {route.operation} LLM route failed ({detail}; tried {tried} within its "
        f"{route.timeout:g} s timeout): {route.describe()}"
    )
    return f"{said}; {timeout_hint(route)}" if "Timeout" in kind else said


OLLAMA_PORT = 11434


def unreachable_hint(url: str) -> str:
    """What to check when nothing answers at ``url`` (Ollama named when it is its port)."""
    if urlsplit(url).port == OLLAMA_PORT:
        return f"is Ollama running? Start it with `ollama serve` (tried {url})"
    return f"is the server running? (tried {url})"
