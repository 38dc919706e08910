"""The layout section of docs/architecture.md names every module in the tree, and nothing
that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "memoryd"


def _layout_block() -> str:
    notes = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = notes.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def test_every_module_is_in_the_layout() -> None:
    named = set(re.findall(r"[\w]+\.py", _layout_block()))
    modules = {
        path.name
        for path in PACKAGE.rglob("*.py")
        if path.name not in {"__init__.py", "__main__.py"} and "__pycache__" not in path.parts
    }

    assert sorted(modules - named) == []


def test_every_file_the_layout_names_exists() -> None:
    named = set(re.findall(r"[\w]+\.py", _layout_block()))
    present = {
        path.name for folder in ("src", "tests", "bench") for path in (ROOT / folder).rglob("*.py")
    }

    assert sorted(named - present) == []
