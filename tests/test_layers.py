"""The layers of docs/architecture.md hold: a module imports only its own layer's package and the
layers below it, siblings (the MCP and web edges) never import each other, and no two modules
import each other, directly or around a loop. Every import counts: one inside a function or
under `TYPE_CHECKING` ties the two modules together as much as one at the top."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.package_layout import package_modules

ROOT = Path(__file__).resolve().parents[1] / "weaver"

# Lowest first. The units of one layer are siblings: none imports another.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(units.split())
    for units in (
        "errors log json_nesting gc_freeze obsidian_app paging installation toolsets file_locks"
        " file_replace path_globs memory_trim",
        "markdown",
        "tasks bases canvas",
        "views",
        "config",
        "vault",
        "attachments",
        "cache",
        "migrations",
        "index",
        "edits",
        "semantic",
        "search",
        "engine",
        "builtin_workflows",
        "runtime",
        "mcp_server dashboard",
        "host",
        "cli",
        "__main__",
    )
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def imported(path: Path, module: str) -> Iterator[tuple[str, ...]]:
    """What `path` imports, as choices: `import x` is `(x,)`, `from x import y, z` is `(x,
    x.y, x.z)`: the modules `x.y` and `x.z` when they are modules, else `x`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name,) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            yield (base, *(f"{base}.{alias.name}" for alias in node.names))


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (with the folders installed into it, for
    the real package)."""
    files = package_modules(root, mapped=root == ROOT)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = graph.setdefault(module, set())
        for base, *names in imported(path, module):
            submodules = {name for name in names if name in files}
            targets |= submodules or ({base} if base in files else set())
        targets.discard(module)
    return graph


def unit(module: str) -> str:
    """`weaver.cache.read` -> `cache`; `weaver.config` -> `config`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            source, dest = unit(module), unit(target)
            if source == dest or "weaver" in (source, dest):
                continue
            if source not in RANK or dest not in RANK:
                found.append(f"{module} -> {target}: a package missing from LAYERS")
            elif RANK[dest] > RANK[source]:
                found.append(f"{module} -> {target}: imports a layer above its own")
            elif RANK[dest] == RANK[source]:
                found.append(f"{module} -> {target}: imports a sibling")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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
            visit(node)
    return groups


def test_every_package_has_a_layer() -> None:
    units = {unit(module) for module in import_graph(ROOT)} - {"weaver"}
    assert units - set(RANK) == set()


def test_no_module_imports_upward_or_a_sibling() -> None:
    graph = import_graph(ROOT)
    assert sum(len(targets) for targets in graph.values()) > 500  # the walk sees the imports
    assert layer_violations(graph) == []


def test_no_import_cycle_between_modules() -> None:
    assert cycles(import_graph(ROOT)) == []


@pytest.fixture
def fake_package(tmp_path: Path) -> Path:
    root = tmp_path / "weaver"
    for folder in ("cache", "index", "mcp_server", "dashboard"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    return root


def test_the_check_sees_an_upward_import_and_a_sibling(fake_package: Path) -> None:
    (fake_package / "cache" / "write.py").write_text("from weaver.index import rows\n")
    (fake_package / "index" / "rows.py").write_text("ROWS = 1\n")
    (fake_package / "dashboard" / "data.py").write_text(
        "def f():\n    from ..mcp_server import state\n"
    )
    (fake_package / "mcp_server" / "state.py").write_text("")
    assert layer_violations(import_graph(fake_package)) == [
        "weaver.cache.write -> weaver.index.rows: imports a layer above its own",
        "weaver.dashboard.data -> weaver.mcp_server.state: imports a sibling",
    ]


def test_the_check_sees_a_cycle(fake_package: Path) -> None:
    (fake_package / "index" / "a.py").write_text("from weaver.index import b\n")
    (fake_package / "index" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import weaver.index.a\n"
    )
    assert cycles(import_graph(fake_package)) == [["weaver.index.a", "weaver.index.b"]]
