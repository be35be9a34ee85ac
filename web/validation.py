"""Requests checked by the API's models (``web.apimodels``): a bad request is a 400
whose message names the field and what is wrong with it."""

from __future__ import annotations

from typing import TypeVar

from flask import request
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .core import fail
from .jsonbody import clean, request_json

Model = TypeVar("Model", bound=BaseModel)

_SAYS = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "missing": "is required",
}


def _name(loc: tuple[int | str, ...]) -> str:
    """A field's place: ``note``, ``cases[2]``; a short name is quoted (``'to'``)."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return f"'{text}'" if len(text) <= 2 else text


def _problem(error: ErrorDetails) -> str:
    name = _name(error["loc"])
    kind = error["type"]
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "")
        allowed = str(expected).replace("'", "").replace(" or ", ", ")
        return f"{name} must be one of {allowed}, got {error['input']!r}"
    if kind in _SAYS:
        return f"{name} {_SAYS[kind]}"
    message = error["msg"][:1].lower() + error["msg"][1:]
    return f"{name}: {message}"


def describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line naming every bad field of ``exc``; unknown fields are listed together
    with the ones ``model`` takes."""
    unknown = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
    parts = [_problem(e) for e in exc.errors() if e["type"] != "extra_forbidden"]
    if unknown:
        allowed = ", ".join(model.model_fields)
        parts.insert(0, f"unknown field(s) {', '.join(sorted(unknown))}: only {allowed}")
    return "; ".join(parts)


def query_as(model: type[Model]) -> Model:
    """The current request's query string as ``model`` (a parameter given empty is
    left out; those the model does not name are ignored); 400 naming the bad ones."""
    raw = {k: v.strip() for k, v in request.args.items() if v.strip()}
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        fail(400, describe(exc, model))


def body_as(model: type[Model]) -> Model:
    """The current request's JSON body (``web.jsonbody.request_json``: 415, 413, 400
    when it cannot be read) as ``model``; 400 naming the bad fields otherwise."""
    raw = request_json()
    if not isinstance(raw, dict):
        fail(400, f"send an object: {{{', '.join(model.model_fields)}}}")
    try:
        body = clean(raw)
    except ValueError as exc:
        fail(400, str(exc))
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        fail(400, describe(exc, model))
