"""Static architecture metrics of a source tree (issue #27): module sizes, getattr/hasattr
probes and ``type: ignore[attr-defined]`` on the service path, and ``Any`` in public
signatures. Reads files only (``ast``); run it on the tree to measure, e.g. an old commit
exported with ``git archive``::

    python bench/arch_metrics.py            # this checkout
    python bench/arch_metrics.py /tmp/old   # another tree (its tracker/ is read)
    python bench/arch_report.py [/tmp/old]  # per package: sizes, Any, reach, circles
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

#: The modules of the service path: the façade, the services, the engines and matching.
SERVICE_PATH = ("tracker/library.py", "tracker/services/", "tracker/matching/matcher.py")
TOUCHED = (
    *SERVICE_PATH,
    "tracker/engines/",
    "tracker/cli.py",
    "tracker/plumbing/config.py",
    "tracker/plumbing/backends.py",
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


def main(argv: list[str]) -> None:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    print(report(measure(root)))


if __name__ == "__main__":
    main(sys.argv)
