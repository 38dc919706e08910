"""scripts/relayout.py, the codemod that moved the flat modules into packages, run again on the
moved tree: nothing left to move, nothing it does not know, and rewriting changes nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def relayout() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relayout", ROOT / "scripts" / "relayout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["relayout"] = module
    spec.loader.exec_module(module)
    return module


def test_every_move_is_made_and_every_module_is_placed(relayout: ModuleType) -> None:
    todo, done, problems = relayout.plan()

    assert (todo, problems) == ([], [])
    assert len(done) == len(relayout.MOVES)
    assert relayout.unknown_modules() == []


def test_rewriting_the_moved_tree_changes_nothing(relayout: ModuleType) -> None:
    rewriter = relayout.Rewriter(relayout.old_to_new(), relayout.current_modules())
    changed = []
    for path in relayout.files_to_rewrite():
        text = path.read_text(encoding="utf-8")
        new = rewriter.text(
            text, is_pyproject=path.name == "pyproject.toml", is_prose=path.suffix == ".md"
        )
        if new != text:
            changed.append(path.relative_to(ROOT).as_posix())

    assert changed == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("from memoryd.retriever import Retriever", "from memoryd.recall.run import Retriever"),
        ("import memoryd.app", "import memoryd.wiring"),
        (
            "from memoryd import eval_space",
            "from memoryd.evaluation import candidate_view as eval_space",
        ),
        (
            'monkeypatch.setattr("memoryd.recall.pack_block", f)',
            'monkeypatch.setattr("memoryd.recall.policy.pack_block", f)',
        ),
        ('mock.patch("memoryd.kb.pdf.pdfium")', 'mock.patch("memoryd.kb.pdf.reader.pdfium")'),
        ("python -m memoryd.mcp_server", "python -m memoryd.mcp.server"),
        ('resources.files("memoryd.prompts")', 'resources.files("memoryd.extraction.prompts")'),
        ("see `src/memoryd/settings_file.py`", "see `src/memoryd/config/settings_file.py`"),
        ("the retriever (`retriever.py`)", "the retriever (`recall/run.py`)"),
        # Already the new layout, or not a module at all: left alone.
        ("from memoryd.recall import legs", "from memoryd.recall import legs"),
        ("memoryd.kb.pdf.reader.pdfium", "memoryd.kb.pdf.reader.pdfium"),
        ("memoryd.kb_sync and memoryd.settings_x", "memoryd.kb_sync and memoryd.settings_x"),
        ("$MEMORYD_HOME/memoryd.toml", "$MEMORYD_HOME/memoryd.toml"),
    ],
)
def test_names_are_rewritten_once(relayout: ModuleType, old: str, new: str) -> None:
    rewriter = relayout.Rewriter(relayout.old_to_new(), relayout.current_modules())

    assert rewriter.text(old, is_prose=True) == new
    assert rewriter.text(new, is_prose=True) == new
