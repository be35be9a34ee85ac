"""REST API under ``/api/v1`` (see docs/API.md and ``/api/v1/openapi.json``).

Authentication: ``Authorization: Bearer <token>`` (or the browser session, then
with the ``X-CSRF-Token`` header on writes). Errors are ``{"error": "..."}`` with a
status code that fits. Ids in paths are URL-safe base64 (see ``web.ids``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from flask.typing import ResponseReturnValue
from pydantic import JsonValue

from tracker.common.ids import DuplicateIds
from tracker.common.records import JSONValue
from tracker.common.rules import (
    check_document_item,
    check_note,
    check_text_item,
    check_url,
    check_verdict,
)
from tracker.documents.readers import SUPPORTED_SUFFIXES
from tracker.matching.longtext import check_suspect_size
from tracker.matching.matcher import short_work_warnings
from tracker.store import Match
from workers import jobs
from workers.book_uploads import book_mode

from ..apimodels.base import Job, JobAccepted
from ..apimodels.matches import Match as MatchOut
from ..apimodels.matches import MatchList, MatchPatch, MatchQuery
from ..apimodels.works import (
    CheckedSuspect,
    ChecksIn,
    ConsistencyProof,
    ConsistencyQuery,
    Deleted,
    DocumentsIn,
    FilesIn,
    Mother,
    MotherList,
    MothersQuery,
    RebuildIn,
    RebuildRunning,
    TreeHead,
)
from ..books import named
from ..casework import set_verdict
from ..core import (
    bad_request,
    fail,
    get_or_404,
    job_status,
    library,
    parse_match_filters,
    records,
    role_required,
    state,
)
from ..evidence import REPORT_FORMATS, bundle_response, report_response
from ..jsonbody import clean, request_json
from ..openapi import (
    ID_PARAM,
    PathParam,
    Reply,
    document_also,
    error,
    openapi_document,
    operation,
)
from ..rebuild import start_rebuild
from ..serializers import match_json, mother_json
from ..uploads import LIBRARY_SUFFIXES, MAX_URLS, claim, spooled_uploads
from ..validation import body_as, query_as

bp = Blueprint("api", __name__, url_prefix="/api/v1")

JOB_ACCEPTED = Reply("Job queued; poll status_url", JobAccepted)
BINARY: dict[str, JsonValue] = {"type": "string", "format": "binary"}
UNAVAILABLE = error("The evidence log is unavailable")
document_also(CheckedSuspect)  # a check job's result: {checked, results: [CheckedSuspect], …}

MAX_DOCUMENTS = 10_000


def _problem(where: str, exc: ValueError) -> dict[str, str]:
    return {"source": where, "message": str(exc).removeprefix(f"{where}: ")}


def _rejected(message: str, errors: list[dict[str, str]]) -> Response:
    """400: nothing in the request was usable; the first problem is in the message."""
    first = f"{errors[0]['source']}: {errors[0]['message']}" if errors else ""
    response = jsonify({"error": f"{message}; {first}" if first else message, "errors": errors})
    response.status_code = 400
    return response


def _documents_from_json(items: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ingest items checked by ``tracker.common.rules.check_document_item``: (valid items,
    errors naming the bad ones)."""
    if not isinstance(items, list):
        fail(400, "'documents' must be a list of {id, title?, text} objects")
    if len(items) > MAX_DOCUMENTS:
        fail(413, f"at most {MAX_DOCUMENTS} documents per request, got {len(items)}")
    docs: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    ids = DuplicateIds()  # 7 and "7", "col" and " col ": one id, the second refused
    for i, item in enumerate(items):
        where = f"documents[{i}]"
        try:
            doc = check_document_item(clean(item, where), where, source="api")
        except ValueError as exc:
            errors.append(_problem(where, exc))
            continue
        duplicate = ids.seen(doc["id"], where, item.get("id"))
        if duplicate is not None:
            errors.append({"source": where, "message": duplicate})
            continue
        docs.append(dict(doc))
    return docs, errors


# --- mothers --------------------------------------------------------------------------
@bp.post("/mothers")
@operation(
    "Import works (analyst); runs as a job",
    {
        202: JOB_ACCEPTED,
        400: error("No valid document (see errors)"),
        413: error("Upload too large"),
        415: error("Not JSON or multipart"),
    },
    body=DocumentsIn,
    form=FilesIn,
)
@role_required("analyst")
def mothers_add() -> ResponseReturnValue:
    """JSON ``{"documents": [...]}`` or multipart files. Bad items and files are
    listed in ``errors`` (and in the job's ``skipped``); the rest are imported."""
    if request.mimetype == "multipart/form-data":
        with bad_request():  # a bad book_mode: 400 naming the choices
            mode = book_mode(request.form.get("book_mode") or "works")
        files = request.files.getlist("files") or request.files.getlist("file")
        # An .epub is only ever a book: taken where the mode makes books.
        refs, errors = spooled_uploads(
            files, SUPPORTED_SUFFIXES if mode == "works" else LIBRARY_SUFFIXES
        )
        if not refs:
            return _rejected("no file to import: send them in the 'files' field", errors)
        with bad_request():
            job_id = jobs.submit_ingest(uploads=refs, skipped=errors, book_mode=mode)
        claim(refs)
        return _accepted(job_id, files=len(refs), errors=errors)
    body = request_json()
    items = body.get("documents") if isinstance(body, dict) else body
    if items is None:
        fail(400, 'send {"documents": [{"id": ..., "title": ..., "text": ...}]}')
    docs, errors = _documents_from_json(items)
    if not docs:
        return _rejected("no valid document to import", errors)
    warnings = short_work_warnings(
        [(str(d.get("id", "")), str(d.get("text", ""))) for d in docs], library().min_copied()
    )
    with bad_request():
        job_id = jobs.submit_ingest(docs, skipped=errors)
    return _accepted(job_id, documents=len(docs), errors=errors, warnings=warnings)


@bp.get("/mothers")
@operation(
    "List works of the library (newest first)",
    {200: Reply("Works", MotherList), 400: error("Bad parameter")},
    query=MothersQuery,
)
def mothers_list() -> ResponseReturnValue:
    query = query_as(MothersQuery)
    search, offset, limit = query.q or query.search, query.offset, query.limit
    mothers = records().list_works(search=search, offset=offset, limit=limit, with_text=False)
    return jsonify(
        {
            "total": records().count_works(search=search),
            "offset": offset,
            "limit": limit,
            "mothers": [mother_json(m) for m in mothers],
        }
    )


@bp.get("/mothers/<id:mother_id>")
@operation("One work, with its text", {200: Reply("The work", Mother), 404: error("No such work")})
def mothers_get(mother_id: str) -> ResponseReturnValue:
    mother = get_or_404(records().get_work, mother_id, f"no work with id {mother_id!r}")
    return jsonify(mother_json(mother, text=True))


@bp.delete("/mothers/<id:mother_id>")
@operation(
    "Delete a work and its matches (admin)",
    {200: Reply("Deleted", Deleted), 404: error("No such work")},
)
@role_required("admin")
def mothers_delete(mother_id: str) -> ResponseReturnValue:
    if not library().delete_mother(mother_id):
        fail(404, f"no work with id {mother_id!r}")
    return jsonify({"deleted": mother_id})


# --- checks and jobs ------------------------------------------------------------------
def _accepted(job_id: str, **extra: JSONValue) -> Response:
    url = url_for("api.job", job_id=job_id)
    response = jsonify({"job_id": job_id, "status_url": url, **extra})
    response.status_code = 202
    response.headers["Location"] = url
    return response


@bp.post("/checks")
@operation(
    "Check suspect texts and/or URLs (analyst); runs as a job",
    {202: JOB_ACCEPTED, 400: error("Bad input"), 413: error("Too many items")},
    body=ChecksIn,
)
@role_required("analyst")
def checks() -> ResponseReturnValue:
    """JSON ``{"texts": [...], "urls": [...]}``. A bad text or URL is listed in
    ``errors`` (and in the job's ``skipped``); the others are checked."""
    body = request_json()
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
    errors: list[dict[str, str]] = []
    clean_texts, clean_urls = [], []
    limit = state().settings.max_suspect_chars
    for i, item in enumerate(texts):
        where = f"texts[{i}]"
        try:
            text_item = check_text_item(clean(item, where), where)
            check_suspect_size(text_item["text"], limit, where)  # refused before queueing
            clean_texts.append(text_item)
        except ValueError as exc:
            errors.append(_problem(where, exc))
    for i, url in enumerate(urls):
        where = f"urls[{i}]"
        try:
            clean_urls.append(check_url(clean(url, where), where))
        except ValueError as exc:
            errors.append(_problem(where, exc))
    if not clean_texts and not clean_urls:
        return _rejected("no valid text or URL to check", errors)
    with bad_request():
        job_id = jobs.submit_check(texts=clean_texts, urls=clean_urls, skipped=errors)
    return _accepted(job_id, texts=len(clean_texts), urls=len(clean_urls), errors=errors)


@bp.post("/index/rebuild")
@operation(
    "Rebuild the index on the workers (admin); runs as a job whose chunks the workers "
    "share (progress: the job's parts)",
    {
        202: JOB_ACCEPTED,
        400: error("Unknown engine"),
        409: Reply(
            "A rebuild is already running (its job, or a process holding the lock)", RebuildRunning
        ),
    },
    body=RebuildIn,
)
@role_required("admin")
def index_rebuild() -> ResponseReturnValue:
    """Rebuild the index on the workers (optional JSON ``{"engine": ...}``); 409 while
    a rebuild runs, with the running job's id when it is a job."""
    engine = body_as(RebuildIn).engine if request.content_length else None
    try:
        job_id = start_rebuild(engine or None)
    except jobs.RebuildRunning as exc:
        response = jsonify({"error": str(exc), "job_id": exc.job_id, "engine": exc.engine})
        response.status_code = 409
        return response
    return _accepted(job_id)


@bp.get("/jobs/<job_id>")
@operation(
    "Progress and result of a job",
    {200: Reply("Job status", Job), 404: error("Bad job id")},
)
def job(job_id: str) -> ResponseReturnValue:
    return jsonify(job_status(job_id))


# --- matches ----------------------------------------------------------------------------
@bp.get("/matches")
@operation(
    "Matches, filtered like the dashboard",
    {200: Reply("Matches", MatchList), 400: error("Bad filter")},
    query=MatchQuery,
)
def matches_list() -> ResponseReturnValue:
    with bad_request():
        filters = parse_match_filters(request.args, default_per_page=50)
    query = filters.query
    passages = request.args.get("passages", "1") not in ("0", "false", "no")
    return jsonify(
        {
            "total": records().count_matches(query),
            "offset": query.offset,
            "limit": query.limit,
            "matches": [
                match_json(m, passages=passages) for m in named(records().query_matches(query))
            ],
        }
    )


def _match(match_id: str) -> Match:
    return get_or_404(
        records().get_match,
        match_id,
        "no match with this id (ids in paths are URL-safe base64 of the match id)",
    )


@bp.get("/matches/<id:match_id>")
@operation("One match", {200: Reply("The match", MatchOut), 404: error("No such match")})
def matches_get(match_id: str) -> ResponseReturnValue:
    return jsonify(match_json(named([_match(match_id)])[0]))


@bp.patch("/matches/<id:match_id>")
@operation(
    "Set the verdict and/or note (analyst)",
    {
        200: Reply(
            "Updated match, with case_id and case_state: the case a confirmed match joined",
            MatchOut,
        ),
        400: error("Bad verdict or note"),
        404: error("No such match"),
    },
    body=MatchPatch,
)
@role_required("analyst")
def matches_patch(match_id: str) -> ResponseReturnValue:
    patch = body_as(MatchPatch)
    given = patch.model_fields_set
    match = _match(match_id)
    with bad_request():
        # A field left out is left as it is: PATCH {} changes (and logs) nothing.
        verdict = check_verdict(patch.verdict if "verdict" in given else match.verdict)
        note = check_note(patch.note if "note" in given else match.note or None)
    # Through the case workflow: a confirmed match with a URL joins its case, and the
    # evidence log records the verdict (once).
    result = set_verdict(match.suspect_id, match.mother_id, verdict, note)
    out = match_json(named([result.match])[0])
    out["case_id"] = result.case.id if result.case else None
    out["case_state"] = result.case.state if result.case else None
    return jsonify(out)


# --- the evidence log's published key and head (public: recipients of a bundle need
# them without an account; reading them writes nothing) -------------------------------
def _evidence_public() -> Any:
    from tracker.evidence import EvidenceError

    try:
        return library().evidence_log()
    except (EvidenceError, ValueError):
        # Anyone may call these: the reason (a key file's path, say) goes to the log only.
        current_app.logger.exception("the evidence log cannot be opened")
        fail(503, "the evidence log is unavailable; see the server log")


@bp.get("/evidence/head")
@operation(
    "The evidence log's key fingerprint and latest signed tree head (no authentication)",
    {
        200: Reply("fingerprint, public_key_pem, tree_head, tree_head_signature…", TreeHead),
        503: UNAVAILABLE,
    },
    public=True,
)
def evidence_head() -> ResponseReturnValue:
    """The key fingerprint and PEM, the latest signed tree head with its signature and
    timestamp token, and the verifier script's hash (``yinji evidence head --json``)."""
    from tracker.evidence import EvidenceError
    from tracker.evidence.public import published_head

    log = _evidence_public()
    try:
        return jsonify(published_head(log, sign=False).to_json())
    except EvidenceError:
        current_app.logger.exception("no evidence tree head can be published")
        fail(503, "the evidence log has no head to publish; see the server log")


@bp.get("/evidence/key.pem")
@operation(
    "The evidence log's public key, PEM (no authentication)",
    {200: Reply("PEM", media={"application/x-pem-file": {"type": "string"}}), 503: UNAVAILABLE},
    public=True,
)
def evidence_key() -> Response:
    """The evidence log's public key (PEM), to pin with ``yinji evidence verify --key``."""
    return Response(_evidence_public().public_key_pem(), content_type="application/x-pem-file")


@bp.get("/evidence/consistency")
@operation(
    "RFC 6962 consistency proof between two tree heads (no authentication)",
    {
        200: Reply("first, second, first_root, second_root, proof (hex)", ConsistencyProof),
        400: error("Sizes the log does not hold"),
        503: UNAVAILABLE,
    },
    query=ConsistencyQuery,
    public=True,
)
def evidence_consistency() -> ResponseReturnValue:
    """RFC 6962 proof that the log at ``second`` records begins with the log at
    ``first`` records (``second`` default: the latest signed head)."""
    from tracker.evidence import EvidenceError
    from tracker.evidence.public import consistency

    log = _evidence_public()
    sizes = query_as(ConsistencyQuery)
    try:
        return jsonify(consistency(log, sizes.first, sizes.second).to_json())
    except EvidenceError as exc:
        fail(400, str(exc))


# --- reports ------------------------------------------------------------------------------
@bp.get("/reports/<id:match_id>.<fmt>")
@operation(
    "Evidence report of one match",
    {
        200: Reply(
            "The report or the evidence bundle",
            media={
                "application/json": {"type": "object"},
                "text/html": {"type": "string"},
                "application/pdf": BINARY,
                "application/zip": BINARY,
            },
        ),
        404: error("No such match or format, or no evidence recorded"),
    },
    path={
        "match_id": ID_PARAM,
        "fmt": PathParam("format", schema={"enum": [*REPORT_FORMATS, "zip"]}),
    },
)
def report(match_id: str, fmt: str) -> Response:
    if fmt == "zip":
        return bundle_response(match_id)
    if fmt not in REPORT_FORMATS:
        fail(404, f"reports are .json, .html, .pdf or .zip (the evidence bundle), not .{fmt}")
    return report_response(match_id, fmt, download=fmt == "pdf")


@bp.get("/openapi.json")
@operation(
    "This document (no authentication: it holds no data)",
    {200: Reply("OpenAPI 3.1", media={"application/json": {"type": "object"}})},
    public=True,
)
def openapi() -> Response:
    return jsonify(openapi_document(current_app, request.host_url.rstrip("/")))
