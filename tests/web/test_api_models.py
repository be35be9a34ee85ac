"""The API's models are its description and its checks: a bad body is a 400 naming
the field, and what the API answers is what its models say (no field they do not
declare, none of another type)."""

from __future__ import annotations

import types
import typing
from typing import Any, get_args

import pytest
from flask.testing import FlaskClient
from pydantic import BaseModel, ValidationError
from textgen import work
from webkit import WebSystem, wait_job, web_system

from web.ids import encode_id

system = web_system()

WORK = work(717, 18)


def auth(system: WebSystem, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens[role]}"}


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def undeclared(model: type[BaseModel], data: object, where: str = "") -> list[str]:
    """The keys of ``data`` (recursively) that ``model`` does not declare; models that
    allow more (``extra="allow"``) are read for their declared fields only."""
    if not isinstance(data, dict):
        return []
    out = []
    if model.model_config.get("extra") != "allow":
        out = [f"{where}{k}" for k in data if k not in model.model_fields]
    for name, field in model.model_fields.items():
        value = data.get(name)
        for inner in _models_in(field.annotation):
            origin = typing.get_origin(field.annotation)
            if isinstance(value, list):
                for i, item in enumerate(value):
                    out += undeclared(inner, item, f"{where}{name}[{i}].")
            elif isinstance(value, dict) and origin is dict:
                for key, item in value.items():
                    out += undeclared(inner, item, f"{where}{name}[{key}].")
            elif origin in (None, types.UnionType, typing.Union):
                out += undeclared(inner, value, f"{where}{name}.")
    return out


def test_undeclared_sees_a_renamed_field() -> None:
    from web.apimodels.matches import MatchList

    good = {"total": 1, "matches": [{"id": "a", "score": 0.5, "regions": [{"excluded": []}]}]}
    assert undeclared(MatchList, good) == []
    bad = {"total": 1, "matches": [{"id": "a", "scores": 0.5, "regions": [{"gone": 1}]}]}
    assert undeclared(MatchList, bad) == ["matches[0].scores", "matches[0].regions[0].gone"]


@pytest.fixture(scope="module")
def client(system: WebSystem) -> FlaskClient:
    """A work, a checked copy of it with a URL, and its match confirmed (a case)."""
    client = system.app.test_client()
    analyst = auth(system, "analyst")
    done = client.post(
        "/api/v1/mothers",
        headers=analyst,
        json={"documents": [{"id": "model-work", "title": "模型作品", "text": WORK}]},
    )
    assert wait_job(client, done.get_json()["job_id"], headers=analyst)["state"] == "SUCCESS"
    text = {"id": "model-copy", "text": WORK[40:800], "url": "https://copy.example.org/1"}
    done = client.post("/api/v1/checks", headers=analyst, json={"texts": [text]})
    assert wait_job(client, done.get_json()["job_id"], headers=analyst)["state"] == "SUCCESS"
    ref = encode_id("model-copy\x1fmodel-work")
    confirmed = client.patch(
        f"/api/v1/matches/{ref}", headers=analyst, json={"verdict": "confirmed"}
    )
    assert confirmed.status_code == 200 and confirmed.get_json()["case_id"]
    return client


def _answers(client: FlaskClient, system: WebSystem) -> dict[str, Any]:
    viewer = auth(system, "viewer")
    case_id = client.get("/api/v1/cases", headers=viewer).get_json()["cases"][0]["id"]
    paths = [
        "/api/v1/mothers",
        f"/api/v1/mothers/{encode_id('model-work')}",
        "/api/v1/matches",
        f"/api/v1/matches/{encode_id('model-copy' + chr(31) + 'model-work')}",
        "/api/v1/cases",
        "/api/v1/cases/sites",
        f"/api/v1/cases/{case_id}",
        f"/api/v1/cases/{case_id}/notice?lang=en",
        "/api/v1/watch",
        "/api/v1/watch/books",
        "/api/v1/books",
        "/api/v1/discover",
        "/api/v1/discover/runs",
        "/api/v1/discover/sites",
        "/healthz",
    ]
    return {path: client.get(path, headers=viewer) for path in paths}


def test_every_answer_is_what_its_model_says(client: FlaskClient, system: WebSystem) -> None:
    from web.openapi import _OPERATIONS

    app = system.app
    adapter = app.url_map.bind("localhost")
    answers = _answers(client, system)
    problems: dict[str, object] = {}
    for path, response in answers.items():
        endpoint, _ = adapter.match(path.split("?")[0], method="GET")
        reply = _OPERATIONS[app.view_functions[endpoint]].responses[response.status_code]
        assert reply.model is not None, path
        body = response.get_json()
        try:
            reply.model.model_validate(body)  # every declared field of its type
        except ValidationError as exc:
            problems[path] = str(exc)
        if undeclared(reply.model, body):
            problems[path] = undeclared(reply.model, body)
    assert problems == {}
    assert len(answers) == 15


@pytest.mark.parametrize(
    ("method", "path", "body", "message"),
    [
        ("patch", "/api/v1/matches/{match}", {"verdict": "maybe"}, "verdict must be one of"),
        ("patch", "/api/v1/matches/{match}", {"note": 5}, "note must be a string"),
        ("patch", "/api/v1/matches/{match}", {"score": 1}, "unknown field(s) score: only"),
        ("patch", "/api/v1/matches/{match}", [1], "send an object: {verdict, note}"),
        ("post", "/api/v1/cases/c0/transitions", {}, "'to' is required"),
        ("post", "/api/v1/cases/c0/notes", {"note": ["x"]}, "note must be a string"),
        ("post", "/api/v1/cases/c0/notice", {"format": "pdf", "lang": "fr"}, "lang must be"),
        (
            "post",
            "/api/v1/cases/c0/notice",
            {"format": "pdf", "lang": "zh", "evidence": "yes"},
            "evidence must be true or false",
        ),
        ("post", "/api/v1/watch", {"kind": "site"}, "url is required"),
        ("post", "/api/v1/discover/sites", {"url": 7}, "url must be a string"),
        ("post", "/api/v1/discover/runs", {"max_works": 0}, "max_works: input should be"),
        ("patch", "/api/v1/books/{book}", {"title": None}, "title: must be a string"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(
    system: WebSystem, method: str, path: str, body: object, message: str
) -> None:
    url = path.format(match=encode_id("no\x1fsuch"), book=encode_id("no-book"))
    response = getattr(system.app.test_client(), method)(
        url, headers=auth(system, "analyst"), json=body
    )
    assert response.status_code == 400, (url, response.get_json())
    assert message in response.get_json()["error"], response.get_json()


def test_the_watch_kinds_are_the_trackers() -> None:
    from tracker.cases.watching import WATCH_KINDS
    from web.apimodels.watch import WatchKind

    assert get_args(WatchKind) == WATCH_KINDS
