"""The LLM gateway: one route per operation (extract, merge, reflect, caption), each with its own
provider, model, endpoint, key and timeout. Providers: any OpenAI-compatible chat endpoint
(Ollama, llama.cpp server, vLLM, LM Studio, OpenAI, …) through the official ``openai`` SDK,
and Anthropic's Messages API through the official ``anthropic`` SDK.

Keys are read from the environment or a file and never appear in reprs, logs or errors.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

from memoryd.config.settings import (
    CHAT_ROUTE,
    CONFIG_FILE,
    LLM_FIELDS,
    Setting,
    SettingValues,
    api_key_of,
    key_source,
    setting_values,
)
from memoryd.config.settings import OPERATIONS as OPERATIONS
from memoryd.errors import MemorydError
from memoryd.providers.endpoint_calls import (
    ONE_MIB,
    EndpointLimitError,
    Limits,
    attempts_of,
    bounded_http_client,
    call_within,
)

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
# Why 1 MiB: an answer of 4,096 tokens is about 16 KB of JSON; anything near a megabyte is an
# endpoint gone wrong, and reading more would only grow the worker's memory.
MAX_ANSWER_BYTES = ONE_MIB
SETTINGS = LLM_FIELDS

log = logging.getLogger("memoryd.providers.llm")
T = TypeVar("T")


class Provider(StrEnum):
    """Wire formats memoryd speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


class Structured(StrEnum):
    """How a route asks for JSON answers (the ``structured`` setting).

    ``json_schema`` sends the answer's JSON Schema (OpenAI structured outputs, llama.cpp,
    Ollama, vLLM; Anthropic's ``output_config``); ``json_object`` asks for any JSON (JSON mode;
    on Anthropic the answer is primed with "{"); ``off`` only asks in the prompt; ``auto`` tries
    ``json_schema`` and falls back to ``json_object`` for good when the endpoint refuses it.
    """

    AUTO = "auto"
    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    OFF = "off"


class LLMUnavailableError(MemorydError):
    """The route is not configured, or the provider failed after its retries."""


class LLMConfigError(MemorydError):
    """The LLM configuration is malformed."""


@dataclass(frozen=True)
class Route:
    """How to reach the model for one operation."""

    operation: str
    provider: Provider
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_RETRIES
    structured: Structured = Structured.AUTO
    # Where the key came from, in words (never the key): "MEMORYD_LLM_API_KEY", "the file
    # ~/.keys/llm (llm.api_key_file in /…/memoryd.toml)"; None without a key.
    key_source: str | None = field(default=None, compare=False)
    # The model came from the default route (llm.model), not from this operation's own
    # setting: for captions that means nobody chose a model that reads images.
    inherited_model: bool = field(default=False, compare=False)

    def describe(self) -> str:
        """A one-line description without the key."""
        where = self.base_url or "the provider's default endpoint"
        return f"{self.operation}: {self.provider.value} model {self.model!r} at {where}"


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str  # "user" or "assistant"
    content: str
    # PNG images shown with the text (the caption route's vision models read them).
    images: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Answer:
    """A JSON answer and how it was constrained (a :class:`Structured` value other than auto)."""

    text: str
    structured: str


class ChatClient(Protocol):
    """The one-method seam the gateway calls; tests may pass their own."""

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str:
        """The assistant's text answer."""
        ...


@runtime_checkable
class SchemaChatClient(ChatClient, Protocol):
    """A client that can also constrain the answer to a JSON Schema (the built-in ones)."""

    def complete_schema(
        self, system: str, messages: Sequence[Message], schema: Mapping[str, Any], name: str
    ) -> Answer:
        """The answer, as constrained as the route's ``structured`` setting allows; ``name``
        names the schema where the wire format wants one."""
        ...


def routes_of(settings: SettingValues) -> dict[str, Route]:
    """Routes per operation from the resolved settings.

    An operation's value comes from ``llm.<operation>.<setting>`` (``[llm.<operation>]`` in
    memoryd.toml, ``MEMORYD_LLM_<OPERATION>_<SETTING>``), else from the default route
    ``llm.<setting>`` (``[llm]``, ``MEMORYD_LLM_<SETTING>``); at each level the environment
    beats the file. Operations without a provider and a model are absent (off).
    """
    routes: dict[str, Route] = {}
    for operation in OPERATIONS:
        route = _route_of(settings, operation)
        if route is not None:
            own = settings.setting(f"llm.{operation}.model") is not None
            routes[operation] = replace(route, inherited_model=not own)
    return routes


def chat_route(settings: SettingValues) -> Route | None:
    """The chat proxy's upstream: ``llm.chat.<setting>`` (``[llm.chat]``), else the default
    route's ``llm.<setting>``, as for an operation; None without a provider and a model."""
    return _route_of(settings, CHAT_ROUTE)


def _route_of(settings: SettingValues, operation: str) -> Route | None:
    values: dict[str, Any] = {}
    for name in ("provider", "base_url", "model", "timeout", "max_retries", "structured"):
        found = route_setting(settings, operation, name)
        if found is not None:
            values[name] = found.value
    key = route_key_setting(settings, operation)
    if key is not None:
        values[key.key.rpartition(".")[2]] = key.value
    return _route(operation, values, key_source(key))


def route_setting(settings: SettingValues, operation: str, name: str) -> Setting | None:
    """The value an operation's route takes for ``name``: its own, else the default route's."""
    return settings.setting(f"llm.{operation}.{name}") or settings.setting(f"llm.{name}")


def route_key_setting(settings: SettingValues, operation: str) -> Setting | None:
    """Where an operation's key comes from: ``api_key`` or ``api_key_file`` of the most
    specific level that sets either; within a level the environment beats the file, and a key
    beats a key file from the same place."""
    for level in (f"llm.{operation}", "llm"):
        given = [
            found
            for found in (
                settings.setting(f"{level}.api_key"),
                settings.setting(f"{level}.api_key_file"),
            )
            if found is not None
        ]
        if given:
            return min(given, key=lambda found: found.origin)
    return None


def load_routes(home: Path, environ: Mapping[str, str] | None = None) -> dict[str, Route]:
    """The routes of the settings under ``home`` with ``environ`` (default: this process's):
    :func:`routes_of` for scripts and tests that have no resolved settings at hand."""
    env = dict(os.environ if environ is None else environ)
    env["MEMORYD_HOME"] = str(home)
    return routes_of(setting_values(env))


def _route(operation: str, values: Mapping[str, Any], key_from: str | None) -> Route | None:
    if not values.get("provider") and not values.get("model"):
        return None
    try:
        provider = Provider(str(values.get("provider", "openai")).lower())
    except ValueError:
        raise LLMConfigError(
            f"LLM provider {values.get('provider')!r} for {operation} is unknown; use "
            "'openai' (any OpenAI-compatible endpoint) or 'anthropic'"
        ) from None
    model = values.get("model")
    if not model:
        raise LLMConfigError(
            f"the {operation} route has a provider but no model; set MEMORYD_LLM_MODEL or "
            f"MEMORYD_LLM_{operation.upper()}_MODEL, or `memoryd config set llm.model NAME`"
        )
    api_key = api_key_of(values, LLMConfigError, operation)
    try:
        timeout = float(values.get("timeout", DEFAULT_TIMEOUT))
        retries = int(values.get("max_retries", DEFAULT_RETRIES))
    except (TypeError, ValueError):
        raise LLMConfigError(
            f"the {operation} route's timeout and max_retries must be numbers"
        ) from None
    try:
        structured = Structured(str(values.get("structured", "auto")).strip().lower())
    except ValueError:
        raise LLMConfigError(
            f"structured = {values.get('structured')!r} for the {operation} route is unknown; use "
            "auto, json_schema, json_object or off"
        ) from None
    return Route(
        operation=operation,
        provider=provider,
        model=str(model),
        base_url=str(values["base_url"]) if values.get("base_url") else None,
        api_key=str(api_key) if api_key else None,
        timeout=timeout,
        max_retries=max(0, retries),
        structured=structured,
        key_source=key_from if api_key else None,
    )


class OpenAIChat:
    """Any OpenAI-compatible chat endpoint, through the official SDK (which retries timeouts,
    429 and 5xx with backoff)."""

    def __init__(self, route: Route) -> None:
        import openai

        self._route = route
        self._errors = openai
        self._limits = route_limits(route)
        self._client = openai.OpenAI(
            # Local servers (Ollama, llama.cpp) need no key, but the SDK wants one.
            api_key=route.api_key or "not-needed",
            base_url=route.base_url,
            timeout=route.timeout,
            max_retries=0,  # call_within retries, within the route's deadline
            http_client=bounded_http_client(self._limits),
        )
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
        if self.structured in (Structured.AUTO, Structured.JSON_SCHEMA):
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": dict(schema)},
            }
            try:
                text = self._create(system, messages, {"response_format": response_format})
                return Answer(text, Structured.JSON_SCHEMA.value)
            except self._errors.APIError as error:
                self.structured = _after_refusal(self._route, self.structured, error)
        return _unconstrained(self, self.structured, system, messages)

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
        self._client = anthropic.Anthropic(
            api_key=route.api_key,
            base_url=route.base_url,
            timeout=route.timeout,
            max_retries=0,  # call_within retries, within the route's deadline
            http_client=bounded_http_client(self._limits),
        )
        self.structured = route.structured

    def complete(self, system: str, messages: Sequence[Message], *, json_mode: bool) -> str:
        """One message; for JSON the answer is primed with "{" (no JSON mode in this API)."""
        payload: list[Any] = [{"role": m.role, "content": _anthropic_content(m)} for m in messages]
        if json_mode:
            payload.append({"role": "assistant", "content": "{"})
        try:
            text = self._create(system, payload, {})
        except self._errors.APIError as error:
            raise LLMUnavailableError(_describe_failure(self._route, error)) from None
        return "{" + text if json_mode and not text.lstrip().startswith("{") else text

    def complete_schema(
        self, system: str, messages: Sequence[Message], schema: Mapping[str, Any], name: str
    ) -> Answer:
        """One message constrained to ``schema`` (structured outputs, ``output_config``) as far
        as the route allows; else primed with "{" (json_object) or plain (off)."""
        if self.structured in (Structured.AUTO, Structured.JSON_SCHEMA):
            payload = [{"role": m.role, "content": _anthropic_content(m)} for m in messages]
            output = {"format": {"type": "json_schema", "schema": self._transform(dict(schema))}}
            try:
                text = self._create(system, payload, {"output_config": output})
                return Answer(text, Structured.JSON_SCHEMA.value)
            except self._errors.APIError as error:
                self.structured = _after_refusal(self._route, self.structured, error)
        return _unconstrained(self, self.structured, system, messages)

    def _create(self, system: str, payload: list[Any], extra: dict[str, Any]) -> str:
        response = _bounded(
            self._route,
            self._limits,
            lambda: self._client.messages.create(
                model=self._route.model, max_tokens=4096, system=system, messages=payload, **extra
            ),
        )
        return "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        )


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
    except EndpointLimitError as error:
        raise LLMUnavailableError(f"{error}: {route.describe()}") from None


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


def _unconstrained(
    client: ChatClient, structured: Structured, system: str, messages: Sequence[Message]
) -> Answer:
    """The answer without a schema: JSON mode, or nothing but the prompt when ``off``."""
    if structured is Structured.OFF:
        return Answer(client.complete(system, messages, json_mode=False), Structured.OFF.value)
    text = client.complete(system, messages, json_mode=True)
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
    return (
        f"the {route.operation} LLM route failed ({detail}; tried {tried} within its "
        f"{route.timeout:g} s timeout): {route.describe()}"
    )


OLLAMA_PORT = 11434


def unreachable_hint(url: str) -> str:
    """What to check when nothing answers at ``url`` (Ollama named when it is its port)."""
    if urlsplit(url).port == OLLAMA_PORT:
        return f"is Ollama running? Start it with `ollama serve` (tried {url})"
    return f"is the server running? (tried {url})"


class Gateway:
    """Routes per operation; builds each provider client on first use."""

    def __init__(
        self, routes: Mapping[str, Route], clients: Mapping[str, ChatClient] | None = None
    ) -> None:
        self.routes = dict(routes)
        self._clients: dict[str, ChatClient] = dict(clients or {})

    def configured(self, operation: str) -> bool:
        """Whether an operation has a route."""
        return operation in self.routes or operation in self._clients

    def route(self, operation: str) -> Route:
        """The route of an operation, or a clear error saying how to configure one."""
        if operation not in self.routes:
            raise LLMUnavailableError(off_notice(operation))
        return self.routes[operation]

    def complete(
        self, operation: str, system: str, messages: Sequence[Message], *, json_mode: bool = True
    ) -> str:
        """Ask the operation's model."""
        client = self._client(operation)
        return client.complete(system, messages, json_mode=json_mode)

    def complete_json(
        self,
        operation: str,
        system: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any],
        name: str = "answer",
    ) -> Answer:
        """Ask the operation's model for JSON following ``schema``, as constrained as the
        route's ``structured`` setting and its endpoint allow; the answer says how."""
        client = self._client(operation)
        if isinstance(client, SchemaChatClient):
            return client.complete_schema(system, messages, schema, name)
        return _unconstrained(client, Structured.JSON_OBJECT, system, messages)

    def _client(self, operation: str) -> ChatClient:
        """The operation's client, built on first use and kept (with what it learnt about
        its endpoint) for the life of the gateway."""
        client = self._clients.get(operation)
        if client is None:
            route = self.route(operation)
            client = (
                AnthropicChat(route) if route.provider is Provider.ANTHROPIC else OpenAIChat(route)
            )
            self._clients[operation] = client
        return client


def off_notice(operation: str) -> str:
    """What to tell the owner when an operation has no LLM."""
    return (
        f"{operation} is off: no LLM is configured. Turn it on for every memoryd process with "
        "`memoryd config set llm.model NAME` (and llm.base_url, llm.provider openai | "
        f"anthropic, llm.api_key_file), which writes $MEMORYD_HOME/{CONFIG_FILE}, or with "
        "MEMORYD_LLM_PROVIDER, MEMORYD_LLM_MODEL, MEMORYD_LLM_BASE_URL and MEMORYD_LLM_API_KEY; "
        "remember, recall, review and the knowledge base work without it"
    )
