"""Books in the web app, shared by the pages (``handlers/books.py``), the REST API
(``handlers/books_api.py``) and every page that shows a match (the chapter's name).

The books themselves are ``tracker.books`` (``BookService``); what the pages show about
their copies is ``tracker.books.stats`` (the chapters × sites grid, the library's
figures); uploads and edits are ``tracker.books.admin``. Here: one ``BookService`` a
request, the book index of the request (which book and chapter a work is), the
chapter's name in the page's language, and the upload as a job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from flask import Flask, g
from werkzeug.datastructures import FileStorage

from tracker.books.admin import UPLOAD_SUFFIXES, UploadPlan, plan_upload
from tracker.books.model import Book
from tracker.books.service import BookService
from tracker.books.stats import BookGrid, BookIndex, book_grid
from tracker.common.records import JSONObject
from tracker.store import Match
from workers import jobs

from .core import get_or_404, library, records, state
from .i18n import current_language
from .i18n import translate as _
from .serializers import book_json, document_dict
from .uploads import spool, spooled_uploads

#: The grid's cell states as the pages name them (message ids of web/translations).
STEP_LABELS = {
    "pirated": "Pirated",
    "confirmed": "Confirmed",
    "noticed": "Noticed",
    "removed": "Removed",
}


def book_service() -> BookService:
    """The request's ``BookService`` (it migrates a library stored before books once)."""
    svc: BookService | None = g.get("yinji_books")
    if svc is None:
        # The book store (its table made once) is the app's; the service is the
        # request's (it checks the legacy migration once).
        books = state().resource("books", lambda: records().book_store())
        svc = g.yinji_books = BookService(library(), books)
    return svc


def get_book(book_id: str) -> Book:
    """The book, or a 404 naming the id (the pages and the API)."""
    return get_or_404(book_service().get, book_id, f"no book with id {book_id!r}")


def grid_of(book: Book, *, with_cases: bool = True) -> BookGrid:
    """The book's chapters × sites grid from the stored matches and (``with_cases``)
    every case."""
    if with_cases:
        from .casework import cases

        return book_grid(book, records().book_pages(book), cases().list_cases())
    return book_grid(book, records().book_pages(book), [])


def book_index() -> BookIndex:
    """Which book and chapter each work is (read once a request)."""
    index: BookIndex | None = g.get("yinji_book_index")
    if index is None:
        index = g.yinji_book_index = BookIndex(book_service().list_books())
    return index


def chapter_of(mother_id: str, lang: str | None = None) -> str:
    """The chapter a work is, named in the page's language (``《西游记》第四十一回 …``
    / ``"西游记", chapter 41 (…)``); "" for a work in no book."""
    return book_index().label(mother_id, lang or current_language())


def book_of(mother_id: str) -> Book | None:
    """The book a work is a chapter of (None: in no book)."""
    found = book_index().of(mother_id)
    return found[0] if found is not None else None


def named(matches: Iterable[Match]) -> list[Match]:
    """The matches with their book and chapter (``Match.book``) set."""
    index = book_index()
    return [index.named(m) for m in matches]


def init_books(app: Flask) -> None:
    """``chapter_of(mother_id)`` and ``book_of(mother_id)`` in every template."""
    app.add_template_global(chapter_of, "chapter_of")
    app.add_template_global(book_of, "book_of")
    app.jinja_env.globals["STEP_LABELS"] = STEP_LABELS


@dataclass
class BookUpload:
    """What a book upload did: the books read (and the job ingesting their chapters),
    and the files passed over or refused, each naming the file."""

    plan: UploadPlan
    job_id: str | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> JSONObject:
        return {
            "books": [book_json(b, chapters=False) for b in self.plan.books],
            "chapters": self.plan.chapters,
            "warnings": list(self.plan.warnings),
            "errors": list(self.skipped),
        }


def plan_books(refs: Sequence[Mapping[str, object]]) -> UploadPlan:
    """The books of uploaded files (``web.uploads`` references, each file one book),
    read here (``tracker.books.admin.plan_upload``); the files are deleted when the
    request ends (they are not handed to a job)."""
    store = spool()
    return plan_upload(book_service(), [(str(r["name"]), store.path(r)) for r in refs])


def upload_books(files: list[FileStorage]) -> BookUpload:
    """Each uploaded file one book: read here into chapters (``tracker.books.admin``),
    the chapters ingested by a job (``workers.jobs.submit_ingest``, as any works), the
    book records written as soon as the job is queued (a book's page says which
    chapters the job has not stored yet). Files that are no book are in
    ``skipped``; ``job_id`` is None when nothing could be read."""
    refs, skipped = spooled_uploads(files, UPLOAD_SUFFIXES)
    plan = plan_books(refs)
    skipped += [{"source": e.source, "message": e.message} for e in plan.errors]
    upload = BookUpload(plan, skipped=skipped)
    if not plan.documents:
        return upload
    # The uploaded files are read: the job carries the chapters (spooled when large),
    # and the files are deleted when this request ends.
    upload.job_id = jobs.submit_ingest(
        [document_dict(d) for d in plan.documents], skipped=list(skipped)
    )
    plan.record()
    return upload


def find_books(q: str = "") -> list[Book]:
    """The library's books by title; with ``q``, those whose title, author, series or
    id holds it (case-insensitive)."""
    books = book_service().list_books()
    needle = q.strip().casefold()
    if not needle:
        return books
    return [
        b for b in books if any(needle in v.casefold() for v in (b.title, b.author, b.series, b.id))
    ]


def made_line(plan: UploadPlan) -> str:
    """What an upload made, in the page's language: ``1 book, 100 chapters`` /
    ``1 本书，100 章``."""
    books, chapters = len(plan.books), plan.chapters
    if books == 1:
        if chapters == 1:
            return _("1 book, 1 chapter")
        return _("1 book, {chapters} chapters", chapters=chapters)
    return _("{books} books, {chapters} chapters", books=books, chapters=chapters)
