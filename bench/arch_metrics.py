"""Static architecture metrics of a source tree (issue #27): module sizes, getattr/hasattr
probes and ``type: ignore[attr-defined]`` on the service path, and ``Any`` in public
signatures. Reads files only (``ast``); run it on the tree to measure, e.g. an old commit
exported with ``git archive``::

    python bench/arch_metrics.py            # this checkout
    python bench/arch_metrics.py /tmp/old   # another tree (its tracker/ is read)
    python bench/arch_metrics.py --web [/tmp/old]   # web/: Any, reach-throughs, circles
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

#: The modules of the service path: the façade, the services, the engines and matching.
SERVICE_PATH = ("tracker/library.py", "tracker/services/", "tracker/matching.py")
TOUCHED = (
    *SERVICE_PATH,
    "tracker/engines/",
    "tracker/cli.py",
    "tracker/config.py",
    "tracker/backends.py",
)


@dataclass
class Metrics:
    modules: dict[str, int]  # path -> lines
    probes: dict[str, int]  # path -> getattr/hasattr calls
    ignores: dict[str, int]  # path -> type: ignore[attr-defined]
    public: dict[str, tuple[int, int]]  # path -> (public signatures, those mentioning Any)
    library_methods: int


def _files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "tracker").rglob("*.py") if "__pycache__" not in p.parts)


def _mentions_any(node: ast.AST | None) -> bool:
    return node is not None and any(
        isinstance(n, ast.Name) and n.id == "Any" for n in ast.walk(node)
    )


def public_signatures(tree: ast.Module) -> list[tuple[str, bool]]:
    """(qualified name, whether its parameters or result mention ``Any``) of every
    public function and method: module-level and class-level ``def``s whose names (and
    class names) do not start with an underscore; dunders other than ``__init__`` are
    left out. ``tests/tracker/test_public_types.py`` holds tracker to this."""
    found: list[tuple[str, bool]] = []

    def visit(body: list[ast.stmt], owner: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = node.name
                if name.startswith("_") and name != "__init__":
                    continue
                if name == "__init__" and owner is None:
                    continue
                args = node.args
                params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                params += [a for a in (args.vararg, args.kwarg) if a is not None]
                with_any = _mentions_any(node.returns) or any(
                    _mentions_any(a.annotation) for a in params
                )
                found.append((f"{owner}.{name}" if owner else name, with_any))

    visit(tree.body, None)
    return found


def _public_signatures(tree: ast.Module) -> tuple[int, int]:
    """(public functions and methods, those whose parameters or result mention ``Any``)."""
    found = public_signatures(tree)
    return len(found), sum(with_any for _, with_any in found)


def measure(root: Path) -> Metrics:
    modules: dict[str, int] = {}
    probes: dict[str, int] = {}
    ignores: dict[str, int] = {}
    public: dict[str, tuple[int, int]] = {}
    library_methods = 0
    for path in _files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        modules[rel] = text.count("\n")
        probes[rel] = sum(
            1
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("getattr", "hasattr")
        )
        ignores[rel] = len(re.findall(r"type:\s*ignore\[attr-defined\]", text))
        public[rel] = _public_signatures(tree)
        if rel == "tracker/library.py":
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name == "Library":
                    library_methods = sum(
                        isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef) for b in node.body
                    )
    return Metrics(modules, probes, ignores, public, library_methods)


def _on(rel: str, prefixes: tuple[str, ...]) -> bool:
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in prefixes)


def report(m: Metrics) -> str:
    sizes = m.modules
    service = [r for r in sizes if _on(r, SERVICE_PATH)]
    touched = [r for r in sizes if _on(r, TOUCHED)]
    lines = [
        f"- tracker modules: {len(sizes)}, {sum(sizes.values()):,} lines; "
        f"over 400 lines: {sum(v > 400 for v in sizes.values())}, "
        f"over 500: {sum(v > 500 for v in sizes.values())}, "
        f"over 800: {sum(v > 800 for v in sizes.values())}",
        "- service path (library.py, services/, matching.py): "
        + ", ".join(f"{r.removeprefix('tracker/')} {sizes[r]}" for r in service),
        f"- largest on the service path: {max(sizes[r] for r in service)} lines; "
        f"`Library` methods: {m.library_methods}",
        f"- getattr/hasattr probes on the service path: {sum(m.probes[r] for r in service)}; "
        f"`type: ignore[attr-defined]` there: {sum(m.ignores[r] for r in service)}",
    ]
    for label, group in (("modules touched by #27", touched), ("all of tracker", list(sizes))):
        total = sum(m.public[r][0] for r in group)
        anys = sum(m.public[r][1] for r in group)
        lines.append(f"- public signatures mentioning `Any`, {label}: {anys} of {total}")
    return "\n".join(lines)


# --- web/ (issue #41): Any in public signatures, reach-throughs, sizes, import circles ---
#: Attributes of the library that web reached through instead of calling a service.
REACH = ("store", "redis", "indexes")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(name: str, is_package: bool, tree: ast.Module, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``tree`` imports anywhere (function level too)."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
    return (found & known) - {name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@dataclass
class WebMetrics:
    modules: dict[str, int]  # path -> lines
    public: dict[str, tuple[int, int]]  # path -> (public signatures, those mentioning Any)
    reach: dict[str, int]  # path -> .store / .redis / .indexes read in it
    store_calls: dict[str, int]  # path -> calls of web.core.store() (the Store itself)
    circles: list[list[str]]


def measure_web(root: Path) -> WebMetrics:
    files = sorted(p for p in (root / "web").rglob("*.py") if "__pycache__" not in p.parts)
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}
    names = {p: _module_name(root, p) for p in files}
    known = set(names.values())
    graph: dict[str, set[str]] = {}
    m = WebMetrics({}, {}, {}, {}, [])
    for path, tree in trees.items():
        rel = path.relative_to(root).as_posix()
        m.modules[rel] = path.read_text(encoding="utf-8").count("\n")
        m.public[rel] = _public_signatures(tree)
        m.reach[rel] = sum(isinstance(n, ast.Attribute) and n.attr in REACH for n in ast.walk(tree))
        m.store_calls[rel] = sum(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "store"
            and not n.args
            for n in ast.walk(tree)
        )
        graph[names[path]] = _imports(names[path], path.name == "__init__.py", tree, known)
    m.circles = circles(graph)
    return m


def report_web(m: WebMetrics) -> str:
    sizes = m.modules
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    return "\n".join(
        [
            f"- web modules: {len(sizes)}, {sum(sizes.values()):,} lines; over 700 lines: "
            f"{sum(v > 700 for v in sizes.values())}; largest: "
            + ", ".join(f"{r.removeprefix('web/')} {n}" for r, n in largest),
            f"- public signatures mentioning `Any` in web: {sum(a for _, a in m.public.values())}"
            f" of {sum(t for t, _ in m.public.values())}",
            f"- reach-throughs in web (`.store`, `.redis`, `.indexes` read): "
            f"{sum(m.reach.values())}; calls of `store()` (the Store itself): "
            f"{sum(m.store_calls.values())}",
            f"- import circles in web (function-level imports too): {len(m.circles)}"
            + "".join(f"; {' <-> '.join(c)}" for c in m.circles),
        ]
    )


def main(argv: list[str]) -> None:
    args = [a for a in argv[1:] if a != "--web"]
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    print(report_web(measure_web(root)) if "--web" in argv else report(measure(root)))


if __name__ == "__main__":
    main(sys.argv)
