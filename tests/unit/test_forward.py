"""A facade's forwarded method is its part's method: same call, same signature, same
docstring, whichever instance of the part the facade holds now."""

from __future__ import annotations

import inspect

from memoryd.forward import Forward


class Part:
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    def greet(self, name: str, *, loud: bool = False) -> str:
        """Say hello to ``name``."""
        text = f"{self.greeting}, {name}"
        return text.upper() if loud else text


class Facade:
    greet = Forward("part", Part.greet)

    def __init__(self, part: Part) -> None:
        self.part = part


class Outer:
    """Forwarding twice: a facade over a facade (MemoryService over Memories)."""

    greet = Forward("inner", Facade.greet)

    def __init__(self, inner: Facade) -> None:
        self.inner = inner


def test_a_forwarded_call_reaches_the_part_the_facade_holds_now() -> None:
    facade = Facade(Part("hello"))
    assert facade.greet("Ana") == "hello, Ana"
    assert facade.greet("Ana", loud=True) == "HELLO, ANA"
    facade.part = Part("bye")
    assert facade.greet("Ana") == "bye, Ana"
    assert Outer(facade).greet("Rui", loud=True) == "BYE, RUI"


def test_a_forwarded_method_shows_the_parts_signature_and_docstring() -> None:
    for method in (Facade.greet, Outer.greet):
        assert method.__name__ == "greet"
        assert method.__doc__ == "Say hello to ``name``."
        assert list(inspect.signature(method).parameters) == ["self", "name", "loud"]
    bound = Outer(Facade(Part("hi"))).greet
    assert list(inspect.signature(bound).parameters) == ["name", "loud"]
    assert Facade.greet(Facade(Part("hi")), "Eva") == "hi, Eva"
