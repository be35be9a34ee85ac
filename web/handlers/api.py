"""REST API under ``/api/v1`` (see docs/API.md and ``/api/v1/openapi.json``).

Authentication: ``Authorization: Bearer <token>`` (or the browser session, then
with the ``X-CSRF-Token`` header on writes). Errors are ``{"error": "..."}`` with a
status code that fits. Ids in paths are URL-safe base64 (see ``web.ids``).
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, jsonify, request, url_for

from tracker.rules import check_document_item, check_note, check_text_item, check_url, check_verdict
from tracker.store import Match
from workers import jobs

from ..core import (
    MAX_PAGE,
    bad_request,
    fail,
    get_or_404,
    job_status,
    library,
    parse_match_filters,
    role_required,
    store,
)
from ..evidence import REPORT_FORMATS, report_response
from ..openapi import openapi_document
from ..serializers import document_dict, match_json, mother_json
from ..uploads import MAX_URLS, read_uploads

bp = Blueprint("api", __name__, url_prefix="/api/v1")

_SURROGATES = re.compile("[\ud800-\udfff]")

MAX_DOCUMENTS = 10_000


def _json_body() -> Any:
    if not request.is_json:
        fail(415, "send JSON with 'Content-Type: application/json'")
    body = request.get_json(silent=True)
    if body is None:
        fail(400, "the request body is not valid JSON")
    return _no_surrogates(body)


def _no_surrogates(value: Any) -> Any:
    """JSON may spell lone UTF-16 surrogates ("\\ud800"), which no UTF-8 store can hold:
    replace them (U+FFFD) here instead of failing later in a worker."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _int_arg(name: str, default: int, hi: int) -> int:
    raw = request.args.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        fail(400, f"{name} must be a whole number, got {raw!r}")
    if not 0 <= value <= hi:
        fail(400, f"{name} must be between 0 and {hi}, got {value}")
    return value


def _documents_from_json(items: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ingest items checked by ``tracker.rules.check_document_item``: (valid items,
    errors naming the bad ones)."""
    if not isinstance(items, list):
        fail(400, "'documents' must be a list of {id, title?, text} objects")
    if len(items) > MAX_DOCUMENTS:
        fail(413, f"at most {MAX_DOCUMENTS} documents per request, got {len(items)}")
    docs: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"documents[{i}]"
        try:
            docs.append(check_document_item(item, where, source="api"))
        except ValueError as exc:
            errors.append({"source": where, "message": str(exc).removeprefix(f"{where}: ")})
    return docs, errors


# --- mothers --------------------------------------------------------------------------
@bp.post("/mothers")
@role_required("analyst")
def mothers_add() -> Any:
    errors: list[dict[str, Any]]
    if request.mimetype == "multipart/form-data":
        files = request.files.getlist("files") or request.files.getlist("file")
        if not files:
            fail(400, "multipart upload without files: send them in the 'files' field")
        uploaded, doc_errors = read_uploads(files)
        docs = [document_dict(d) for d in uploaded]
        errors = [{"source": e.source, "message": e.message} for e in doc_errors]
    else:
        body = _json_body()
        items = body.get("documents") if isinstance(body, dict) else body
        if items is None:
            fail(400, 'send {"documents": [{"id": ..., "title": ..., "text": ...}]}')
        docs, errors = _documents_from_json(items)
    if not docs:
        response = jsonify({"error": "no valid document to import", "errors": errors})
        response.status_code = 400
        return response
    with bad_request():
        job_id = jobs.submit_ingest(docs)
    return _accepted(job_id, documents=len(docs), errors=errors)


@bp.get("/mothers")
def mothers_list() -> Any:
    search = (request.args.get("q") or request.args.get("search") or "").strip() or None
    offset = _int_arg("offset", 0, 10**12)
    limit = _int_arg("limit", 50, MAX_PAGE)
    mothers = store().list_mothers(search=search, offset=offset, limit=limit, with_text=False)
    return jsonify(
        {
            "total": store().count_mothers(search=search),
            "offset": offset,
            "limit": limit,
            "mothers": [mother_json(m) for m in mothers],
        }
    )


@bp.get("/mothers/<id:mother_id>")
def mothers_get(mother_id: str) -> Any:
    mother = get_or_404(store().get_mother, mother_id, f"no work with id {mother_id!r}")
    return jsonify(mother_json(mother, text=True))


@bp.delete("/mothers/<id:mother_id>")
@role_required("admin")
def mothers_delete(mother_id: str) -> Any:
    if not library().delete_mother(mother_id):
        fail(404, f"no work with id {mother_id!r}")
    return jsonify({"deleted": mother_id})


# --- checks and jobs ------------------------------------------------------------------
def _accepted(job_id: str, **extra: Any) -> Any:
    url = url_for("api.job", job_id=job_id)
    response = jsonify({"job_id": job_id, "status_url": url, **extra})
    response.status_code = 202
    response.headers["Location"] = url
    return response


@bp.post("/checks")
@role_required("analyst")
def checks() -> Any:
    body = _json_body()
    if not isinstance(body, dict):
        fail(400, 'send an object: {"texts": [...]} and/or {"urls": [...]}')
    texts, urls = body.get("texts") or [], body.get("urls") or []
    if not isinstance(texts, list) or not isinstance(urls, list):
        fail(400, "'texts' and 'urls' must be lists")
    if not texts and not urls:
        fail(
            400,
            "nothing to check: give 'texts' (list of {text, title?, url?, id?}) "
            "or 'urls' (list of http(s) URLs)",
        )
    if len(urls) > MAX_URLS or len(texts) > MAX_DOCUMENTS:
        fail(413, f"at most {MAX_URLS} URLs and {MAX_DOCUMENTS} texts per request")
    with bad_request():
        clean_texts = [check_text_item(item, f"texts[{i}]") for i, item in enumerate(texts)]
        clean_urls = [check_url(url, f"urls[{i}]") for i, url in enumerate(urls)]
        job_id = jobs.submit_check(texts=clean_texts, urls=clean_urls)
    return _accepted(job_id, texts=len(clean_texts), urls=len(clean_urls))


@bp.get("/jobs/<job_id>")
def job(job_id: str) -> Any:
    return jsonify(job_status(job_id))


# --- matches ----------------------------------------------------------------------------
@bp.get("/matches")
def matches_list() -> Any:
    with bad_request():
        filters = parse_match_filters(request.args, default_per_page=50)
    query = filters.query
    passages = request.args.get("passages", "1") not in ("0", "false", "no")
    return jsonify(
        {
            "total": store().count_matches(query),
            "offset": query.offset,
            "limit": query.limit,
            "matches": [match_json(m, passages=passages) for m in store().query_matches(query)],
        }
    )


def _match(match_id: str) -> Match:
    return get_or_404(
        store().get_match,
        match_id,
        "no match with this id (ids in paths are URL-safe base64 of the match id)",
    )


@bp.get("/matches/<id:match_id>")
def matches_get(match_id: str) -> Any:
    return jsonify(match_json(_match(match_id)))


@bp.patch("/matches/<id:match_id>")
@role_required("analyst")
def matches_patch(match_id: str) -> Any:
    body = _json_body()
    if not isinstance(body, dict):
        fail(400, 'send an object: {"verdict": ..., "note": ...}')
    unknown = set(body) - {"verdict", "note"}
    if unknown:
        fail(400, f"unknown field(s) {', '.join(sorted(unknown))}: only verdict and note")
    match = _match(match_id)
    with bad_request():
        verdict = check_verdict(body.get("verdict", match.verdict))
        note = check_note(body.get("note"))
    return jsonify(match_json(store().set_verdict(match_id, verdict, note)))


# --- reports ------------------------------------------------------------------------------
@bp.get("/reports/<id:match_id>.<fmt>")
def report(match_id: str, fmt: str) -> Response:
    if fmt not in REPORT_FORMATS:
        fail(404, f"reports are .json, .html or .pdf, not .{fmt}")
    return report_response(match_id, fmt, download=fmt == "pdf")


@bp.get("/openapi.json")
def openapi() -> Any:
    return jsonify(openapi_document(request.host_url.rstrip("/")))
