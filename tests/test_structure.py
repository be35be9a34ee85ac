"""The shape of the code, held: no import circle, no module over 700 lines, and the
layers' direction inside tracker (text and fingerprint algorithms import no storage,
no index, no service).

Read from the source (``tests/support/structure.py``); an import inside a function or
under ``if TYPE_CHECKING:`` counts like one at the top.
"""

from __future__ import annotations

from pathlib import Path

from repo import REPO
from structure import Module, circles, import_graph, project_modules

MAX_LINES = 700


def test_no_import_circle() -> None:
    found = circles(import_graph(project_modules(REPO)))
    assert found == [], "import circles (each a group of modules that import each other): " + (
        "; ".join(" ↔ ".join(group) for group in found)
    )


def test_no_module_over_the_size_limit() -> None:
    big = {m.name: m.lines for m in project_modules(REPO).values() if m.lines > MAX_LINES}
    assert big == {}, f"modules over {MAX_LINES} lines: {big}"


def test_the_circle_finder_sees_a_function_level_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "tracker"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "a.py").write_text("from tracker.b import f\n", encoding="utf-8")
    (pkg / "b.py").write_text(
        "def f():\n    from tracker import a\n    return a\n", encoding="utf-8"
    )
    (pkg / "c.py").write_text("import tracker.a\n", encoding="utf-8")
    modules = project_modules(tmp_path, ("tracker",))
    assert circles(import_graph(modules)) == [["tracker.a", "tracker.b"]]


def test_a_module_counts_its_lines(tmp_path: Path) -> None:
    pkg = tmp_path / "web"
    pkg.mkdir()
    (pkg / "x.py").write_text("a = 1\n" * 701, encoding="utf-8")
    assert project_modules(tmp_path, ("web",))["web.x"] == Module("web.x", pkg / "x.py", 701)


#: tracker's layers, bottom up, and what each may not import (directly). The algorithms
#: (text, fingerprints, matching) and the shared vocabulary never reach storage, the
#: index, the services or the parts that crawl, prove and file.
ABOVE_ALGORITHMS = (
    "tracker.store",
    "tracker.indexes",
    "tracker.services",
    "tracker.evidence",
    "tracker.cases",
    "tracker.discovery",
    "tracker.crawler",
    "tracker.reports",
    "tracker.library",
    "tracker.cli",
    "tracker.plumbing.backends",
)
LAYERS = {
    "tracker.common": (*ABOVE_ALGORITHMS, "tracker.matching", "tracker.engines", "tracker.books"),
    "tracker.text": (*ABOVE_ALGORITHMS, "tracker.matching", "tracker.engines", "tracker.books"),
    "tracker.fingerprints": (
        *ABOVE_ALGORITHMS,
        "tracker.matching",
        "tracker.engines",
        "tracker.books",
    ),
    "tracker.matching": (*ABOVE_ALGORITHMS, "tracker.books"),
}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_algorithm_layers_import_nothing_above_them() -> None:
    graph = import_graph(project_modules(REPO, ("tracker",)))
    offenders = {
        name: sorted(t for t in targets if any(_under(t, f) for f in forbidden))
        for layer, forbidden in LAYERS.items()
        for name, targets in graph.items()
        if _under(name, layer)
    }
    assert {n: t for n, t in offenders.items() if t} == {}
    assert all(any(_under(n, layer) for n in graph) for layer in LAYERS)  # each is there
