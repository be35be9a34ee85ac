"""Static architecture metrics of ``workers/`` (issue #41): module sizes, import circles
(function-level imports counted), reach-throughs past the tracker services (``.store``,
``.redis``, ``.indexes``) and ``Any`` in public signatures. Reads files only (``ast``)::

    python bench/arch_workers.py            # this checkout
    python bench/arch_workers.py /tmp/old   # another tree (its workers/ is read)
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from arch_metrics import public_signatures

PACKAGE = "workers"
#: Attributes that reach past the services into a library's parts.
REACH = ("store", "redis", "indexes")


@dataclass
class WorkerMetrics:
    modules: dict[str, int]  # module -> lines
    circles: list[list[str]]  # strongly connected components of more than one module
    reach: dict[str, list[int]]  # module -> lines of reach-throughs
    public: dict[str, tuple[int, list[str]]]  # module -> (signatures, those with Any)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports anywhere (function bodies too)."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def measure(root: Path) -> WorkerMetrics:
    files = sorted(p for p in (root / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts)
    trees = {}
    modules: dict[str, int] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = _module_name(root, path)
        trees[name] = (ast.parse(text), path.name == "__init__.py")
        modules[name] = text.count("\n")
    known = set(trees)
    graph = {m: _imports(t, m, pkg, known) for m, (t, pkg) in trees.items()}
    # A package's __init__ is imported with any of its modules; it re-exports nothing
    # here, so the arrow to it is no tie.
    graph = {
        m: {d for d in deps if trees[d][0].body and not _is_face(trees[d][0])}
        for m, deps in graph.items()
    }
    reach: dict[str, list[int]] = {}
    public: dict[str, tuple[int, list[str]]] = {}
    for name, (tree, _) in trees.items():
        reach[name] = sorted(
            n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in REACH
        )
        sigs = public_signatures(tree)
        public[name] = (len(sigs), [s for s, with_any in sigs if with_any])
    return WorkerMetrics(modules, circles(graph), reach, public)


def _is_face(tree: ast.Module) -> bool:
    """A module of docstring and imports only."""
    return all(
        isinstance(n, ast.Import | ast.ImportFrom)
        or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        for n in tree.body
    )


def report(m: WorkerMetrics) -> str:
    sizes = m.modules
    total = sum(n for n, _ in m.public.values())
    anys = sum(len(a) for _, a in m.public.values())
    reach = {k: v for k, v in m.reach.items() if v}
    lines = [
        f"- workers modules: {len(sizes)}, {sum(sizes.values()):,} lines; largest: "
        + ", ".join(f"{k} {v}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:3])
        + f"; over 700 lines: {sum(v > 700 for v in sizes.values())}",
        f"- import circles (function-level imports counted): {len(m.circles)}"
        + "".join(f"\n  - {' <-> '.join(c)}" for c in m.circles),
        f"- reach-throughs (.store/.redis/.indexes): {sum(len(v) for v in reach.values())}"
        + (" in " + ", ".join(f"{k} {len(v)}" for k, v in reach.items()) if reach else ""),
        f"- public signatures mentioning `Any`: {anys} of {total}",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    print(report(measure(root)))


if __name__ == "__main__":
    main(sys.argv)
