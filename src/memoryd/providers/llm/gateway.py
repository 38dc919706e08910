"""The LLM gateway: the routes per operation, and each route's client built on first use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memoryd.config.settings import CONFIG_FILE
from memoryd.providers.llm.clients import AnthropicChat, OpenAIChat, unconstrained
from memoryd.providers.llm.types import (
    Answer,
    ChatClient,
    LLMUnavailableError,
    Message,
    Provider,
    Route,
    SchemaChatClient,
    Structured,
)


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
        return unconstrained(client, Structured.JSON_OBJECT, system, messages)

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
