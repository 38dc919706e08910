"""The JSON shapes the records hand out, each declared once: a ``TypedDict`` beside the record
whose ``to_json`` builds it (mypy checks that it does). The CLI's ``--json`` prints what
``to_json`` builds; the HTTP API makes its response models, and so the OpenAPI document, from
the same ``TypedDict`` (``http/response_models.py``). Standard library only: the CLI prints
these shapes without loading pydantic.

What only the HTTP schema needs rides on a key's annotation:

- ``Annotated[T, Described("…")]``: the key's description in the OpenAPI document;
- ``Annotated[T, Default(value)]`` (or ``Default(factory=list)``): the key is not required, the
  document shows the default, and the HTTP API fills it in when ``to_json`` leaves the key out
  (``NotRequired`` then tells mypy it may);
- ``Annotated[T, CliOnly()]``: a key the CLI prints that the HTTP API leaves out.

A shape's docstring is its description in the OpenAPI document, so a shape without one there
is commented instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Described:
    """The key's description in the OpenAPI document."""

    text: str


_UNSET: Any = object()


@dataclass(frozen=True)
class Default:
    """The key's default in the OpenAPI document (a value, or a factory shown as none)."""

    value: Any = _UNSET
    factory: Callable[[], Any] | None = None

    def field_arguments(self) -> dict[str, Any]:
        """The keyword arguments of a pydantic ``Field`` for this default."""
        if self.factory is not None:
            return {"default_factory": self.factory}
        return {"default": None if self.value is _UNSET else self.value}


@dataclass(frozen=True)
class CliOnly:
    """A key the CLI prints and the HTTP API leaves out."""
