"""Exports: the filtered match list (CSV, JSON) and one case's evidence report."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from flask import Blueprint, Response, render_template, request

from tracker.reports import build_report, render_match_list
from tracker.store import Match, MatchQuery, NotFound

from ..core import MAX_EXPORT, fail, library, parse_match_filters, store, work_choices
from ..security import REPORT_CSP

bp = Blueprint("exports", __name__, url_prefix="/exports")

MIME = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "pdf": "application/pdf",
}


def all_matches(query: MatchQuery, limit: int = MAX_EXPORT) -> Iterator[Match]:
    """Every match the filters select (not only one page), up to ``limit``."""
    offset, batch = 0, 500
    while offset < limit:
        size = min(batch, limit - offset)
        rows = store().query_matches(replace(query, offset=offset, limit=size))
        yield from rows
        if len(rows) < batch:
            return
        offset += batch


def case_name(match_id: str) -> str:
    """An ASCII file name for a case: ids may hold anything, headers may not."""
    return "yinji-evidence-" + hashlib.sha256(match_id.encode("utf-8")).hexdigest()[:12]


def report_response(match_id: str, fmt: str, *, download: bool) -> Response:
    try:
        body = build_report(library(), match_id, fmt)
    except (NotFound, KeyError):
        fail(404, "no such match")
    response = Response(body, content_type=MIME[fmt])
    disposition = "attachment" if download or fmt == "pdf" else "inline"
    filename = f"{case_name(match_id)}.{fmt}"
    response.headers["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    if fmt == "html":
        response.headers["Content-Security-Policy"] = REPORT_CSP
    return response


def list_response(fmt: str) -> Response:
    try:
        query = parse_match_filters(request.args).query
    except ValueError as exc:
        fail(400, str(exc))
    body = render_match_list(all_matches(replace(query, offset=0)), fmt)
    response = Response(body, content_type=MIME[fmt])
    response.headers["Content-Disposition"] = f'attachment; filename="yinji-matches.{fmt}"'
    return response


@bp.get("/")
def index() -> Any:
    try:
        query = parse_match_filters(request.args).query
        error = None
    except ValueError as exc:
        query, error = MatchQuery(), str(exc)
    return render_template(
        "exports.html",
        args=request.args,
        error=error,
        total=store().count_matches(query),
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
    if fmt not in ("html", "pdf", "json"):
        fail(404, f"reports are html, pdf or json, not {fmt!r}")
    return report_response(match_id, fmt, download=request.args.get("download") == "1")
