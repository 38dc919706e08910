"""The layout section of docs/architecture.md names every module in the tree under its own
folder, and nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "memoryd"


def _layout_block() -> str:
    notes = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = notes.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def _named_by_folder() -> dict[str, set[str]]:
    """The file names the block lists under each folder of src/memoryd ("" is the top): a
    folder's line opens it, a line indented no deeper than the folder closes it, and the
    names on the folder's line and its description lines belong to it."""
    named: dict[str, set[str]] = {}
    open_folders: list[tuple[int, str]] = []  # (indent, path under src/memoryd)
    inside = False
    for line in _layout_block().splitlines():
        indent = len(line) - len(line.lstrip())
        if line.startswith("src/memoryd/"):
            inside, open_folders = True, [(-1, "")]
            continue
        if not inside or not line.strip():
            continue
        if indent == 0:
            inside = False
            continue
        while open_folders and indent <= open_folders[-1][0]:
            open_folders.pop()
        folder = re.match(r"\s*(\w+)/", line)
        if folder:
            parent = open_folders[-1][1]
            path = f"{parent}/{folder[1]}" if parent else folder[1]
            open_folders.append((indent, path))
        current = open_folders[-1][1]
        named.setdefault(current, set()).update(re.findall(r"\w+\.py", line))
    return named


def _modules_by_folder() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name in {"__init__.py", "__main__.py"} or "__pycache__" in path.parts:
            continue
        folder = path.parent.relative_to(PACKAGE).as_posix()
        found.setdefault("" if folder == "." else folder, set()).add(path.name)
    return found


def test_every_module_is_in_the_layout_under_its_folder() -> None:
    named = _named_by_folder()
    missing = [
        f"{folder}/{name}".lstrip("/")
        for folder, names in sorted(_modules_by_folder().items())
        for name in sorted(names - named.get(folder, set()))
    ]

    assert missing == []


def test_every_module_the_layout_lists_under_a_folder_is_there() -> None:
    present = _modules_by_folder()
    gone = [
        f"{folder}/{name}".lstrip("/")
        for folder, names in sorted(_named_by_folder().items())
        for name in sorted(names - present.get(folder, set()) - {"__init__.py"})
    ]

    assert gone == []


def test_every_file_the_layout_names_exists() -> None:
    named = set(re.findall(r"[\w]+\.py", _layout_block()))
    present = {
        path.name for folder in ("src", "tests", "bench") for path in (ROOT / folder).rglob("*.py")
    }

    assert sorted(named - present) == []
