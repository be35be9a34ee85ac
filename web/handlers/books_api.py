"""Books in the REST API (``/api/v1/books``): the list and one book in the shapes of
``yinji book list --json`` and ``yinji book show --json``, with what is known of their
copies (the chapters × sites grid), rename/edit (PATCH), delete, and the upload of
book files (a job). See docs/API.md."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request, url_for

from tracker.books.admin import edit_book
from tracker.books.stats import book_summaries
from tracker.records import NotFound

from ..books import book_index, book_service, find_books, get_book, grid_of, upload_books
from ..core import bad_request, fail, role_required, store
from ..jsonbody import clean, request_json
from ..serializers import book_json

bp = Blueprint("books_api", __name__, url_prefix="/api/v1/books")

EDIT_FIELDS = ("title", "author", "series", "isbn", "language")


@bp.get("")
def books_list() -> Any:
    """``yinji book list --json``'s array, each book with ``copies``: chapters found
    pirated and the sites with confirmed / only pending matches."""
    q = (request.args.get("q") or "").strip()
    books = find_books(q)
    summaries = book_summaries(store(), book_index(), books if q else None)
    out = []
    for book in books:
        item = book_json(book, chapters=False)
        item["copies"] = summaries[book.id].to_dict()
        out.append(item)
    return jsonify(out)


@bp.post("")
@role_required("analyst")
def books_upload() -> Any:
    """Multipart ``files``: each file one book (.txt .html .htm .docx .epub, or a .zip
    of its chapter files). 202 with the job and the books read; 400 when no file
    could be read as a book."""
    if request.mimetype != "multipart/form-data":
        fail(415, "send the book files as multipart/form-data in the 'files' field")
    done = upload_books(request.files.getlist("files") or request.files.getlist("file"))
    if done.job_id is None:
        errors = done.skipped
        first = f"; {errors[0]['source']}: {errors[0]['message']}" if errors else ""
        response = jsonify({"error": f"no book could be read{first}", "errors": errors})
        response.status_code = 400
        return response
    url = url_for("api.job", job_id=done.job_id)
    response = jsonify({"job_id": done.job_id, "status_url": url, **done.to_json()})
    response.status_code = 202
    response.headers["Location"] = url
    return response


@bp.get("/<id:book_id>")
def books_get(book_id: str) -> Any:
    """``yinji book show --json`` with ``copies`` and ``grid`` (chapters × sites)."""
    book = get_book(book_id)
    grid = grid_of(book)
    out = book_json(book)
    out["copies"] = grid.summary().to_dict()
    out["grid"] = grid.to_dict()
    return jsonify(out)


@bp.patch("/<id:book_id>")
@role_required("analyst")
def books_patch(book_id: str) -> Any:
    """JSON ``{title?, author?, series?, isbn?, language?}``: a field left out is kept.
    Answers ``yinji book rename --json``'s object (the book's summary)."""
    body = request_json()
    if not isinstance(body, dict):
        fail(400, 'send an object: {"title": ..., "author": ...}')
    unknown = set(body) - set(EDIT_FIELDS)
    if unknown:
        fail(400, f"unknown field(s) {', '.join(sorted(unknown))}: only {', '.join(EDIT_FIELDS)}")
    with bad_request():
        body = clean(body)
    for name, value in body.items():
        if not isinstance(value, str):
            fail(400, f"{name}: must be a string")
    get_book(book_id)
    try:
        book = edit_book(book_service(), book_id, **body)
    except ValueError as exc:
        fail(400, str(exc))
    return jsonify(book_json(book, chapters=False))


@bp.delete("/<id:book_id>")
@role_required("admin")
def books_delete(book_id: str) -> Any:
    """Delete the book with its chapter works (their matches too)."""
    try:
        done = book_service().delete(book_id)
    except NotFound:
        fail(404, f"no book with id {book_id!r}")
    return jsonify(
        {
            "deleted": book_id,
            "works_deleted": done.works_deleted,
            "works_missing": done.works_missing,
        }
    )
