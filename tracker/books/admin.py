"""What the web admin and the REST API change in books (issue #36): uploaded book files
made into chapter works (``plan_upload``), and a book's details corrected
(``edit_book``).

Each uploaded file is one book: a whole-book .txt/.html/.htm/.docx/.epub (read by
``tracker.books.parse``: a file without chapter headings is one chapter, said in the
warnings) or a .zip of chapter files (``book_from_files``, in file order). The
chapters become documents with the book in their metadata (ids
``{book_id}-{index:04d}``, exactly as ``yinji ingest --book`` makes them:
``BookIngest``), which the caller hands to the ingest job; ``UploadPlan.record``
writes the book records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from tracker.documents.readers import BOOK_SUFFIXES, Document, DocumentError, read_path

from .files import book_from_chapter_files, book_id_for
from .model import Book
from .service import BookIngest, BookMade, BookService
from .types import BookFileError

if TYPE_CHECKING:
    from tracker.plumbing.config import ReadLimits

#: What the book upload takes: a whole-book file, or a zip of chapter files.
UPLOAD_SUFFIXES = (*BOOK_SUFFIXES, ".zip")


@dataclass
class UploadPlan:
    """The books read from an upload: their chapters as documents to ingest, the files
    that could not be read (each naming the file), and the parser's warnings."""

    documents: list[Document] = field(default_factory=list)
    errors: list[DocumentError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _ingest: BookIngest | None = None

    @property
    def books(self) -> list[Book]:
        """The books, each with the chapters it will have."""
        if self._ingest is None:
            return []
        return [p.book for p in self._ingest.planned.values() if p.book.chapters]

    @property
    def chapters(self) -> int:
        return sum(len(b.chapters) for b in self.books)

    def record(self) -> list[BookMade]:
        """Write the book records (call it once the chapters are handed to the ingest):
        a book uploaded again replaces its former version, chapters it no longer has
        deleted."""
        if self._ingest is None:
            return []
        from tracker.services.results import IngestReport

        report = IngestReport()
        report.errors = list(self.errors)
        return self._ingest.finish(report)


def plan_upload(
    service: BookService,
    files: Sequence[tuple[str, Path]],
    *,
    limits: ReadLimits | None = None,
) -> UploadPlan:
    """The books of uploaded ``files`` (``(client file name, path on disk)``), each
    file one book."""
    ingest = BookIngest(service, mode="book")
    plan = UploadPlan(_ingest=ingest)
    service.ensure_migrated()
    for name, path in files:
        suffix = PurePosixPath(name.lower()).suffix
        if suffix not in UPLOAD_SUFFIXES:
            plan.errors.append(
                DocumentError(
                    name,
                    "not a book file (use " + ", ".join(UPLOAD_SUFFIXES) + ": one file, one "
                    "book; a .zip holds the chapter files of one book)",
                )
            )
            continue
        before = (len(plan.documents), len(plan.errors))
        if suffix == ".zip":
            _zip_book(ingest, plan, name, path, limits)
        else:
            stem = PurePosixPath(name).stem or "book"
            for item in read_path(
                path, name, default_id=stem, limits=limits, books=ingest.read_file
            ):
                if isinstance(item, DocumentError):
                    plan.errors.append(item)
                else:
                    plan.documents.append(item)
        if (len(plan.documents), len(plan.errors)) == before:
            plan.errors.append(DocumentError(name, "no chapter with text in it"))
    plan.warnings = list(ingest.warnings)
    return plan


def _zip_book(
    ingest: BookIngest, plan: UploadPlan, name: str, path: Path, limits: ReadLimits | None
) -> None:
    """A zip of chapter files as one book (its members in file order)."""
    files: list[tuple[str, bytes]] = []

    def collect(data: bytes, member: str, _doc_id: str) -> list[Document | DocumentError]:
        files.append((member, data))
        return []

    for item in read_path(path, name, limits=limits, books=collect):
        if isinstance(item, DocumentError):
            plan.errors.append(item)
        else:  # a member that is no chapter file (a .jsonl): a work of its own
            plan.documents.append(item)
    if not files:
        if not any(e.source.startswith(name) for e in plan.errors):
            plan.errors.append(DocumentError(name, "no chapter file in the archive"))
        return
    try:
        parsed = book_from_chapter_files(name, files)
    except BookFileError as exc:
        plan.errors.append(DocumentError(name, str(exc).removeprefix(f"{name}: ")))
        return
    plan.documents.extend(ingest.chapter_documents(parsed, book_id_for(name, parsed.title)))


#: The longest value of each book field the admin accepts.
FIELD_LIMITS = {"title": 300, "author": 200, "series": 300, "isbn": 40, "language": 35}


def _field(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name}: must be a string")
    value = value.strip()
    if name == "title":
        value = value.strip("《》 ")
    if len(value) > FIELD_LIMITS[name]:
        raise ValueError(f"{name}: at most {FIELD_LIMITS[name]} characters, got {len(value)}")
    if any(not c.isprintable() for c in value):
        raise ValueError(f"{name}: holds a control character")
    return value


def edit_book(
    service: BookService,
    book_id: str,
    *,
    title: str | None = None,
    author: str | None = None,
    series: str | None = None,
    isbn: str | None = None,
    language: str | None = None,
) -> Book:
    """Correct a book's details; a field left None is kept. Title and author go through
    ``BookService.rename`` (its chapters follow); series, ISBN and language are the
    record's. ``ValueError`` naming the field (a blank title, too long, a control
    character); ``NotFound`` for an unknown id. Nothing is written unless every field
    is valid."""
    clean = {
        "title": _field("title", title),
        "author": _field("author", author),
        "series": _field("series", series),
        "isbn": _field("isbn", isbn),
        "language": _field("language", language),
    }
    if clean["title"] is not None and not clean["title"]:
        raise ValueError("title: must not be blank")
    book = service.get(book_id)
    if (clean["title"] is not None and clean["title"] != book.title) or (
        clean["author"] is not None and clean["author"] != book.author
    ):
        book = service.rename(book_id, title=clean["title"], author=clean["author"])
    changed = False
    for name in ("series", "isbn", "language"):
        value = clean[name]
        if value is not None and getattr(book, name) != value:
            setattr(book, name, value)
            changed = True
    if changed:
        service.books.put_book(book)
    return book
