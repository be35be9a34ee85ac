"""One rule, one place: the verdict list (``tracker.common.records.VERDICTS``) is what every
surface offers and accepts, and no module retypes it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from repo import REPO

# Written out here, not read from the code: the test fails if the list changes silently.
THE_VERDICTS = {"pending", "confirmed", "dismissed"}


def _enums_of(key: str, value: Any) -> Iterator[list[Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            named = k == key or (k == "schema" and value.get("name") == key)
            # A nullable field is {"anyOf": [{"enum": [...]}, {"type": "null"}]}.
            choices = [v, *v.get("anyOf", [])] if named and isinstance(v, dict) else []
            enums = [c["enum"] for c in choices if isinstance(c, dict) and "enum" in c]
            if enums:
                yield from enums
            else:
                yield from _enums_of(key, v)
    elif isinstance(value, list):
        for item in value:
            yield from _enums_of(key, item)


def test_every_surface_uses_the_one_verdict_list(tmp_path: Path) -> None:
    from tracker.cases.cli import verdict as verdict_cmd
    from tracker.common.records import VERDICTS
    from tracker.plumbing.config import Settings
    from tracker.reports import VERDICT_LABELS as REPORT_LABELS
    from web import create_app
    from web.charts import VERDICT_COLOURS
    from web.core import VERDICT_LABELS
    from web.openapi import openapi_document

    assert set(VERDICTS) == THE_VERDICTS and len(VERDICTS) == 3
    assert tuple(VERDICT_LABELS) == VERDICTS  # form options, tabs and badges in this order
    assert set(VERDICT_COLOURS) == set(REPORT_LABELS) == THE_VERDICTS
    app = create_app(Settings(data_dir=tmp_path / "data"), testing=True)
    enums = list(_enums_of("verdict", openapi_document(app)))
    assert len(enums) >= 3  # the query filter, the match schema and the PATCH body
    assert all(enum == list(VERDICTS) for enum in enums), enums
    choice = next(p for p in verdict_cmd.params if p.name == "verdict")
    assert tuple(choice.type.choices) == VERDICTS  # type: ignore[attr-defined]


def test_no_module_retypes_the_verdict_list() -> None:
    # Three verdict names in one literal list, tuple or set, in any order.
    name = r"""["'](?:pending|confirmed|dismissed)["']"""
    retyped = re.compile(rf"[\[\(\{{]\s*{name}\s*,\s*{name}\s*,\s*{name}\s*[\]\)\}}]")
    offenders = [
        str(path.relative_to(REPO))
        for package in ("tracker", "web", "workers")
        for path in (REPO / package).rglob("*")
        if path.suffix in {".py", ".html", ".j2"}
        and path != REPO / "tracker" / "common" / "records.py"
        and retyped.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
