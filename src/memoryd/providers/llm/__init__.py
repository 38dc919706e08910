"""The LLM routes and clients: one route per operation (extract, merge, reflect, caption), each
with its own provider, model, endpoint, key and timeout. Providers: any OpenAI-compatible chat
endpoint (Ollama, llama.cpp server, vLLM, LM Studio, OpenAI, …) through the official ``openai``
SDK, and Anthropic's Messages API through the official ``anthropic`` SDK.

Keys are read from the environment or a file and never appear in reprs, logs or errors.

``types`` says what a route and a message are, ``routes`` reads the routes from the settings,
``clients`` speaks to the two APIs, and ``gateway`` holds the routes and builds each client on
first use; callers name what they use from here (the clients' protocols and limits, which only
this package uses, from ``types`` and ``clients``).
"""

from __future__ import annotations

from memoryd.config.settings import OPERATIONS
from memoryd.providers.llm.clients import AnthropicChat, OpenAIChat
from memoryd.providers.llm.gateway import Gateway, off_notice
from memoryd.providers.llm.routes import (
    chat_route,
    load_routes,
    route_key_setting,
    route_setting,
    routes_of,
)
from memoryd.providers.llm.types import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    AnswerCutOffError,
    LLMConfigError,
    LLMUnavailableError,
    Message,
    Provider,
    Route,
    Structured,
)

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "OPERATIONS",
    "AnswerCutOffError",
    "AnthropicChat",
    "Gateway",
    "LLMConfigError",
    "LLMUnavailableError",
    "Message",
    "OpenAIChat",
    "Provider",
    "Route",
    "Structured",
    "chat_route",
    "load_routes",
    "off_notice",
    "route_key_setting",
    "route_setting",
    "routes_of",
]
