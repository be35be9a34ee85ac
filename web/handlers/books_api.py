"""Books in the REST API (``/api/v1/books``): the list and one book in the shapes of
``yinji book list --json`` and ``yinji book show --json``, with what is known of their
copies (the chapters × sites grid), rename/edit (PATCH), delete, and the upload of
book files (a job). See docs/API.md."""

from __future__ import annotations

from flask import Blueprint, jsonify, request, url_for
from flask.typing import ResponseReturnValue

from tracker.books.admin import edit_book
from tracker.common.records import NotFound

from ..apimodels.base import JobAccepted
from ..apimodels.books import (
    Book,
    BookDeleted,
    BookFilesIn,
    BookPatch,
    BookRenamed,
    BooksQuery,
    BookSummaryList,
)
from ..books import book_index, book_service, find_books, get_book, grid_of, upload_books
from ..core import fail, records, role_required
from ..openapi import Reply, error, operation
from ..serializers import book_json
from ..validation import body_as, query_as

bp = Blueprint("books_api", __name__, url_prefix="/api/v1/books")


@bp.get("")
@operation(
    "The books of the library, by title (`yinji book list --json`)",
    {200: Reply("Books", BookSummaryList)},
    query=BooksQuery,
)
def books_list() -> ResponseReturnValue:
    """``yinji book list --json``'s array, each book with ``copies``: chapters found
    pirated and the sites with confirmed / only pending matches."""
    q = query_as(BooksQuery).q or ""
    books = find_books(q)
    summaries = records().book_summaries(book_index(), books if q else None)
    out = []
    for book in books:
        item = book_json(book, chapters=False)
        item["copies"] = summaries[book.id].to_dict()
        out.append(item)
    return jsonify(out)


@bp.post("")
@operation(
    "Import book files (analyst): each file one book, its chapters ingested by a job",
    {
        202: Reply(
            "Job queued; `books` are the books read (with their `chapters` counts), "
            "`warnings` the reader's notes",
            JobAccepted,
        ),
        400: error("No file could be read as a book (see errors)"),
        413: error("Upload too large"),
        415: error("Not multipart"),
    },
    form=BookFilesIn,
)
@role_required("analyst")
def books_upload() -> ResponseReturnValue:
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
@operation(
    "One book with its chapters and where they are copied",
    {200: Reply("The book", Book), 404: error("No such book")},
)
def books_get(book_id: str) -> ResponseReturnValue:
    """``yinji book show --json`` with ``copies`` and ``grid`` (chapters × sites)."""
    book = get_book(book_id)
    grid = grid_of(book)
    out = book_json(book)
    out["copies"] = grid.summary().to_dict()
    out["grid"] = grid.to_dict()
    return jsonify(out)


@bp.patch("/<id:book_id>")
@operation(
    "Correct a book's details (analyst); its chapters follow a new title or author",
    {
        200: Reply("The book (as `yinji book rename --json`)", BookRenamed),
        400: error("Bad field (named in the message)"),
        404: error("No such book"),
    },
    body=BookPatch,
)
@role_required("analyst")
def books_patch(book_id: str) -> ResponseReturnValue:
    """JSON ``{title?, author?, series?, isbn?, language?}``: a field left out is kept.
    Answers ``yinji book rename --json``'s object (the book's summary)."""
    body = body_as(BookPatch).model_dump(exclude_unset=True)
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
@operation(
    "Delete a book with its chapter works and their matches (admin)",
    {200: Reply("Deleted", BookDeleted), 404: error("No such book")},
)
@role_required("admin")
def books_delete(book_id: str) -> ResponseReturnValue:
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
