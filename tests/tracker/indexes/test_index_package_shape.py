"""The index concern is one package (``tracker.indexes``): its modules stay readable
(at most 700 lines each) and import each other in one direction (no circle, counting
imports inside functions and under ``TYPE_CHECKING``)."""

from __future__ import annotations

import ast
from pathlib import Path

from repo import REPO

PACKAGE = REPO / "tracker" / "indexes"
MOVED_AWAY = (
    "tracker/index_health.py",
    "tracker/redis_client.py",
    "tracker/services/index_admin.py",
    "tracker/services/index_writer.py",
    "tracker/services/refill.py",
    "tracker/services/embedded_redis.py",
)


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def _imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in known:
                    found.add(full)
                elif node.module in known:
                    found.add(node.module)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph[v]:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_index_modules_import_each_other_in_one_direction() -> None:
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, set(paths)) - {"tracker.indexes"} for name, path in paths.items()}
    assert _circles(graph) == []


def test_the_scanner_finds_a_circle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_each_index_module_is_at_most_700_lines() -> None:
    long = {
        p.name: n
        for p in PACKAGE.rglob("*.py")
        if (n := p.read_text(encoding="utf-8").count("\n")) > 700
    }
    assert long == {}


def test_the_index_concern_lives_in_one_package() -> None:
    assert [p for p in MOVED_AWAY if (REPO / p).exists()] == []
