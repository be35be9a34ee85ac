"""Uploaded files read as ``yinji ingest`` reads them: whole books become books of
chapter works (issue #36). The rule is the tracker's, never a second one here:

- ``auto`` and ``works``: each file through ``tracker.books.service.BookIngest`` (its
  ``read_file`` decides: in ``auto`` a .txt/.html/.htm/.docx with two or more chapter
  headings, and every .epub, is a book; ``works`` keeps one file, one work), exactly as
  ``yinji ingest`` / ``yinji ingest --as-works`` do;
- ``book``: each file one book, as the web's book upload
  (``tracker.books.admin.plan_upload``: a .zip holds the chapter files of one book),
  like ``yinji ingest --book``.

After the ingest, ``finish`` writes the book records of what was stored (a chapter
whose document failed is left out) and says what it made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, TypedDict, get_args

from tracker.books.admin import UploadPlan, plan_upload
from tracker.books.service import BookIngest, BookMade, BookService
from tracker.documents.readers import Document, DocumentError
from tracker.library import Library
from tracker.services.results import IngestReport
from workers.payloads import upload_documents
from workers.spool import Spool, UploadError, UploadRef

BookMode = Literal["auto", "book", "works"]
BOOK_MODES: tuple[BookMode, ...] = get_args(BookMode)


def book_mode(value: object) -> BookMode:
    """``value`` as a book mode; ``ValueError`` naming the choices."""
    for mode in BOOK_MODES:
        if value == mode:
            return mode
    raise ValueError(f"book_mode must be one of {', '.join(BOOK_MODES)}, got {value!r}")


class BookMadeJSON(TypedDict):
    """A book an ingest job made, as its result lists it."""

    id: str
    title: str
    author: str
    chapters: int
    new: bool
    replaced_chapters: int


def made_json(made: BookMade) -> BookMadeJSON:
    book = made.book
    return {
        "id": book.id,
        "title": book.title,
        "author": book.author,
        "chapters": len(book.chapters),
        "new": made.new,
        "replaced_chapters": made.replaced_chapters,
    }


class UploadBooks:
    """The documents of one task's uploads, books made of whole-book files."""

    def __init__(self, library: Library, mode: BookMode = "auto") -> None:
        self.mode = mode
        self.service = BookService(library)
        self.ingest = BookIngest(self.service, mode="works" if mode == "book" else mode)
        self.plans: list[UploadPlan] = []

    def documents(self, spool: Spool, ref: UploadRef) -> Iterator[Document | DocumentError]:
        """The documents of one upload (``workers.payloads.upload_documents``), read by
        the book rule of the mode."""
        self.service.ensure_migrated()
        if self.mode != "book" or ref.get("format") == "items":
            yield from upload_documents(spool, ref, books=self.ingest.read_file)
            return
        name = str(ref.get("name") or "upload")
        try:
            path = spool.verified_path(ref)
        except UploadError as exc:
            yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
            return
        try:
            plan = plan_upload(self.service, [(name, path)])
        except (MemoryError, RecursionError, ValueError, LookupError, OSError, TypeError) as exc:
            # As ``upload_documents``: one hostile file never sinks the job's others.
            yield DocumentError(name, f"could not be read ({type(exc).__name__}: {exc})"[:500])
            return
        self.plans.append(plan)
        yield from plan.errors
        yield from plan.documents
        # The record needs the plan's books and errors, not the chapters' texts: a job of
        # many books keeps one book's text in memory at a time.
        plan.documents = []

    def finish(self, report: IngestReport) -> list[BookMade]:
        """Write the records of the books whose chapters the ingest stored; the
        readers' warnings (a book without headings is one chapter, ...) join the
        report's."""
        made = self.ingest.finish(report)
        for plan in self.plans:
            # The plan's record leaves out the chapters its errors name: the ingest's too
            # (its own errors are among the report's already: they were yielded to it).
            own = {id(e) for e in plan.errors}
            plan.errors.extend(e for e in report.errors if id(e) not in own)
            made += plan.record()
            report.warnings += [w for w in plan.warnings if w not in report.warnings]
        return made
