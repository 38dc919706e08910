"""The surfaces (CLI, HTTP API and web page, MCP server, chat proxy) reach the store only through
the service and its sub-facades: they import no storage backend or protocol, open no store
themselves, and read no store off the service."""

from __future__ import annotations

import ast
import re

from .import_graph_support import PACKAGE, import_graph, module_name

SURFACES = ("memoryd.cli", "memoryd.http", "memoryd.mcp", "memoryd.proxy")
# Storage modules that hold file helpers, not the store: private files and the full-disk error.
STORAGE_HELPERS = {"memoryd.storage.file_modes", "memoryd.storage.full_disk"}
# What the wiring hands a surface: a service, a re-embed's sub-facade, the damage checks.
WIRING_FOR_SURFACES = {"open_service", "reembed_admin", "store_damage", "refuse_damaged_store"}
# A store read off the service or a part of it (``service.store``, ``.parts.store``, ``._store``).
STORE_ATTRIBUTE = re.compile(r"\.(_?store)\b(?!_)")


def _surface(module: str) -> bool:
    return any(module == s or module.startswith(s + ".") for s in SURFACES)


def _surface_sources() -> dict[str, str]:
    return {
        module_name(path): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
        if _surface(module_name(path))
    }


def test_surfaces_import_no_store() -> None:
    found = {
        (module, target)
        for module, targets in import_graph().items()
        if _surface(module)
        for target in targets
        if target.startswith("memoryd.storage") and target not in STORAGE_HELPERS
    }

    assert sorted(found) == []


def test_surfaces_take_only_a_service_or_a_sub_facade_from_the_wiring() -> None:
    taken = {
        (module, alias.name)
        for module, source in _surface_sources().items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module == "memoryd.wiring"
        for alias in node.names
    }

    assert sorted((m, name) for m, name in taken if name not in WIRING_FOR_SURFACES) == []
    assert ("memoryd.cli.reembed", "reembed_admin") in taken


def test_surfaces_read_no_store_off_the_service() -> None:
    found = [
        (module, line.strip())
        for module, source in _surface_sources().items()
        for line in source.splitlines()
        if STORE_ATTRIBUTE.search(line.split("#")[0])
    ]

    assert found == []


def test_the_store_pattern_sees_what_it_judges() -> None:
    assert STORE_ATTRIBUTE.search("service.store.jobs.counts()")
    assert STORE_ATTRIBUTE.search("service.parts.store")
    assert STORE_ATTRIBUTE.search("self._store.kb")
    assert not STORE_ATTRIBUTE.search("service.admin.store_location()")
    assert not STORE_ATTRIBUTE.search("masked_location(settings.db)")
