"""Reading JSON request bodies without letting one hostile value sink a request.

``json.loads`` alone turns a body nested a thousand levels deep into a
``RecursionError`` and a 5,000-digit integer into a ``ValueError`` for the whole
body. Here:

- ``parse_body`` parses leniently where one value is the problem: an integer too long
  for Python is read as one outside the 64-bit range and ``NaN``/``Infinity`` as
  floats, so that the value's own item fails ``tracker.common.rules.check_json_value``
  instead of the request. What cannot be parsed at all (not JSON, not UTF-8, nested
  deeper than the parser can go) is a ``JsonBodyError``, answered 400 with the cause.
- ``clean`` checks one item with ``tracker.common.rules.check_json_value`` (depth at most
  ``MAX_JSON_DEPTH``, finite numbers, 64-bit integers; a ``ValueError`` naming where)
  and replaces lone surrogates by U+FFFD (no UTF-8 store can hold them). The API
  cleans each item of a batch on its own, so a bad item is that item's error.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

from pydantic import JsonValue

from tracker.common.rules import MAX_JSON_DEPTH, check_json_value

_SURROGATES = re.compile("[\ud800-\udfff]")
DEFAULT_MAX_JSON_BYTES = 32 * 1024 * 1024  # YINJI_MAX_JSON_MB (tracker.plumbing.config.WebSettings)
# Objects and lists of one body: an API import of 10,000 works with metadata has a few
# tens of thousands; 200,000 bound the parse's memory (about 14 MB of empty lists).
MAX_CONTAINERS = 200_000
_OUT_OF_RANGE = 2**64  # any integer outside the 64-bit range fails check_json_value


class JsonBodyError(ValueError):
    """The body is not JSON this API can read; the message says why."""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than sys.get_int_max_str_digits()
        return -_OUT_OF_RANGE if text.startswith("-") else _OUT_OF_RANGE


def parse_body(raw: bytes) -> JsonValue:
    """The JSON value of a request body (UTF-8, a BOM allowed)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JsonBodyError(
            f"the request body is not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        return json.loads(text, parse_int=_int)
    except RecursionError:
        raise JsonBodyError(
            f"the JSON body is nested too deeply: refused (at most {MAX_JSON_DEPTH} levels)"
        ) from None
    except json.JSONDecodeError as exc:
        raise JsonBodyError(
            f"the request body is not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None


def clean(value: JsonValue, where: str = "") -> JsonValue:
    """``value`` checked by ``tracker.common.rules.check_json_value`` (``ValueError`` naming
    ``where``), as a copy with lone surrogates replaced."""
    check_json_value(value, where)
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:  # no recursion; the depth is bounded by the check above
        item, parent, key = stack.pop()
        if isinstance(item, str):
            parent[key] = _SURROGATES.sub("\ufffd", item)
        elif isinstance(item, list):
            out_list: list[Any] = [None] * len(item)
            parent[key] = out_list
            stack.extend((v, out_list, i) for i, v in enumerate(item))
        elif isinstance(item, dict):
            out_dict: dict[str, Any] = {}
            parent[key] = out_dict
            for k, v in item.items():
                k = _SURROGATES.sub("\ufffd", k)
                out_dict[k] = None
                stack.append((v, out_dict, k))
        else:
            parent[key] = item
    return root[0]


def body_size_problem(raw: bytes) -> str | None:
    """Why a body within the byte limit is still refused before parsing, or None:
    more than ``MAX_CONTAINERS`` objects and lists (each ``{`` and ``[`` byte counted,
    those inside strings too: an upper bound). A parsed container costs 50-70 bytes
    for the 2 bytes of ``[],``; this bounds the parse at a few hundred MB whatever
    the body holds."""
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > MAX_CONTAINERS:
        return (
            f"the JSON body holds up to {containers:,} objects and lists, over the "
            f"{MAX_CONTAINERS:,} allowed: send big imports as files (multipart)"
        )
    return None


def read_limited(stream: IO[bytes], limit: int) -> bytes | None:
    """At most ``limit`` bytes of ``stream`` read in chunks; None when it holds more
    (a body without a length, chunked: refused without holding more than the limit)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(1024 * 1024, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None


def request_json() -> JsonValue:
    """The current request's JSON body for the API: 415 when it is not sent as JSON,
    413 when it is over ``YINJI_MAX_JSON_MB`` (by its ``Content-Length``, before any of
    it is read; without one, as soon as the bytes read pass the limit) or holds too
    many containers (``body_size_problem``), 400 naming why it cannot be read
    (``parse_body``). Items in it are cleaned one by one by the handlers (``clean``)."""
    from flask import current_app, request

    from .core import fail

    if not request.is_json:
        fail(415, "send JSON with 'Content-Type: application/json'")
    limit = int(current_app.config.get("YINJI_MAX_JSON_BYTES") or DEFAULT_MAX_JSON_BYTES)
    too_big = (
        f"the JSON body is over the {limit // (1024 * 1024)} MB allowed (YINJI_MAX_JSON_MB): "
        "send big imports as files (multipart .jsonl or .txt), or split them"
    )
    length = request.content_length
    if length is not None and length > limit:
        fail(413, f"{too_big}; it has {length:,} bytes")
    raw = read_limited(request.stream, limit)
    if raw is None:
        fail(413, too_big)
        raise AssertionError("unreachable")  # fail() raises
    problem = body_size_problem(raw)
    if problem is not None:
        fail(413, problem)
    try:
        return parse_body(raw)
    except JsonBodyError as exc:
        fail(400, str(exc))
