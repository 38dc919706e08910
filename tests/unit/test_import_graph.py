"""The package's modules import one another without circles: each module can be read, and
changed, knowing only what lies below it."""

from __future__ import annotations

import ast
from pathlib import Path

import memoryd

PACKAGE = Path(memoryd.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every memoryd module ``path`` imports: at the top, inside functions (lazy), and under
    ``if TYPE_CHECKING:`` — a reader follows a type's import as surely as a call's."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {module for module in found if module in modules and module != name}


def _import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(path) for path in paths}
    return {_module_name(path): _imports(path, modules) for path in paths}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


def test_no_module_imports_itself_back_through_another() -> None:
    # A package's __init__ re-exporting its children is not a circle a reader has to follow.
    graph = {
        module: {target for target in targets if not module.startswith(target + ".")}
        for module, targets in _import_graph().items()
    }
    assert _cycles(graph) == []


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    graph = _import_graph()
    assert "memoryd.collaborators" in graph["memoryd.ops.store_admin"]  # at the top
    assert "memoryd.ops.portability" in graph["memoryd.ops.store_admin"]  # inside a method
    assert "memoryd.ops.backup" in graph["memoryd.ops.store_admin"]  # under TYPE_CHECKING
    assert "memoryd.kb.service" in graph["memoryd.service"]
    assert graph["memoryd.errors"] == set()
