"""The mother corpus: upload works (pasted text, files, zips), list, open, delete."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.books.admin import UPLOAD_SUFFIXES
from tracker.documents.readers import DocumentError
from tracker.store import MatchQuery
from workers import jobs
from workers.book_uploads import BOOK_MODES, book_mode

from ..books import book_index, find_books
from ..core import (
    MAX_SHOWN_CHARS,
    Page,
    bad_request,
    fail,
    get_or_404,
    library,
    page_arg,
    records,
    role_required,
)
from ..i18n import translate as _
from ..rebuild import start_rebuild
from ..serializers import document_dict
from ..uploads import LIBRARY_SUFFIXES, claim, flash_skipped, pasted_document, spooled_uploads

bp = Blueprint("library", __name__, url_prefix="/library")

BOOKS_SHOWN = 25  # books on the library page (all of them: /library/books/)


@bp.get("/")
def index() -> ResponseReturnValue:
    search = (request.args.get("q") or "").strip() or None
    page, per_page = page_arg(25)
    total = records().count_works(search=search)
    pager = Page(page, per_page, total)
    mothers = records().list_works(
        search=search, offset=pager.offset, limit=per_page, with_text=False
    )
    # The books first (title, author, chapters, where they are copied), then every
    # work as before (chapters among them, named by their book).
    books = find_books(search or "")
    return render_template(
        "library/index.html",
        mothers=mothers,
        pager=pager,
        q=search or "",
        books=books[:BOOKS_SHOWN],
        books_total=len(books),
        summaries=records().book_summaries(book_index(), books[:BOOKS_SHOWN]),
        book_suffixes=UPLOAD_SUFFIXES,
    )


def _upload_page(errors: list[DocumentError], mode: str = "auto") -> str:
    return render_template(
        "library/upload.html",
        suffixes=LIBRARY_SUFFIXES,
        errors=errors,
        book_modes=BOOK_MODES,
        book_mode=mode,
    )


@bp.get("/upload")
@role_required("analyst")
def upload_form() -> ResponseReturnValue:
    return _upload_page([])


@bp.post("/upload")
@role_required("analyst")
def upload() -> ResponseReturnValue:
    raw_mode = request.form.get("book_mode") or "auto"
    try:
        mode = book_mode(raw_mode)
    except ValueError as exc:  # the message names the choices
        return _upload_page([DocumentError("book_mode", str(exc)[:200])]), 400
    refs, skipped = spooled_uploads(request.files.getlist("files"), LIBRARY_SUFFIXES)
    try:
        pasted = pasted_document(request.form, "work")
    except ValueError as exc:  # a bad id: the pasted text is refused, the files go on
        skipped.append({"source": _("Pasted text"), "message": str(exc)})
        pasted = None
    docs = [document_dict(pasted)] if pasted is not None else []
    if mode == "works":  # an .epub is only ever a book
        epubs = [r for r in refs if str(r.get("name", "")).lower().endswith(".epub")]
        refs = [r for r in refs if r not in epubs]
        message = _("an .epub is a book: import it with “Auto” or “One book per file”")
        skipped += [{"source": str(r["name"]), "message": message} for r in epubs]
    if not refs and not docs:
        errors = [DocumentError(s["source"], s["message"]) for s in skipped]
        if not errors:
            errors.append(DocumentError("", "no file chosen and no text pasted"))
        return _upload_page(errors, mode), 400
    # Reading (whole books into chapters, by the same rule as `yinji ingest`) and
    # fingerprinting run on a worker: a large upload never holds this request, and the
    # files go to the job as references (see web.uploads). The job page says what it
    # made ("1 book, 100 chapters").
    with bad_request():
        job_id = jobs.submit_ingest(docs, uploads=refs, skipped=skipped, book_mode=mode)
    claim(refs)
    texts = 1 if pasted is not None else 0
    flash(
        _("Import queued: {files} files, {texts} pasted texts.", files=len(refs), texts=texts),
        "info",
    )
    flash_skipped(skipped)
    return redirect(url_for("suspects.job", job_id=job_id, kind="ingest"))


@bp.post("/rebuild")
@role_required("admin")
def rebuild() -> ResponseReturnValue:
    try:
        job_id = start_rebuild(request.form.get("engine") or None)
    except jobs.RebuildRunning as exc:
        flash(_("A rebuild of the index is already running: wait until it has finished."), "error")
        if exc.job_id:
            return redirect(url_for("suspects.job", job_id=exc.job_id, kind="rebuild"))
        return redirect(url_for("library.index"))
    flash(_("Index rebuild queued: the workers share its chunks."), "info")
    return redirect(url_for("suspects.job", job_id=job_id, kind="rebuild"))


@bp.get("/<id:mother_id>")
def show(mother_id: str) -> ResponseReturnValue:
    mother = get_or_404(records().get_work, mother_id, f"no work {mother_id!r}")
    query = MatchQuery(mother_id=mother_id, limit=20)
    matches = records().query_matches(query)
    total = records().count_matches(query)
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
def delete(mother_id: str) -> ResponseReturnValue:
    if not library().delete_mother(mother_id):
        fail(404, f"no work {mother_id!r}")
    flash(_("Work {id} deleted with its matches.", id=mother_id), "info")
    return redirect(url_for("library.index"))
