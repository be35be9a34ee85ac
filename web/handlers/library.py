"""The mother corpus: upload works (pasted text, files, zips), list, open, delete."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from werkzeug.datastructures import FileStorage

from tracker.documents import SUPPORTED_SUFFIXES, Document, DocumentError, read_bytes
from tracker.store import MatchQuery, NotFound

from ..core import Page, fail, library, page_arg, role_required, store, submit_job
from ..i18n import translate as _

bp = Blueprint("library", __name__, url_prefix="/library")

MAX_SHOWN_CHARS = 200_000  # a whole novel on one page would freeze the browser
MAX_FILES = 500


def new_id(prefix: str) -> str:
    return f"{prefix}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def document_dict(doc: Document) -> dict[str, Any]:
    return {
        "id": doc.id,
        "title": doc.title,
        "text": doc.text,
        "source": doc.source,
        "metadata": doc.metadata,
    }


def read_uploads(files: list[FileStorage]) -> tuple[list[Document], list[DocumentError]]:
    """Documents in uploaded files. Zips go through ``tracker.documents``, which refuses
    absolute or ``..`` member paths, nested zips and zip bombs; bad files are errors."""
    docs: list[Document] = []
    errors: list[DocumentError] = []
    for storage in files[:MAX_FILES]:
        # The client's file name is only a label and an id (never a path on disk).
        name = (storage.filename or "upload").replace("\\", "/").rsplit("/", 1)[-1] or "upload"
        data = storage.read()
        if not data:
            errors.append(DocumentError(name, "empty file"))
            continue
        for item in read_bytes(data, name):
            (errors if isinstance(item, DocumentError) else docs).append(item)
    if len(files) > MAX_FILES:
        errors.append(
            DocumentError("upload", f"more than {MAX_FILES} files: the rest were ignored")
        )
    return docs, errors


def pasted_document(form: Any, prefix: str | None) -> Document | None:
    """The pasted text of a form; without an id given, one made from ``prefix`` and the
    time (``prefix=None``: left empty, the worker names it by its content)."""
    text = (form.get("text") or "").strip()
    if not text:
        return None
    title = (form.get("title") or "").strip()[:300]
    doc_id = (form.get("doc_id") or "").strip()[:200] or (new_id(prefix) if prefix else "")
    return Document(id=doc_id, text=text, title=title or text.splitlines()[0][:80], source="paste")


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
    job_id = submit_job("ingest", [document_dict(d) for d in docs])
    flash(_("{n} works queued for import.", n=len(docs)), "info")
    for err in errors[:20]:
        flash(_("Skipped {source}: {message}", source=err.source, message=err.message), "error")
    if len(errors) > 20:
        flash(_("… and {n} more skipped files.", n=len(errors) - 20), "error")
    return redirect(url_for("suspects.job", job_id=job_id, kind="ingest"))


@bp.get("/<id:mother_id>")
def show(mother_id: str) -> Any:
    try:
        mother = store().get_mother(mother_id)
    except (NotFound, KeyError):
        fail(404, f"no work {mother_id!r}")
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
