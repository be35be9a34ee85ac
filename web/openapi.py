"""The OpenAPI 3.1 document of ``/api/v1`` (served at ``/api/v1/openapi.json``), written
from the routes and their typed models.

A view of the API says what it takes and what it answers with ``@operation(...)``:
a query model, a body model (pydantic, in ``web.apimodels``) and a model per status.
The same models check the requests (``web.validation``). ``openapi_document`` walks the
app's routes, puts every model's JSON schema (pydantic) under ``components/schemas`` and
the operations under ``paths`` with apispec; the document therefore cannot name a
route the app does not have, nor a field the models do not declare (docs/API.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from apispec import APISpec
from flask import Flask
from pydantic import BaseModel, JsonValue
from pydantic.json_schema import models_json_schema

from .apimodels.base import Error

API_VERSION = "1"
_SECURITY = "bearerAuth"
_CACHE = "yinji_openapi"  # app.extensions key of the written document
_RULE_ARGUMENT = re.compile(r"<(?:(\w+)(?:\([^)]*\))?:)?(\w+)>")
_METHODS = ("get", "post", "put", "patch", "delete")

Schema = dict[str, JsonValue]
View = TypeVar("View", bound=Callable[..., object])


@dataclass(frozen=True)
class Reply:
    """One answer of an operation: its description, its JSON model (None: no JSON
    body), and the schemas of other media types it may be sent as (files)."""

    description: str
    model: type[BaseModel] | None = None
    media: Mapping[str, Schema] = field(default_factory=dict)


@dataclass(frozen=True)
class PathParam:
    """How a path argument is documented: its name in the document and its schema."""

    name: str
    description: str = ""
    schema: Schema = field(default_factory=lambda: {"type": "string"})


#: ``<id:…>`` (web.ids.IdConverter) is documented as ``{id}``.
ID_PARAM = PathParam(
    "id",
    "URL-safe base64 (no padding) of the UTF-8 id; for a match, of "
    "suspect_id + U+001F + mother_id (the match's `ref` field)",
    {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
)


@dataclass(frozen=True)
class Operation:
    """What one view takes and answers (``operation``)."""

    summary: str
    responses: Mapping[int, Reply]
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    form: type[BaseModel] | None = None
    public: bool = False
    path: Mapping[str, PathParam] = field(default_factory=dict)


_OPERATIONS: dict[object, Operation] = {}
_ALSO: dict[type[BaseModel], None] = {}


def document_also(*models: type[BaseModel]) -> None:
    """Put ``models`` under ``components/schemas`` though no operation names them (a
    job's ``result``, whose shape depends on the job's kind)."""
    _ALSO.update(dict.fromkeys(models))


def operation(
    summary: str,
    responses: Mapping[int, Reply],
    *,
    query: type[BaseModel] | None = None,
    body: type[BaseModel] | None = None,
    form: type[BaseModel] | None = None,
    public: bool = False,
    path: Mapping[str, PathParam] | None = None,
) -> Callable[[View], View]:
    """Describe the view below it (put it right under the route decorator). ``body``
    is the JSON body's model, ``form`` a multipart alternative; ``public`` views need
    no token; ``path`` names and describes path arguments (default: as in the rule)."""

    def describe(view: View) -> View:
        _OPERATIONS[view] = Operation(summary, responses, query, body, form, public, path or {})
        return view

    return describe


def error(description: str) -> Reply:
    """An error answer (``{"error": "..."}``)."""
    return Reply(description, Error)


AUTH_ERRORS = {401: error("Missing or invalid token"), 403: error("Your role does not allow this")}


def _models(ops: list[Operation]) -> list[type[BaseModel]]:
    found: dict[type[BaseModel], None] = {Error: None, **_ALSO}
    for op in ops:
        for model in (op.body, op.form, *(r.model for r in op.responses.values())):
            if model is not None:
                found[model] = None
    return list(found)


def _path(rule: str, names: Mapping[str, PathParam]) -> tuple[str, list[Schema]]:
    params: list[Schema] = []

    def replace(m: re.Match[str]) -> str:
        converter, variable = m.group(1), m.group(2)
        param = names.get(variable) or (ID_PARAM if converter == "id" else PathParam(variable))
        params.append(
            {
                "name": param.name,
                "in": "path",
                "required": True,
                "description": param.description,
                "schema": param.schema,
            }
        )
        return "{" + param.name + "}"

    return _RULE_ARGUMENT.sub(replace, rule), params


def _query(model: type[BaseModel], components: dict[str, Schema]) -> list[Schema]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.get("$defs")
    if isinstance(defs, dict):
        components.update({k: v for k, v in defs.items() if isinstance(v, dict)})
    required = schema.get("required")
    properties = schema.get("properties")
    assert isinstance(properties, dict)
    params: list[Schema] = []
    for name, prop in properties.items():
        assert isinstance(prop, dict)
        description = prop.pop("description", None)
        prop.pop("title", None)
        param: Schema = {"name": name, "in": "query", "schema": prop}
        if isinstance(required, list) and name in required:
            param["required"] = True
        if description:
            param["description"] = description
        params.append(param)
    return params


def _operation(op: Operation, refs: Mapping[object, Schema], params: list[Schema]) -> Schema:
    responses: Schema = {}
    for status, reply in sorted({**op.responses, **({} if op.public else AUTH_ERRORS)}.items()):
        content: Schema = {}
        if reply.model is not None:
            content["application/json"] = {"schema": refs[reply.model]}
        for media, schema in reply.media.items():
            content[media] = {"schema": schema}
        responses[str(status)] = {"description": reply.description}
        if content:
            responses[str(status)] = {"description": reply.description, "content": content}
    out: Schema = {"summary": op.summary, "responses": responses}
    if params:
        out["parameters"] = list(params)
    body: Schema = {}
    if op.body is not None:
        body["application/json"] = {"schema": refs[op.body]}
    if op.form is not None:
        body["multipart/form-data"] = {"schema": refs[op.form]}
    if body:
        out["requestBody"] = {"required": True, "content": body}
    if op.public:
        out["security"] = []
    return out


def openapi_document(app: Flask, server: str = "") -> dict[str, object]:
    """The OpenAPI document of ``app``'s documented routes (``operation``), its server
    ``server`` (default ``/``). Written once per app (the routes do not change after
    start; writing it takes about 0.1 s of CPU, and anyone may ask for it)."""
    written = app.extensions.get(_CACHE)
    if not isinstance(written, dict):
        written = app.extensions[_CACHE] = _write(app)
    head = {"openapi": written["openapi"], "info": written["info"]}
    return {**head, "servers": [{"url": server or "/"}], **written}


def _write(app: Flask) -> dict[str, object]:
    described = [
        (rule, _OPERATIONS[view])
        for rule in app.url_map.iter_rules()
        if (view := app.view_functions.get(rule.endpoint)) in _OPERATIONS
    ]
    ops = [op for _, op in described]
    keys, defs = models_json_schema(
        [(model, "validation") for model in _models(ops)],
        ref_template="#/components/schemas/{model}",
    )
    refs: dict[object, Schema] = {model: dict(ref) for (model, _mode), ref in keys.items()}
    components: dict[str, Schema] = {
        name: schema for name, schema in defs.get("$defs", {}).items() if isinstance(schema, dict)
    }
    paths: dict[str, dict[str, Schema]] = {}
    for rule, op in sorted(described, key=lambda d: d[0].rule):
        path, params = _path(rule.rule, op.path)
        if op.query is not None:
            params = params + _query(op.query, components)
        for method in _METHODS:
            if method.upper() in (rule.methods or ()):
                paths.setdefault(path, {})[method] = _operation(op, refs, params)
    spec = APISpec(
        title="音迹 Yinji API",
        # The API's version, not the software's: this document is public, and like the
        # Server header it names no version an attacker could look up.
        version=API_VERSION,
        openapi_version="3.1.0",
        info={
            "description": "Content-copyright fingerprint tracking for Chinese text: upload "
            "works, check suspect pages, review matches, download evidence reports, follow "
            "takedown cases from the notice to the removal."
        },
        security=[{_SECURITY: []}],
    )
    spec.components.security_scheme(
        _SECURITY,
        {
            "type": "http",
            "scheme": "bearer",
            "description": "Token from `yinji user token NAME` or the account page",
        },
    )
    for name in sorted(components):
        spec.components.schema(name, components[name])
    for path in sorted(paths):
        spec.path(path=path, operations=paths[path])
    return dict(spec.to_dict())
