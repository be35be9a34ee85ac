"""Books in the web admin: the list (title, author, chapters, chapters found pirated,
sites), a book's page (details, edit form, the chapters × sites grid, links to the
matches and cases), the upload of a book file (a job), and deleting a book (admin,
after a confirmation page). Every change goes through ``tracker.books``."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.books.admin import UPLOAD_SUFFIXES, edit_book
from tracker.books.model import Book
from tracker.common.records import NotFound

from ..books import book_index, book_service, find_books, get_book, grid_of, made_line, upload_books
from ..core import Page, fail, page_arg, records, role_required
from ..i18n import translate as _
from ..uploads import flash_skipped

bp = Blueprint("books", __name__, url_prefix="/library/books")

PER_PAGE = 25
EDIT_FIELDS = ("title", "author", "series", "isbn", "language")


@bp.get("/")
def index() -> ResponseReturnValue:
    q = (request.args.get("q") or "").strip()
    books = find_books(q)
    page, per_page = page_arg(PER_PAGE)
    pager = Page(page, per_page, len(books))
    shown = books[pager.offset : pager.offset + per_page]
    return render_template(
        "books/index.html",
        books=shown,
        summaries=records().book_summaries(book_index(), shown),
        pager=pager,
        q=q,
        suffixes=UPLOAD_SUFFIXES,
    )


@bp.post("/upload")
@role_required("analyst")
def upload() -> ResponseReturnValue:
    done = upload_books(request.files.getlist("files"))
    flash_skipped(done.skipped)
    if done.job_id is None:
        if not done.skipped:
            flash(_("No book file chosen."), "error")
        return redirect(url_for("library.index"))
    flash(_("Book import queued: {made}.", made=made_line(done.plan)), "info")
    for warning in done.plan.warnings[:20]:
        flash(warning, "info")
    return redirect(url_for("suspects.job", job_id=done.job_id, kind="ingest"))


@bp.get("/<id:book_id>")
def show(book_id: str) -> ResponseReturnValue:
    book = get_book(book_id)
    grid = grid_of(book)
    stored = _stored(book)
    return render_template(
        "books/show.html",
        book=book,
        grid=grid,
        summary=grid.summary(),
        stored=stored,
        fields=EDIT_FIELDS,
    )


def _stored(book: Book) -> set[str]:
    """The chapter works in the store (a chapter of a book still being imported is
    not, yet): one listing of the works whose id holds the book's, without texts."""
    wanted = set(book.work_ids())
    found = records().list_works(
        search=book.id, offset=0, limit=max(len(wanted) * 4, 1000), with_text=False
    )
    stored = {m.id for m in found} & wanted
    for work_id in wanted - stored:  # chapters given other ids (JSONL rows, a migration)
        try:
            records().get_work(work_id)
        except (NotFound, KeyError):
            continue
        stored.add(work_id)
    return stored


@bp.post("/<id:book_id>/edit")
@role_required("analyst")
def edit(book_id: str) -> ResponseReturnValue:
    get_book(book_id)
    values = {name: request.form.get(name) for name in EDIT_FIELDS}
    try:
        book = edit_book(book_service(), book_id, **values)
    except ValueError as exc:
        flash(_("Not saved: {error}", error=str(exc)), "error")
        return redirect(url_for("books.show", book_id=book_id))
    flash(_("Book {title} saved.", title=f"《{book.title}》"), "info")
    return redirect(url_for("books.show", book_id=book_id))


@bp.get("/<id:book_id>/delete")
@role_required("admin")
def delete_confirm(book_id: str) -> ResponseReturnValue:
    book = get_book(book_id)
    grid = grid_of(book, with_cases=False)
    matches = sum(c.matches for c in grid.cells.values())
    return render_template("books/delete.html", book=book, matches=matches)


@bp.post("/<id:book_id>/delete")
@role_required("admin")
def delete(book_id: str) -> ResponseReturnValue:
    if request.form.get("confirm") != "yes":
        fail(400, "confirm the deletion on the confirmation page")
    try:
        done = book_service().delete(book_id)
    except NotFound:
        fail(404, f"no book with id {book_id!r}")
    flash(
        _(
            "Book {title} deleted with {n} chapter works and their matches.",
            title=f"《{done.book.title}》",
            n=done.works_deleted,
        ),
        "info",
    )
    return redirect(url_for("library.index"))
