"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, llama.cpp,
vLLM, Text Embeddings Inference, hosted APIs), and where the owner says which embedder to use.

Configuration, like the LLM routes': ``embed.<setting>`` in the resolved settings (``[embed]``
in ``$MEMORYD_HOME/memoryd.toml``, ``MEMORYD_EMBED_<SETTING>`` in the environment, which wins).
Without a model, memoryd embeds locally with MiniLM. The API key comes from the environment or
a file, never the store.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.config.settings import (
    EMBED_FIELDS,
    Setting,
    SettingValues,
    api_key_of,
    key_source,
    parse_value,
    setting_values,
)
from memoryd.errors import EmbeddingUnavailableError, InvalidInputError
from memoryd.providers.endpoint_calls import (
    ONE_MIB,
    EndpointLimitError,
    Limits,
    bounded_http_client,
    call_within,
)

if TYPE_CHECKING:
    from memoryd.providers.embedder import Embedder, Matrix

SETTINGS = EMBED_FIELDS
DEFAULT_BATCH = 64
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 2
# Room for 8,192 dimensions a text as JSON floats (about 25 characters each), so any real
# model's answer fits and a runaway one stops at a few megabytes.
ANSWER_BYTES_PER_TEXT = 8192 * 25


class EmbedConfigError(InvalidInputError):
    """The embedder's settings are incomplete or malformed."""


@dataclass(frozen=True)
class EmbedSettings:
    """How to reach an OpenAI-compatible embeddings endpoint."""

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    dimensions: int | None = None
    batch_size: int = DEFAULT_BATCH
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_RETRIES
    # Where the key came from, in words (never the key); None without a key.
    key_source: str | None = field(default=None, compare=False)

    def describe(self) -> str:
        """A one-line description without the key."""
        where = self.base_url or "the provider's default endpoint"
        size = f", {self.dimensions} dimensions" if self.dimensions else ""
        return f"embeddings: model {self.model!r} at {where}{size}"


def embed_settings_of(settings: SettingValues) -> EmbedSettings | None:
    """The configured endpoint (``embed.*`` in the resolved settings), or None for the local
    MiniLM default."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        found = settings.setting(f"embed.{setting}")
        if found is not None:
            values[setting] = found.value
    values.pop("api_key", None)
    values.pop("api_key_file", None)
    key = embed_key_setting(settings)
    if key is not None:
        values[key.key.rpartition(".")[2]] = key.value
    provider = str(values.get("provider", "openai" if values.get("model") else "local")).lower()
    if provider == "local":
        return None
    if provider != "openai":
        raise EmbedConfigError(
            f"embedding provider {provider!r} is unknown; use 'local' (MiniLM, the default) or "
            "'openai' (any OpenAI-compatible /v1/embeddings endpoint)"
        )
    model = values.get("model")
    if not model:
        raise EmbedConfigError(
            "the embeddings endpoint has no model; set MEMORYD_EMBED_MODEL (or "
            "`memoryd config set embed.model NAME`), e.g. nomic-embed-text"
        )
    api_key = api_key_of(values, EmbedConfigError, "the embeddings endpoint")
    return EmbedSettings(
        model=str(model),
        base_url=str(values["base_url"]) if values.get("base_url") else None,
        api_key=api_key,
        dimensions=_number(values, "dimensions", int, None),
        batch_size=max(1, _number(values, "batch_size", int, DEFAULT_BATCH) or DEFAULT_BATCH),
        timeout=_number(values, "timeout", float, DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT,
        max_retries=max(0, _number(values, "max_retries", int, DEFAULT_RETRIES) or 0),
        key_source=key_source(key) if api_key else None,
    )


def embed_key_setting(settings: SettingValues) -> Setting | None:
    """Where the endpoint's key comes from: ``embed.api_key`` or ``embed.api_key_file``, the
    environment over the file, a key over a key file from the same place."""
    given = [
        found
        for found in (settings.setting("embed.api_key"), settings.setting("embed.api_key_file"))
        if found is not None
    ]
    return min(given, key=lambda found: found.origin) if given else None


def embedder_of(settings: SettingValues) -> Embedder:
    """The embedder the settings name: an endpoint, or the local MiniLM (its queries embedded
    with integer products, the model kept in ``models/`` of memoryd's home, where
    ``embed.int8_queries`` is on: by default, on a CPU with VNNI)."""
    found = embed_settings_of(settings)
    if found is None:
        from memoryd.providers.embedder import LocalMiniLM
        from memoryd.providers.query_model import int8_queries_by_default

        switch = settings.setting("embed.int8_queries")
        int8 = (
            int8_queries_by_default()
            if switch is None
            else parse_value(switch.key, switch.value, switch.source())
        )
        return LocalMiniLM(query_models=settings.home / "models" if int8 else None)
    return OpenAICompatibleEmbedder(found)


def configured_embedder(home: Path, environ: Mapping[str, str] | None = None) -> Embedder:
    """:func:`embedder_of` for the settings under ``home`` with ``environ``."""
    return embedder_of(_values_at(home, environ))


def _values_at(home: Path, environ: Mapping[str, str] | None) -> SettingValues:
    env = dict(os.environ if environ is None else environ)
    env["MEMORYD_HOME"] = str(home)
    return setting_values(env)


def embedder_with(
    home: Path, overrides: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> Embedder:
    """The configured embedder with some settings replaced (``reembed --model … --base-url
    …``): the rest (key, timeout, batch size) still come from memoryd.toml and the
    environment. ``model = "local"`` (or MiniLM's id) names the local model."""
    from memoryd.providers.embedder import LOCAL_MODEL_ID

    env = dict(os.environ if environ is None else environ)
    for setting, value in overrides.items():
        env[f"MEMORYD_EMBED_{setting.upper()}"] = value
    if overrides.get("model") in ("local", LOCAL_MODEL_ID):
        env["MEMORYD_EMBED_PROVIDER"] = "local"
    elif "provider" not in overrides and (overrides.get("model") or overrides.get("base_url")):
        env["MEMORYD_EMBED_PROVIDER"] = "openai"
    return configured_embedder(home, env)


class OpenAICompatibleEmbedder:
    """An OpenAI-compatible embeddings endpoint through the official ``openai`` SDK (which
    retries timeouts, 429 and 5xx with backoff). Vectors come back L2-normalised; every answer
    is checked for its count and dimension before anything uses it."""

    def __init__(self, settings: EmbedSettings) -> None:
        self.settings = settings
        self._dimension = settings.dimensions
        self._client: Any = None
        self._lock = threading.Lock()
        # Since when, and why, the endpoint fails (None once it answers): the web page shows it.
        self.failing: tuple[datetime, str] | None = None

    @property
    def model(self) -> str:
        """The configured model name, recorded in the store."""
        return self.settings.model

    @property
    def dimension(self) -> int:
        """The configured ``dimensions``, the store's recorded one (see :meth:`expect`), or
        what one tiny call answers."""
        if self._dimension is None:
            self._dimension = len(self._request(["dimension probe"])[0])
        return self._dimension

    def expect(self, dimension: int) -> None:
        """Take the store's recorded dimension instead of asking the endpoint; every answer is
        then checked against it."""
        if self._dimension is None:
            self._dimension = dimension

    def embed(self, texts: list[str]) -> Matrix:
        """One unit-length row per text, in order, in calls of at most ``batch_size``."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        rows: list[list[float]] = []
        size = self.settings.batch_size
        try:
            for start in range(0, len(texts), size):
                rows.extend(self._request(texts[start : start + size]))
        except EmbeddingUnavailableError as error:
            at = self.failing[0] if self.failing is not None else datetime.now(UTC)
            self.failing = (at, str(error))
            raise
        self.failing = None
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise EmbeddingUnavailableError(
                f"the embeddings endpoint ({self._where()}) answered a zero vector; check the model"
            )
        normalised: Matrix = (matrix / norms).astype(np.float32)
        return normalised

    def _request(self, texts: list[str]) -> list[list[float]]:
        client = self._openai()
        extra: dict[str, Any] = {}
        if self.settings.dimensions:
            extra["dimensions"] = self.settings.dimensions
        try:
            response = call_within(
                self._limits(len(texts)),
                lambda: client.embeddings.create(
                    model=self.settings.model, input=texts, encoding_format="float", **extra
                ),
            )
        except EndpointLimitError as error:
            raise EmbeddingUnavailableError(f"{error}; try again later") from None
        except self._errors.APIError as error:
            raise EmbeddingUnavailableError(self._failure(error)) from None
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise EmbeddingUnavailableError(
                f"the embeddings endpoint ({self._where()}) answered {len(data)} vectors for "
                f"{len(texts)} texts"
            )
        rows = [list(item.embedding) for item in data]
        wanted = self._dimension
        for row in rows:
            if wanted is not None and len(row) != wanted:
                raise EmbeddingUnavailableError(
                    f"the embeddings endpoint ({self._where()}) answered {len(row)}-dimension "
                    f"vectors, but {wanted} are expected (the store's or the configured "
                    "dimensions); check MEMORYD_EMBED_MODEL and MEMORYD_EMBED_DIMENSIONS"
                )
        return rows

    def _openai(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import openai

                    self._errors = openai
                    self._client = openai.OpenAI(
                        # Local servers (Ollama, llama.cpp) need no key, but the SDK wants one.
                        api_key=self.settings.api_key or "not-needed",
                        base_url=self.settings.base_url,
                        timeout=self.settings.timeout,
                        max_retries=0,  # call_within retries, within the timeout
                        http_client=bounded_http_client(self._limits(self.settings.batch_size)),
                    )
        return self._client

    def _limits(self, texts: int) -> Limits:
        """One call for ``texts`` texts: the timeout for the whole call with its retries, and
        an answer of at most a megabyte plus room for each text's vector."""
        return Limits(
            f"the embeddings endpoint ({self._where()})",
            self.settings.timeout,
            ONE_MIB + texts * ANSWER_BYTES_PER_TEXT,
            self.settings.max_retries,
        )

    def _where(self) -> str:
        return f"model {self.settings.model!r} at {self.settings.base_url or 'the default URL'}"

    def _failure(self, error: Exception) -> str:
        status = getattr(error, "status_code", None)
        if status is None:
            hint = "is the server running and the base URL right (e.g. http://localhost:11434/v1)?"
            return f"cannot reach the embeddings endpoint ({self._where()}): {error}; {hint}"
        if status in (401, 403):
            hint = "check MEMORYD_EMBED_API_KEY (or api_key_file under [embed])"
        elif status == 404:
            hint = "check the model name and that the server serves /v1/embeddings"
        else:
            hint = "try again later"
        return f"the embeddings endpoint ({self._where()}) answered {status}; {hint}"


def _number(values: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    value = values.get(name)
    if value in (None, ""):
        return default
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise EmbedConfigError(
            f"the embeddings setting {name} must be a number, not {value!r} "
            f"(MEMORYD_EMBED_{name.upper()} or {name} under [embed])"
        ) from None
