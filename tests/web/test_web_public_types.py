"""web's public signatures take and return real types, as tracker's do
(``tests/tracker/test_public_types.py``): a view answers ``flask.typing.ResponseReturnValue``,
JSON is ``tracker.records.JSONObject`` or a pydantic model of ``web.apimodels``, a value a
check reads first is ``object``. Public: ``bench/arch_metrics.public_signatures``.
"""

from __future__ import annotations

import ast
import sys

import pytest
from repo import REPO

sys.path.insert(0, str(REPO / "bench"))
from arch_metrics import measure_web, public_signatures

# Modules other work of issue #41 edits in parallel (the evidence view, the matches pages,
# the uploads); they join the rule when that work lands.
NOT_YET = {
    "web/highlight.py",
    "web/handlers/matches.py",
    "web/uploads.py",
    "web/handlers/library.py",
}


def _modules() -> list[str]:
    return [
        p.relative_to(REPO).as_posix()
        for p in sorted((REPO / "web").rglob("*.py"))
        if "__pycache__" not in p.parts
    ]


def test_every_web_module_is_read() -> None:
    modules = _modules()
    assert {"web/__init__.py", "web/handlers/api.py", "web/apimodels/works.py"} <= set(modules)
    assert len(set(modules) - NOT_YET) > 35


@pytest.mark.parametrize("rel", [m for m in _modules() if m not in NOT_YET])
def test_no_any_in_public_signatures(rel: str) -> None:
    tree = ast.parse((REPO / rel).read_text(encoding="utf-8"), filename=rel)
    offenders = [name for name, with_any in public_signatures(tree) if with_any]
    assert offenders == [], (
        f"{rel}: public signatures mention Any: {offenders} (use a real type: "
        "ResponseReturnValue for a view, JSONObject or an API model for JSON, object)"
    )


def test_web_is_small_and_has_no_import_circle() -> None:
    """No web module over 700 lines; no two web modules import each other, however
    indirectly (imports inside functions count)."""
    metrics = measure_web(REPO)
    assert {m: n for m, n in metrics.modules.items() if n > 700} == {}
    assert metrics.circles == []


def test_web_reads_no_part_of_the_library() -> None:
    """Web calls services: it reads no ``.store``, ``.redis`` or ``.indexes`` of the
    library (``web.core.store`` is the one door to the records, counted apart)."""
    metrics = measure_web(REPO)
    reach = {m: n for m, n in metrics.reach.items() if n and m != "web/evidence.py"}
    assert reach == {"web/core.py": 1}


def test_the_circle_finder_sees_a_circle() -> None:
    from arch_metrics import circles

    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
