"""web's public signatures take and return real types, as tracker's do
(``tests/tracker/test_public_types.py``): a view answers ``flask.typing.ResponseReturnValue``,
JSON is ``tracker.common.records.JSONObject`` or a pydantic model of ``web.apimodels``, a value a
check reads first is ``object``. Public: ``bench/arch_metrics.public_signatures``.
"""

from __future__ import annotations

import ast
import sys

import pytest
from repo import REPO
from structure import project_modules, reach_throughs

sys.path.insert(0, str(REPO / "bench"))
from arch_metrics import public_signatures


def _modules() -> list[str]:
    return [
        p.relative_to(REPO).as_posix()
        for p in sorted((REPO / "web").rglob("*.py"))
        if "__pycache__" not in p.parts
    ]


def test_every_web_module_is_read() -> None:
    modules = _modules()
    assert {"web/__init__.py", "web/handlers/api.py", "web/apimodels/works.py"} <= set(modules)
    assert len(modules) > 35


@pytest.mark.parametrize("rel", _modules())
def test_no_any_in_public_signatures(rel: str) -> None:
    tree = ast.parse((REPO / rel).read_text(encoding="utf-8"), filename=rel)
    offenders = [name for name, with_any in public_signatures(tree) if with_any]
    assert offenders == [], (
        f"{rel}: public signatures mention Any: {offenders} (use a real type: "
        "ResponseReturnValue for a view, JSONObject or an API model for JSON, object)"
    )


def test_web_reads_no_part_of_the_library() -> None:
    """Web calls services: it reads no ``.store``, ``.redis`` or ``.indexes`` of the
    library anywhere; its records come through ``web.core.records()``
    (``tracker.services.records.LibraryRecords``)."""
    reach = {
        name: lines
        for name, module in project_modules(REPO, ("web",)).items()
        if (lines := reach_throughs(module))
    }
    assert reach == {}, reach


def test_no_web_module_calls_a_store_door() -> None:
    """No ``store()`` call is left in web (the door ``web.core.store()`` is gone)."""
    calls = [
        f"{name}:{node.lineno}"
        for name, module in project_modules(REPO, ("web",)).items()
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "store"
    ]
    assert calls == [], calls
    import web.core

    assert not hasattr(web.core, "store")
    assert callable(web.core.records)
