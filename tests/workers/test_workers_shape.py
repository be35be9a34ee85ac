"""The shape of ``workers/``, held from its source (``tests/support/structure.py``):
public functions and methods take and return real types (no ``Any``: TypedDicts and
dataclasses for payloads, ``tracker.common.records.JSONObject`` for JSON, ``object`` for what
a validator checks); no import circle among its modules, function-level imports
counted; no module over 700 lines; no reach past the tracker services into a library's
store, Redis or indexes."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from repo import REPO
from structure import circles, import_graph, project_modules, reach_throughs

sys.path.insert(0, str(REPO / "bench"))
from arch_metrics import public_signatures

MODULES = sorted(p for p in (REPO / "workers").rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_is_read() -> None:
    names = {p.relative_to(REPO).as_posix() for p in MODULES}
    assert {"workers/jobs.py", "workers/tasks/ingest.py", "workers/heartbeat.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_any_in_public_signatures(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    offenders = [name for name, with_any in public_signatures(tree) if with_any]
    assert offenders == [], f"{path.name}: public signatures mention Any: {offenders}"


def test_no_import_circle_no_big_module_no_reach_through() -> None:
    modules = {
        n: m for n, m in project_modules(REPO, ("workers",)).items() if n.startswith("workers")
    }
    assert circles(import_graph(modules)) == []
    assert {n: m.lines for n, m in modules.items() if m.lines > 700} == {}
    reach = {n: reach_throughs(m) for n, m in modules.items()}
    assert {n: lines for n, lines in reach.items() if lines} == {}


def test_the_reach_finder_sees_a_store_read(tmp_path: Path) -> None:
    package = tmp_path / "workers"
    package.mkdir()
    (package / "a.py").write_text("def f(lib):\n    return lib.store.count()\n")
    module = project_modules(tmp_path, ("workers",))["workers.a"]
    assert reach_throughs(module) == [2]
