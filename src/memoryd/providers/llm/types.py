"""What an LLM route is and what passes through it: the providers and answer formats, a route's
settings, messages and answers, the client seam, and the two errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from memoryd.errors import MemorydError, ProposalBatchError

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3


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


class AnswerCutOffError(ProposalBatchError):
    """A JSON answer the model stopped at its output token limit: incomplete, whatever it
    holds. Counts as a broken contract (one retry), with a message that names the limit
    rather than the JSON error the cut left behind."""

    def __init__(self, text: str, structured: str | None = None, *, asked: int = 0) -> None:
        # ``asked``: the cap memoryd itself sent (Anthropic's max_tokens), not the server's.
        remedy = (
            f"memoryd asks for at most {asked} tokens, which should hold any turn's memories: "
            "a model that answers more briefly fits"
            if asked
            else "raise the endpoint's limit on generated tokens (llama.cpp --n-predict, "
            "Ollama num_predict) or use a model that answers more briefly"
        )
        super().__init__(
            f"the model's answer was cut off at its output token limit after {len(text)} "
            f"characters; {remedy}"
        )
        self.text = text
        self.structured = structured
