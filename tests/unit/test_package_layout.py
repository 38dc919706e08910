"""The layout keeps its shape: few modules at the top, none too long to read at a sitting, pure
policy free of I/O, and storage free of domain rules.

The allow-lists below are today's exceptions. They may only shrink: a test fails when an entry
is no longer needed, so whoever fixes one removes it, and a new exception cannot slip in."""

from __future__ import annotations

from pathlib import Path

from .import_graph_support import PACKAGE, import_graph

MAX_TOP_LEVEL_MODULES = 15
MAX_LINES = 450

# Modules over MAX_LINES today, each to be split (a test fails once one fits, to drop it here).
LONG_MODULES: set[str] = set()

# Pure policy: the ``*_policy`` modules, and the packages and modules that say they are pure.
PURE_PACKAGES = ("memoryd.trust",)
PURE_MODULES = {
    "memoryd.memory.model",
    "memoryd.jobs.model",
    "memoryd.kb.model",
    "memoryd.evaluation.model",
    "memoryd.kb.blocks",
    "memoryd.kb.chunking",
    "memoryd.kb.hygiene",
    "memoryd.kb.search",
    "memoryd.kb.tables",
    "memoryd.kb.titles",
    "memoryd.kb.urls",
    "memoryd.kb.pdf.layout",
    "memoryd.kb.pdf.pages",
}
# What pure policy may not import: storage, model endpoints, the surfaces, the wiring.
IO_PACKAGES = ("memoryd.storage", "memoryd.providers", "memoryd.http", "memoryd.cli", "memoryd.mcp")
IO_MODULES = {"memoryd.service", "memoryd.wiring", "memoryd.client"}
# Pure modules that import an I/O module today: the tokenizer's protocol belongs with the
# model types, not beside the o200k implementation.
PURE_IMPORTS_ALLOWED = {
    ("memoryd.kb.search", "memoryd.providers.tokenizer"),
}

# What storage may import besides itself: the records it stores and the project's basics.
STORAGE_MAY_IMPORT = {
    "memoryd.errors",
    "memoryd.clock",
    "memoryd.ids",
    "memoryd.words",
    "memoryd.memory.model",
    "memoryd.kb.model",
    "memoryd.kb.sync.model",
    "memoryd.jobs.model",
    "memoryd.evaluation.model",
}
STORAGE_MAY_ALSO_IMPORT_PACKAGES = ("memoryd.storage", "memoryd.providers")
# Domain rules storage applies itself today; the domain should compute the keys and hand them
# over (as memory/keys.py hands over a fact's subject key and an entity name's key).
STORAGE_IMPORTS_ALLOWED = {
    ("memoryd.storage.kb_rows", "memoryd.kb.rows"),  # a chunk's table rows as search units
}


def _sources() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def _under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _is_pure(module: str) -> bool:
    leaf = module.rpartition(".")[2]
    return (
        leaf == "policy"
        or leaf.endswith("_policy")
        or module in PURE_MODULES
        or _under(module, PURE_PACKAGES)
    )


def test_few_modules_sit_at_the_top() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))

    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_is_longer_than_a_sitting() -> None:
    lengths = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in _sources()
    }
    too_long = {name for name, lines in lengths.items() if lines > MAX_LINES}

    assert sorted(too_long - LONG_MODULES) == [], "split it, or the allow-list grows"
    assert sorted(LONG_MODULES - too_long) == [], "it fits now: drop it from LONG_MODULES"


def test_pure_policy_imports_no_io() -> None:
    graph = import_graph()
    found = {
        (module, target)
        for module, targets in graph.items()
        if _is_pure(module)
        for target in targets
        if _under(target, IO_PACKAGES) or target in IO_MODULES
    }

    assert sorted(found - PURE_IMPORTS_ALLOWED) == []
    assert sorted(PURE_IMPORTS_ALLOWED - found) == [], "fixed: drop it from the allow-list"


def test_storage_imports_no_domain_rule() -> None:
    graph = import_graph()
    found = {
        (module, target)
        for module, targets in graph.items()
        if _under(module, ("memoryd.storage",))
        for target in targets
        if target not in STORAGE_MAY_IMPORT and not _under(target, STORAGE_MAY_ALSO_IMPORT_PACKAGES)
    }

    assert sorted(found - STORAGE_IMPORTS_ALLOWED) == []
    assert sorted(STORAGE_IMPORTS_ALLOWED - found) == [], "fixed: drop it from the allow-list"


def test_the_rules_see_what_they_judge() -> None:
    graph = import_graph()

    assert _is_pure("memoryd.memory.promotion_policy")
    assert _is_pure("memoryd.trust.fence")
    assert not _is_pure("memoryd.memory.writes")
    assert "memoryd.storage.row_keys" in graph["memoryd.storage.memory_rows"]
    assert "memoryd.memory.slot_policy" in graph["memoryd.memory.keys"]
    assert sum(_is_pure(module) for module in graph) >= 25
