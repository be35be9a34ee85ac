"""The shape of ``workers/`` (issue #41), held from its source (``bench/arch_workers.py``):
public functions and methods take and return real types (no ``Any``: TypedDicts and
dataclasses for payloads, ``tracker.records.JSONObject`` for JSON, ``object`` for what
a validator checks); no import circle among its modules, function-level imports
counted; no module over 700 lines; no reach past the tracker services into a library's
store, Redis or indexes."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from repo import REPO

sys.path.insert(0, str(REPO / "bench"))
from arch_metrics import public_signatures
from arch_workers import circles, measure

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
    m = measure(REPO)
    assert m.circles == []
    assert {k: v for k, v in m.modules.items() if v > 700} == {}
    assert {k: v for k, v in m.reach.items() if v} == {}


def test_the_circle_finder_sees_a_function_level_import(tmp_path: Path) -> None:
    package = tmp_path / "workers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from workers.b import x\ny = 1\n")
    (package / "b.py").write_text(
        "x = 1\ndef f() -> int:\n    from workers.a import y\n    return y\n"
    )
    (package / "c.py").write_text("from workers import a\n")
    assert measure(tmp_path).circles == [["workers.a", "workers.b"]]
    assert circles({"p": {"q"}, "q": set()}) == []
