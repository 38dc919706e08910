"""The package's modules import one another without circles: each module can be read, and
changed, knowing only what lies below it."""

from __future__ import annotations

from .import_graph_support import import_graph


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
        for module, targets in import_graph().items()
    }
    assert _cycles(graph) == []


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "memoryd.jobs.model" in graph["memoryd.ops.store_admin"]  # at the top
    assert "memoryd.ops.portability" in graph["memoryd.ops.store_admin"]  # inside a method
    assert "memoryd.ops.backup" in graph["memoryd.ops.store_admin"]  # under TYPE_CHECKING
    assert "memoryd.kb.service" in graph["memoryd.service"]
    assert graph["memoryd.errors"] == set()
