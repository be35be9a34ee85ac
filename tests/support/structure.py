"""The code's structure as data, read from the source with ``ast`` (nothing is imported):
which project module imports which, the import circles that makes, and module sizes.

Used by ``tests/test_structure.py`` (no circle, no module over the size limit, the layers'
direction) and by ``bench/arch_metrics.py`` (the figures a closing note quotes).

An import counts wherever it is written — at the top, inside a function, or a string
given to ``importlib.import_module`` — because a function-level import is still a
dependency that makes two modules one unit. Imports under ``if TYPE_CHECKING:`` count
too: a module that names another's type depends on it, whether or not the import runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("tracker", "web", "workers")


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "tracker.indexes.inverted"; a package is its __init__
    path: Path
    lines: int


def project_modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    found: dict[str, Module] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            text = path.read_text(encoding="utf-8")
            found[".".join(parts)] = Module(".".join(parts), path, text.count("\n"))
    return found


def _resolve(name: str, modules: dict[str, Module]) -> str | None:
    """The project module a dotted name lands in (the longest known prefix)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def imports_of(module: Module, modules: dict[str, Module]) -> set[str]:
    """The project modules ``module`` imports, anywhere in its body."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
    is_package = module.path.name == "__init__.py"
    here = module.name.split(".") if is_package else module.name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            # `from a.b import c` imports the module a.b.c when there is one, else a.b
            targets = [f"{prefix}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != module.name:
                found.add(resolved)
    return found


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    return {name: imports_of(module, modules) for name, module in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0

    for start in sorted(graph):
        if start in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            if successors:
                nxt = successors.pop()
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


#: Attributes through which web or workers would reach past the tracker services into
#: a library's parts.
REACH_ATTRS = ("store", "redis", "indexes")


def reach_throughs(module: Module) -> list[int]:
    """Lines of ``module`` that read ``.store``, ``.redis`` or ``.indexes`` of anything."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
    return sorted(
        n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in REACH_ATTRS
    )
