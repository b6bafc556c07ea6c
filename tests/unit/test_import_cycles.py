"""No import cycles inside the volumesvc package.

A cycle hidden by a function-local import still couples the modules and
breaks as soon as someone hoists the import, so local imports count too.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("volumesvc",)


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(name: str, path: pathlib.Path, known) -> set:
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
    return {dep for dep in found if dep in known and dep != name}


def import_graph() -> dict:
    paths = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    return {name: _imports(name, path, paths) for name, path in paths.items()}


def cycles(graph: dict) -> list:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    found = []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_graph_sees_the_packages():
    graph = import_graph()
    assert "volumesvc.api.versioned" in graph["volumesvc.api.handlers.services"]
    assert "volumesvc.api.microversions" in graph["volumesvc.api.validation"]
    # A package's __init__ and ``import package as name`` count as well.
    assert "volumesvc.conf.opts" in graph["volumesvc.conf"]
    assert "volumesvc.conf" in graph["volumesvc.cmd.common"]


def test_no_import_cycle_in_the_package():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_detection(graph, expected):
    assert cycles(graph) == expected
