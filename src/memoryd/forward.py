"""A method that is another object's method: how a facade forwards to its parts without
writing each signature and docstring again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")


class Forward(Generic[P, R]):
    """``remember = Forward("memories", Memories.remember)`` in a class makes
    ``obj.remember(...)`` call ``obj.memories.remember(...)``: the same signature (mypy checks
    callers against it) and the same docstring, written once, where the work is done."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        self.name = method.__name__
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, instance: None, owner: type) -> Callable[Concatenate[Any, P], R]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> Callable[P, R]: ...
    def __get__(
        self, instance: object | None, owner: type
    ) -> Callable[Concatenate[Any, P], R] | Callable[P, R]:
        if instance is None:
            return self._unbound()
        bound: Callable[P, R] = getattr(getattr(instance, self.part), self.name)
        return bound

    def _unbound(self) -> Callable[Concatenate[Any, P], R]:
        """The method as the class holds it (for ``help()`` and for forwarding again)."""
        part, name = self.part, self.name

        def forwarded(holder: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
            method: Callable[P, R] = getattr(getattr(holder, part), name)
            return method(*args, **kwargs)

        forwarded.__name__ = forwarded.__qualname__ = name
        forwarded.__doc__ = self.__doc__
        # inspect.signature (and so help()) shows the forwarded method's own signature.
        forwarded.__wrapped__ = self.method  # type: ignore[attr-defined]
        return forwarded
