"""LLM routes from the settings: one route per operation (extract, merge, reflect, caption) and
the chat proxy's upstream, each from its own settings, else the default route's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from memoryd.config.settings import (
    CHAT_ROUTE,
    OPERATIONS,
    Setting,
    SettingValues,
    api_key_of,
    key_source,
    setting_values,
)
from memoryd.providers.llm.types import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    LLMConfigError,
    Provider,
    Route,
    Structured,
)


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
