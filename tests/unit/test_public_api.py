"""The public API is what ``import memoryd`` names: ``open``, ``MemoryService``, ``Client`` and
the errors, listed in ``__all__``; naming the package loads neither the service nor the client."""

from __future__ import annotations

import subprocess
import sys

import pytest

import memoryd
import memoryd.client
import memoryd.errors
import memoryd.service


def test_the_front_door_and_the_client_are_named_at_the_top() -> None:
    assert memoryd.MemoryService is memoryd.service.MemoryService
    assert memoryd.Client is memoryd.client.Client
    assert memoryd.ApiError is memoryd.client.ApiError
    assert callable(memoryd.open)


def test_every_error_is_exported() -> None:
    errors = {
        name
        for name, value in vars(memoryd.errors).items()
        if isinstance(value, type) and issubclass(value, memoryd.errors.MemorydError)
    }

    assert errors <= set(memoryd.__all__)
    assert all(getattr(memoryd, name) is getattr(memoryd.errors, name) for name in errors)


def test_all_names_only_what_exists() -> None:
    assert all(hasattr(memoryd, name) for name in memoryd.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        memoryd.NoSuchThing  # noqa: B018


def test_importing_the_package_loads_neither_service_nor_client() -> None:
    heavy = ("memoryd.service", "memoryd.client", "httpx")
    code = f"import sys, memoryd; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"
