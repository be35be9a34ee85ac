"""The mother corpus: upload works (pasted text, files, zips), list, open, delete."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for

from tracker.documents import SUPPORTED_SUFFIXES, DocumentError
from tracker.store import MatchQuery
from workers import jobs

from ..core import (
    MAX_SHOWN_CHARS,
    Page,
    bad_request,
    fail,
    get_or_404,
    library,
    page_arg,
    role_required,
    store,
)
from ..i18n import translate as _
from ..serializers import document_dict
from ..uploads import pasted_document, read_uploads

bp = Blueprint("library", __name__, url_prefix="/library")


@bp.get("/")
def index() -> Any:
    search = (request.args.get("q") or "").strip() or None
    page, per_page = page_arg(25)
    total = store().count_mothers(search=search)
    pager = Page(page, per_page, total)
    mothers = store().list_mothers(
        search=search, offset=pager.offset, limit=per_page, with_text=False
    )
    return render_template("library/index.html", mothers=mothers, pager=pager, q=search or "")


@bp.get("/upload")
@role_required("analyst")
def upload_form() -> Any:
    return render_template("library/upload.html", suffixes=SUPPORTED_SUFFIXES, errors=[])


@bp.post("/upload")
@role_required("analyst")
def upload() -> Any:
    docs, errors = read_uploads(request.files.getlist("files"))
    pasted = pasted_document(request.form, "work")
    if pasted is not None:
        docs.insert(0, pasted)
    if not docs:
        if not errors:
            errors.append(
                DocumentError("upload", "nothing to import: paste a text or choose files")
            )
        return render_template(
            "library/upload.html", suffixes=SUPPORTED_SUFFIXES, errors=errors
        ), 400
    # Fingerprinting runs on a worker: a large upload never holds this request.
    with bad_request():
        job_id = jobs.submit_ingest([document_dict(d) for d in docs])
    flash(_("{n} works queued for import.", n=len(docs)), "info")
    for err in errors[:20]:
        flash(_("Skipped {source}: {message}", source=err.source, message=err.message), "error")
    if len(errors) > 20:
        flash(_("… and {n} more skipped files.", n=len(errors) - 20), "error")
    return redirect(url_for("suspects.job", job_id=job_id, kind="ingest"))


@bp.get("/<id:mother_id>")
def show(mother_id: str) -> Any:
    mother = get_or_404(store().get_mother, mother_id, f"no work {mother_id!r}")
    query = MatchQuery(mother_id=mother_id, limit=20)
    matches = store().query_matches(query)
    total = store().count_matches(query)
    return render_template(
        "library/show.html",
        mother=mother,
        matches=matches,
        total=total,
        text=mother.text[:MAX_SHOWN_CHARS],
        truncated=len(mother.text) > MAX_SHOWN_CHARS,
    )


@bp.post("/<id:mother_id>/delete")
@role_required("admin")
def delete(mother_id: str) -> Any:
    if not library().delete_mother(mother_id):
        fail(404, f"no work {mother_id!r}")
    flash(_("Work {id} deleted with its matches.", id=mother_id), "info")
    return redirect(url_for("library.index"))
