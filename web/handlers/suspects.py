"""Suspect pages: submit URLs, pasted text or files for checking; follow the job; list."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.common.rules import check_url
from tracker.documents.readers import SUPPORTED_SUFFIXES, DocumentError
from tracker.matching.longtext import suspect_size_problem
from tracker.store import MatchQuery
from workers import jobs

from ..core import (
    MAX_SHOWN_CHARS,
    Page,
    bad_request,
    get_or_404,
    job_status,
    page_arg,
    records,
    role_required,
    state,
)
from ..i18n import translate as _
from ..uploads import (
    MAX_URLS,
    claim,
    flash_skipped,
    parse_urls,
    pasted_document,
    spooled_uploads,
    text_item,
)

bp = Blueprint("suspects", __name__)


@bp.get("/suspects/")
def index() -> ResponseReturnValue:
    search = (request.args.get("q") or "").strip() or None
    page, per_page = page_arg(25)
    total = records().count_suspects(search=search)
    pager = Page(page, per_page, total)
    suspects = records().list_suspects(search=search, offset=pager.offset, limit=per_page)
    counts = {s.id: records().count_matches(MatchQuery(suspect_id=s.id)) for s in suspects}
    return render_template(
        "suspects/index.html", suspects=suspects, counts=counts, pager=pager, q=search or ""
    )


@bp.get("/suspects/new")
@role_required("analyst")
def new() -> ResponseReturnValue:
    return render_template("suspects/new.html", suffixes=SUPPORTED_SUFFIXES, errors=[], form={})


@bp.post("/suspects/new")
@role_required("analyst")
def submit() -> ResponseReturnValue:
    urls, url_errors = parse_urls(request.form.get("urls", ""))
    skipped = [{"source": "URL", "message": e} for e in url_errors]
    refs, file_skipped = spooled_uploads(request.files.getlist("files"))
    skipped += file_skipped
    try:
        pasted = pasted_document(request.form, None)
    except ValueError as exc:  # a bad id: the pasted text is refused, the rest go on
        skipped.append({"source": _("Pasted text"), "message": str(exc)})
        pasted = None
    texts = []
    limit = state().settings.max_suspect_chars
    if pasted is not None and suspect_size_problem(len(pasted.text), limit):
        # Refused here, not on a worker: a huge paste must not hold one.
        message = _(
            "The pasted text has {chars} characters, over the {limit} allowed: split it.",
            chars=f"{len(pasted.text):,}",
            limit=f"{limit:,}",
        )
        skipped.append({"source": _("Pasted text"), "message": message})
        pasted = None
    if pasted is not None:
        page_url = (request.form.get("url") or "").strip()
        if page_url:
            try:
                page_url = check_url(page_url)
            except ValueError as exc:
                skipped.append({"source": "URL", "message": str(exc)})
                page_url = ""
        texts.append(text_item(pasted, page_url))
    if len(urls) > MAX_URLS:
        skipped.append(
            {"source": "URL", "message": f"at most {MAX_URLS} URLs at once: the rest were ignored"}
        )
        urls = urls[:MAX_URLS]
    if not urls and not texts and not refs:
        errors = [DocumentError(s["source"], s["message"]) for s in skipped]
        if not errors:
            errors.append(
                DocumentError("", "nothing to check: enter URLs, paste a text or choose files")
            )
        return render_template(
            "suspects/new.html", suffixes=SUPPORTED_SUFFIXES, errors=errors, form=request.form
        ), 400
    # Fetching, reading files and matching run on a worker; the page follows the job.
    with bad_request():
        job_id = jobs.submit_check(texts=texts, urls=urls, uploads=refs, skipped=skipped)
    claim(refs)
    flash(
        _(
            "Check queued: {urls} URLs, {files} files, {texts} pasted texts.",
            urls=len(urls),
            files=len(refs),
            texts=len(texts),
        ),
        "info",
    )
    flash_skipped(skipped)
    return redirect(url_for("suspects.job", job_id=job_id, kind="check"))


@bp.get("/suspects/<id:suspect_id>")
def show(suspect_id: str) -> ResponseReturnValue:
    suspect = get_or_404(records().get_suspect, suspect_id, f"no suspect {suspect_id!r}")
    matches = records().query_matches(MatchQuery(suspect_id=suspect_id, limit=100))
    return render_template(
        "suspects/show.html",
        suspect=suspect,
        matches=matches,
        text=suspect.text[:MAX_SHOWN_CHARS],
        truncated=len(suspect.text) > MAX_SHOWN_CHARS,
    )


@bp.get("/jobs/<job_id>")
def job(job_id: str) -> ResponseReturnValue:
    status = job_status(job_id)
    return render_template(
        "job.html",
        job=status,
        job_id=job_id,
        summary=jobs.job_summary(status),
        kind=jobs.job_kind(status, request.args.get("kind", "")),
    )
