"""Lets a benchmark import memoryd by today's module paths from a checkout made before the
package moves (6edb873 and older), so that ``--tree old=… --tree new=…`` times both checkouts
with the same benchmark code.

Importing this module does nothing on a current checkout. On an old one, each package path a
benchmark names (``memoryd.memory.model``) is bound to the module that held those names then
(``memoryd.model``), with the missing packages made as empty stand-ins, before the benchmark's
own ``from memoryd… import …`` lines run. Only the modules the timed benchmarks import are
listed; ``--split`` hooks into recall's internals and is not supported on an old checkout.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

# Today's path → the module that held the same names before the moves.
BEFORE_THE_MOVES = {
    "memoryd.config.settings": "memoryd.settings",
    "memoryd.memory.model": "memoryd.model",
    "memoryd.memory.entity_policy": "memoryd.entities",
    "memoryd.memory.proposal_policy": "memoryd.proposals",
    "memoryd.providers.embedder": "memoryd.embedding",
    "memoryd.providers.llm": "memoryd.llm",
    "memoryd.providers.tokenizer": "memoryd.tokens",
    "memoryd.recall.legs": "memoryd.legs",
    "memoryd.wiring": "memoryd.app",
}


def _bind(path: str, module: ModuleType) -> None:
    """Make ``import path`` and ``from path import …`` give ``module``."""
    parent_path, _, leaf = path.rpartition(".")
    parent = sys.modules.get(parent_path)
    if parent is None:
        try:
            parent = importlib.import_module(parent_path)
        except ModuleNotFoundError:
            parent = ModuleType(parent_path)
            parent.__path__ = []
            _bind(parent_path, parent)
    sys.modules[path] = module
    setattr(parent, leaf, module)


def _layout_before_the_moves() -> bool:
    try:
        importlib.import_module("memoryd.memory.model")
    except ModuleNotFoundError:
        return True
    return False


if _layout_before_the_moves():
    for today, then in BEFORE_THE_MOVES.items():
        _bind(today, importlib.import_module(then))
