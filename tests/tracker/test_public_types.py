"""Issue #27's ratchet: the public signatures of the tracker modules cleaned of ``Any``
stay without it. A public function or method (``bench/arch_metrics.public_signatures``:
names and class names without a leading underscore, ``__init__`` included) takes and
returns real types: ``tracker.common.records.JSONValue``/``JSONObject`` for JSON, TypedDicts
for stored records, dataclasses for results, ``object`` for a value a validator checks.

All of ``tracker/`` is covered; a new module is checked as soon as it exists.
"""

from __future__ import annotations

import ast
import sys

import pytest
from repo import REPO

sys.path.insert(0, str(REPO / "bench"))
from arch_metrics import public_signatures

# All of tracker is clean (issue #27 done): every module stays so.
CLEANED = ("tracker/",)


def _cleaned_modules() -> list[str]:
    out = []
    for path in sorted((REPO / "tracker").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in CLEANED):
            out.append(rel)
    return out


def test_cleaned_modules_exist() -> None:
    modules = _cleaned_modules()
    assert "tracker/library.py" in modules and "tracker/cases/model.py" in modules
    assert len(modules) > 50


@pytest.mark.parametrize("rel", _cleaned_modules())
def test_no_any_in_public_signatures(rel: str) -> None:
    tree = ast.parse((REPO / rel).read_text(encoding="utf-8"), filename=rel)
    offenders = [name for name, with_any in public_signatures(tree) if with_any]
    assert offenders == [], (
        f"{rel}: public signatures mention Any: {offenders} (use a real type: "
        "tracker.common.records.JSONValue/JSONObject, a TypedDict, a dataclass, object)"
    )


def test_the_scanner_sees_any_where_it_hides() -> None:
    source = (
        "from typing import Any\n"
        "def ok(x: int) -> str: ...\n"
        "def arg(x: dict[str, Any]) -> None: ...\n"
        "def result() -> list[Any] | None: ...\n"
        "def star(*args: int, **kw: Any) -> None: ...\n"
        "def _private(x: Any) -> Any: ...\n"
        "class C:\n"
        "    def __init__(self, client: Any) -> None: ...\n"
        "    def __repr__(self) -> Any: ...\n"
        "    def method(self) -> 'int': ...\n"
        "class _Hidden:\n"
        "    def method(self, x: Any) -> None: ...\n"
    )
    found = dict(public_signatures(ast.parse(source)))
    assert found == {
        "ok": False,
        "arg": True,
        "result": True,
        "star": True,
        "C.__init__": True,
        "C.method": False,
    }
