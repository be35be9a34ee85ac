"""Exports: the filtered match list (CSV, JSON) and one case's evidence report."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, cast

from flask import Blueprint, Response, render_template, request
from flask.typing import ResponseReturnValue

from tracker.reports import render_match_list
from tracker.store import Match, MatchQuery

from ..books import book_index
from ..core import MAX_EXPORT, bad_request, fail, parse_match_filters, records, work_choices
from ..evidence import MIME, REPORT_FORMATS, bundle_response, report_response
from ..ids import encode_id

bp = Blueprint("exports", __name__, url_prefix="/exports")


def all_matches(query: MatchQuery, limit: int = MAX_EXPORT) -> Iterator[Match]:
    """Every match the filters select (not only one page), up to ``limit``."""
    offset, batch = 0, 500
    while offset < limit:
        size = min(batch, limit - offset)
        rows = records().query_matches(replace(query, offset=offset, limit=size))
        yield from rows
        if len(rows) < batch:
            return
        offset += batch


class PrintableMatch:
    """A match whose ``id`` is its reference (``web.ids.encode_id``: URL-safe base64,
    as in ``/matches/<ref>`` and ``/api/v1/matches/<ref>``); every other attribute is
    the match's. A match id is ``suspect_id + U+001F + mother_id``: the separator is
    invisible or garbage in a spreadsheet, and no printable separator would be
    unambiguous (ids may hold any character). The suspect and work ids have their own
    columns."""

    def __init__(self, match: Match) -> None:
        self._match = match
        self.id = encode_id(match.id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._match, name)


def printable(matches: Iterable[Match]) -> Iterator[Match]:
    for m in matches:
        yield cast(Match, PrintableMatch(m))


def list_response(fmt: str) -> Response:
    with bad_request():
        query = parse_match_filters(request.args).query
    index = book_index()  # each match names its book and chapter (streamed, not listed)
    matches = (index.named(m) for m in all_matches(replace(query, offset=0)))
    body = render_match_list(printable(matches), fmt)
    response = Response(body, content_type=MIME[fmt])
    response.headers["Content-Disposition"] = f'attachment; filename="yinji-matches.{fmt}"'
    return response


@bp.get("/")
def index() -> ResponseReturnValue:
    try:
        query = parse_match_filters(request.args).query
        error = None
    except ValueError as exc:
        query, error = MatchQuery(), str(exc)
    return render_template(
        "exports.html",
        args=request.args,
        error=error,
        total=records().count_matches(query),
        works=work_choices(),
    )


@bp.get("/matches.csv")
def matches_csv() -> Response:
    return list_response("csv")


@bp.get("/matches.json")
def matches_json() -> Response:
    return list_response("json")


@bp.get("/reports/<id:match_id>.<fmt>")
def report(match_id: str, fmt: str) -> Response:
    if fmt == "zip":
        return bundle_response(match_id)
    if fmt not in REPORT_FORMATS:
        fail(404, f"reports are html, pdf, json or zip (the evidence bundle), not {fmt!r}")
    return report_response(match_id, fmt, download=request.args.get("download") == "1")
