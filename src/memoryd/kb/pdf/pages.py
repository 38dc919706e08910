"""What the PDF reader hands the layout: pages of positioned text lines (pure data)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A run of text on a line with no wide gap inside; ``x0``/``x1`` in points."""

    text: str
    x0: float
    x1: float


@dataclass(frozen=True)
class Line:
    """One text line of a page: spans left to right, its font size and weight."""

    top: float
    spans: tuple[Span, ...]
    size: float
    weight: float = 0.0

    @property
    def text(self) -> str:
        """The spans joined by single spaces."""
        return " ".join(span.text for span in self.spans)


@dataclass(frozen=True)
class Picture:
    """The text read from a picture (or a whole scanned page), placed at ``top``."""

    top: float
    text: str


@dataclass(frozen=True)
class Page:
    """One page's lines (top to bottom) and pictures; ``number`` is 1-based."""

    number: int
    lines: tuple[Line, ...]
    pictures: tuple[Picture, ...] = ()
    # The page's height in points (0 when unknown: then its first and last lines are its
    # edges, in reading order).
    height: float = 0.0


@dataclass(frozen=True)
class OutlineEntry:
    """A bookmark: its title, the page it points to and its depth (1 = top)."""

    title: str
    page: int
    level: int
