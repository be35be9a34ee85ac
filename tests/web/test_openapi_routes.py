"""The OpenAPI document (web/openapi.py, written from the routes' models) cannot drift
from the routes: every /api/v1 route is documented with exactly its methods, and no
documented path or method is missing from Flask's url_map. Needs no worker: the app is
built, never served."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask

from tracker.plumbing.config import Settings

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _template(path: str) -> str:
    """A path with its parameters unnamed: ``/a/<id:match_id>.<fmt>`` and
    ``/a/{id}.{format}`` are both ``/a/{}.{}``."""
    return re.sub(r"\{[^}]*\}", "{}", re.sub(r"<[^>]*>", "{}", path))


def _routes(app: Flask) -> dict[str, set[str]]:
    routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        methods = {m.lower() for m in rule.methods or ()} - {"head", "options"}
        routes.setdefault(_template(rule.rule), set()).update(methods)
    return routes


def _documented(doc: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path, item in doc["paths"].items():
        out.setdefault(_template(path), set()).update(set(item) & HTTP_METHODS)
    return out


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    from web import create_app

    data_dir: Path = tmp_path_factory.mktemp("openapi") / "data"
    return create_app(Settings(data_dir=data_dir), testing=True)


def test_every_api_route_is_documented_with_its_methods(app: Flask) -> None:
    from web.openapi import openapi_document

    routes = _routes(app)
    documented = _documented(openapi_document(app))
    api = {path: methods for path, methods in routes.items() if path.startswith("/api/v1/")}
    assert len(api) >= 15  # works, checks, jobs, matches, reports, cases...
    undocumented = {
        path: sorted(methods - documented.get(path, set()))
        for path, methods in api.items()
        if methods - documented.get(path, set())
    }
    assert undocumented == {}


def test_no_documented_route_is_missing(app: Flask) -> None:
    from web.openapi import openapi_document

    routes = _routes(app)
    missing = {
        path: sorted(methods - routes.get(path, set()))
        for path, methods in _documented(openapi_document(app)).items()
        if methods - routes.get(path, set())
    }
    assert missing == {}


def test_the_check_sees_a_drift() -> None:
    """The comparison itself: a route the document lacks, a method it invents."""
    app = Flask(__name__)
    app.add_url_rule("/api/v1/x/<int:n>", "x", lambda n: "", methods=["GET", "POST"])
    doc = {"paths": {"/api/v1/x/{n}": {"get": {}, "delete": {}, "parameters": []}}}
    assert _routes(app)["/api/v1/x/{}"] == {"get", "post"}
    assert _documented(doc)["/api/v1/x/{}"] == {"get", "delete"}


def test_every_time_in_the_document_is_one_format(app: Flask) -> None:
    """Each time property is described as the API writes it (``…T09:26:15.794Z``)."""
    from web.openapi import openapi_document

    times: dict[str, dict] = {}

    def walk(value: object, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "properties" and isinstance(item, dict):
                    for name, schema in item.items():
                        if re.search(r"(^|_)(at|created|since|until)$", name):
                            times[f"{where}.{name}"] = schema
                walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")

    walk(openapi_document(app), "")
    assert len(times) >= 10  # works, matches, cases, their URLs and history
    for where, schema in times.items():
        assert schema.get("format") == "date-time", where
        assert "2026-11-25T09:26:15.794Z" in schema.get("description", ""), where
