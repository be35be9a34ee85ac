"""Books of one library: ingest, list, show, rename, delete (issue #36).

- A book's chapters are works (``Mother``) ingested through the library's own ingest
  (``Library.ingest``: fingerprints, index, snapshots as for any work), with ids
  ``{book_id}-{index:04d}``, the title ``《书名》第N章 …`` and the book in their
  metadata (``tracker.books.model.CHAPTER_FIELDS``). The ``Book`` record (the chapter
  list) is written after its chapters are stored.
- ``yinji ingest`` reads files through ``BookIngest``: a whole-book file (.epub always;
  .txt/.html/.htm/.docx when ``tracker.books.parse`` finds at least two chapter
  headings, or every such file with ``--book``; ``tracker.books.files``) becomes a
  book; ``--book`` on a folder or zip makes its files one book (``book_from_files``);
  ``--as-works`` keeps the behaviour of before (one file, one work). JSONL rows
  carrying ``book_id``/``book`` (or the legacy ``work``) group into books.
- Renaming keeps the chapters' ``book_title`` (and title) current; deleting a book
  deletes its chapter works through the library's delete path.
- ``migrate_legacy`` turns a library stored before books into books once
  (``tracker.books.migrate``, marked in the store's meta ``books:migrated``), keeping
  every work id, verdict and case: only book records and chapter metadata are added.
  ``BookService`` runs it lazily before its first read or write (``ensure_migrated``);
  ``yinji book migrate`` runs it by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tracker.common.ids import id_problem
from tracker.common.records import (
    ChapterRef,
    JSONObject,
    Match,
    MatchQuery,
    NotFound,
    strip_book_title,
)
from tracker.documents.readers import Document, DocumentError, iter_documents

from .files import (
    EarlyReads,
    IngestMode,
    book_from_chapter_files,
    book_id_for,
    chapter_work_id,
    parse_book_file,
)
from .migrate import LegacyMigration, MigrationReport
from .model import MIGRATED_META, Book, BookChapter
from .store import BookStore, book_store_for, label_chapter
from .types import ParsedBook, ParsedChapter

if TYPE_CHECKING:
    from tracker.plumbing.config import ReadLimits
    from tracker.services.ingest import IngestService
    from tracker.services.results import IngestReport
    from tracker.store import Mother, Store

__all__ = [
    "BookDeleted",
    "BookIngest",
    "BookMade",
    "BookService",
    "BookStats",
    "ChapterFindings",
    "IngestMode",
    "Shelf",
    "chapter_ref",
    "summary_line",
]


class Shelf(Protocol):
    """What ``BookService`` needs of a library (``tracker.library.Library`` has it):
    its store, its ingest, and its delete path."""

    @property
    def store(self) -> Store: ...

    @property
    def ingestion(self) -> IngestService: ...

    def ingest(
        self, documents: Iterable[Document | DocumentError], *, engine: str | None = None
    ) -> IngestReport: ...


# -- results -------------------------------------------------------------------------------
@dataclass
class BookMade:
    """One book an ingest wrote: the record, whether it was new, chapters dropped."""

    book: Book
    new: bool
    replaced_chapters: int = 0  # chapters of its former version deleted (fewer now)


@dataclass
class BookDeleted:
    book: Book
    works_deleted: int
    works_missing: list[str] = field(default_factory=list)


@dataclass
class ChapterFindings:
    """A chapter and the matches of its work (dismissed ones left out), best first."""

    chapter: BookChapter
    matches: list[Match] = field(default_factory=list)

    @property
    def sites(self) -> list[str]:
        return sorted({m.domain for m in self.matches if m.domain})

    @property
    def confirmed(self) -> int:
        return sum(m.verdict == "confirmed" for m in self.matches)


@dataclass
class BookStats:
    """Where a book was found: per chapter, its matches and the sites they are on."""

    book: Book
    chapters: list[ChapterFindings]

    @property
    def chapters_found(self) -> int:
        """Chapters with at least one match (pending or confirmed)."""
        return sum(bool(c.matches) for c in self.chapters)

    @property
    def sites(self) -> list[str]:
        return sorted({site for c in self.chapters for site in c.sites})

    def to_dict(self) -> JSONObject:
        return {
            **self.book.summary(),
            "chapters_found": self.chapters_found,
            "sites": list(self.sites),
            "by_chapter": [
                {
                    **c.chapter.to_dict(),
                    "matches": len(c.matches),
                    "confirmed": c.confirmed,
                    "sites": list(c.sites),
                }
                for c in self.chapters
            ],
        }


def summary_line(books: Sequence[BookMade]) -> str:
    """``1 book, 100 chapters`` (what ``yinji ingest`` says it made)."""
    n = len(books)
    chapters = sum(len(b.book.chapters) for b in books)
    return f"{n} book{'' if n == 1 else 's'}, {chapters} chapter{'' if chapters == 1 else 's'}"


# -- the service ---------------------------------------------------------------------------
class BookService:
    """The books of ``library`` (its store's book records and chapter works)."""

    def __init__(self, library: Shelf, books: BookStore | None = None) -> None:
        self.library = library
        self.store = library.store
        self.books = books or book_store_for(library.store)
        self._migrated = False
        #: What the lazy migration did in this process (None: it did not run here).
        self.migration: MigrationReport | None = None

    # -- reading --------------------------------------------------------------------------
    def list_books(self) -> list[Book]:
        """Every book, by title."""
        self.ensure_migrated()
        return self.books.list_books()

    def get(self, book_id: str) -> Book:
        """The book, or ``NotFound`` naming the id."""
        self.ensure_migrated()
        return self.books.get_book(book_id)

    def find(self, book_id: str) -> Book | None:
        self.ensure_migrated()
        return self.books.find_book(book_id)

    def chapters(self, book_id: str) -> list[BookChapter]:
        return self.get(book_id).chapters

    def book_of(self, mother: Mother | str) -> tuple[Book, BookChapter] | None:
        """The book (and chapter) a work belongs to, from its metadata; None when it is
        in no book."""
        if isinstance(mother, str):
            try:
                mother = self.store.get_mother(mother)
            except (NotFound, KeyError):
                return None
        ref = ChapterRef.of(mother)
        if ref is None:
            return None
        book = self.books.find_book(ref.book_id)
        if book is None:
            return None
        chapter = book.chapter_of(mother.id)
        return (book, chapter) if chapter is not None else None

    def stats(self, book_id: str, *, per_chapter: int = 1000) -> BookStats:
        """Where the book was found: each chapter's matches (not dismissed; at most
        ``per_chapter``) and their sites. ``NotFound`` naming the id."""
        book = self.get(book_id)
        found = []
        for chapter in book.chapters:
            matches = self.store.query_matches(
                MatchQuery(mother_id=chapter.work_id, limit=per_chapter)
            )
            found.append(ChapterFindings(chapter, [m for m in matches if m.verdict != "dismissed"]))
        return BookStats(book, found)

    def chapter_ref(self, mother: Mother) -> ChapterRef | None:
        """The book fields of a work (``check --json``): from its metadata, the title
        current from the book record."""
        return chapter_ref(self.books, mother)

    # -- writing --------------------------------------------------------------------------
    def ingest_book(
        self, parsed: ParsedBook, *, book_id: str | None = None, engine: str | None = None
    ) -> tuple[IngestReport, list[BookMade]]:
        """Ingest one parsed book (the web's upload, a test): its chapters as works,
        then its record."""
        self.ensure_migrated()
        plan = BookIngest(self)
        docs = plan.chapter_documents(parsed, book_id or book_id_for(parsed.source, parsed.title))
        report = self.library.ingest(docs, engine=engine)
        return report, plan.finish(report)

    def rename(self, book_id: str, *, title: str | None = None, author: str | None = None) -> Book:
        """Set a book's title and/or author; every chapter's ``book_title`` (and legacy
        ``work_title``), ``author`` and title follow. ``ValueError`` for a blank title."""
        book = self.get(book_id)
        if title is not None:
            title = title.strip()
            if not title:
                raise ValueError(f"book {book_id!r}: the title must not be blank")
            book.title = title
        if author is not None:
            book.author = author.strip()
        self.books.put_book(book)
        for chapter in book.chapters:
            label_chapter(self.store, book, chapter)
        return book

    def delete(self, book_id: str) -> BookDeleted:
        """Delete a book: its chapter works (with their postings and matches, the
        library's delete path), then its record. ``NotFound`` naming the id."""
        book = self.get(book_id)
        deleted, missing = 0, []
        for chapter in book.chapters:
            if self.library.ingestion.delete_mother(chapter.work_id, from_book=False):
                deleted += 1
            else:
                missing.append(chapter.work_id)
        self.books.delete_book(book.id)
        return BookDeleted(book, deleted, missing)

    # -- the migration (tracker.books.migrate) -------------------------------------------
    def ensure_migrated(self) -> None:
        """Run ``migrate_legacy`` once per library (a read-only library: never)."""
        if self._migrated:
            return
        self._migrated = True
        if self.store.read_only or self.store.get_meta(MIGRATED_META) is not None:
            return
        self.migration = self.migrate_legacy()

    def migrate_legacy(self, *, force: bool = False) -> MigrationReport:
        """Books from a library stored before them (``tracker.books.migrate``), keeping
        every id, verdict and case; once (``force``: again)."""
        report = LegacyMigration(self.store, self.books).run(force=force)
        self._migrated = True
        return report


def chapter_ref(books: BookStore, mother: Mother) -> ChapterRef | None:
    """The book fields of ``mother`` (from its metadata), the book's title read from
    its record when there is one (current after a rename)."""
    ref = ChapterRef.of(mother)
    if ref is None:
        return None
    book = books.find_book(ref.book_id)
    if book is not None and book.title != ref.book_title:
        ref = replace(ref, book_title=book.title)
    return ref


# -- ingest: files to books ---------------------------------------------------------------
@dataclass
class _Planned:
    """A book being ingested: its record so far and the source of each chapter's
    document (an ingest error names it)."""

    book: Book
    sources: dict[str, str] = field(default_factory=dict)  # work id -> document source
    whole: bool = True  # from a whole-book file or folder (a re-ingest replaces it)


class BookIngest:
    """The books of one ``yinji ingest``: ``documents`` reads the inputs (whole-book
    files and folders as chapter documents), ``finish`` writes the book records for
    what the ingest stored."""

    def __init__(
        self,
        service: BookService,
        *,
        mode: IngestMode = "auto",
        early: EarlyReads | None = None,
    ) -> None:
        self.service = service
        self.mode = mode
        self.planned: dict[str, _Planned] = {}
        self.warnings: list[str] = []
        self.early = early  # whole-book files read while the library opened

    # -- inputs ---------------------------------------------------------------------------
    def documents(
        self, paths: Iterable[str | Path], *, limits: ReadLimits | None = None
    ) -> Iterator[Document | DocumentError]:
        """The documents of ``paths`` as ``yinji ingest`` stores them."""
        self.service.ensure_migrated()
        for raw in paths:
            path = Path(raw)
            if self.mode == "book" and (path.is_dir() or path.suffix.lower() == ".zip"):
                yield from self._files_as_book(path, limits)
                continue
            for item in iter_documents([path], limits=limits, books=self.read_file):
                yield self._grouped(item) if isinstance(item, Document) else item

    def read_file(
        self, data: bytes, name: str, doc_id: str
    ) -> list[Document | DocumentError] | None:
        """A ``tracker.documents.readers.BookReader``: the chapters of a whole-book file, or
        None to read the file as one work."""
        suffix = Path(name).suffix.lower()
        if self.mode == "works" and suffix == ".epub":
            return [DocumentError(name, "an .epub is a book: ingest it without --as-works")]
        read = self.early.take(name, data) if self.early is not None else None
        parsed = read.parsed if read is not None else parse_book_file(data, name, self.mode)
        if parsed is None or isinstance(parsed, DocumentError):
            return None if parsed is None else [parsed]
        return list(self.chapter_documents(parsed, book_id_for(name, parsed.title)))

    def _files_as_book(
        self, path: Path, limits: ReadLimits | None
    ) -> Iterator[Document | DocumentError]:
        """A folder or zip of chapter files as one book (in file order)."""
        files: list[tuple[str, bytes]] = []

        def collect(data: bytes, name: str, _doc_id: str) -> list[Document | DocumentError]:
            files.append((name, data))
            return []

        for item in iter_documents([path], limits=limits, books=collect):
            yield self._grouped(item) if isinstance(item, Document) else item
        if not files:
            return
        try:
            parsed = book_from_chapter_files(str(path), files)
        except ValueError as exc:  # BookFileError, named by the reader
            yield DocumentError(str(path), str(exc).removeprefix(f"{path}: "))
            return
        yield from self.chapter_documents(parsed, book_id_for(str(path), parsed.title))

    def chapter_documents(self, parsed: ParsedBook, book_id: str) -> Iterator[Document]:
        """The chapter works of a parsed book (ids ``{book_id}-{index:04d}``); the book
        is planned for ``finish``."""
        base = book_id
        n = 2
        while book_id in self.planned:  # two files of one name in one ingest
            book_id = f"{base}-{n}"
            n += 1
        where = parsed.source or book_id
        book = Book(
            id=book_id,
            title=parsed.title.strip().strip("《》") or book_id,
            author=parsed.author,
            series=parsed.series,
            isbn=parsed.isbn,
            language=parsed.language,
            source=parsed.source,
        )
        plan = _Planned(book)
        self.planned[book_id] = plan
        self.warnings += [w if w.startswith(where) else f"{where}: {w}" for w in parsed.warnings]
        chapters: list[ParsedChapter] = list(parsed.chapters)
        for ch in chapters:
            chapter = BookChapter(ch.index, ch.title.strip(), "", len(ch.text), ch.volume)
            chapter.work_id = chapter_work_id(book_id, ch.index)
            if not ch.text.strip():
                self.warnings.append(
                    f"{where}: chapter {ch.index} {ch.title!r} has no text: not stored"
                )
                continue
            book.chapters.append(chapter)
            source = f"{where}#{ch.index}"
            plan.sources[chapter.work_id] = source
            yield Document(
                id=chapter.work_id,
                text=ch.text,
                title=book.chapter_title(chapter),
                source=source,
                metadata=dict(book.chapter_metadata(chapter)),
            )

    def _grouped(self, doc: Document) -> Document:
        """A JSONL row (or any document) carrying book fields: its metadata completed
        (``book_id``, ``book_title``, ``author``, ``chapter``, ``chapter_index``) and
        its book planned; other documents unchanged."""
        meta = doc.metadata or {}
        ref = ChapterRef.from_metadata(meta, doc.title)
        if ref is None:
            return doc
        book_id = ref.book_id if id_problem(ref.book_id) is None else book_id_for(ref.book_id)
        plan = self.planned.get(book_id)
        if plan is None:
            old = self.service.books.find_book(book_id)
            book = old or Book(id=book_id, title=ref.book_title, source=doc.source.split(":")[0])
            if old is not None and (meta.get("book_title") or meta.get("work_title")):
                book.title = ref.book_title
            plan = _Planned(book, whole=False)
            self.planned[book_id] = plan
        book = plan.book
        if meta.get("author"):
            book.author = str(meta["author"])
        chapter_title = ref.chapter if "chapter" in meta else doc.title
        chapter_title = strip_book_title(chapter_title, book.title)
        index = ref.chapter_index
        old_chapter = book.chapter_of(doc.id)
        if index is None:
            index = (
                old_chapter.index
                if old_chapter is not None
                else max((c.index for c in book.chapters), default=0) + 1
            )
        if old_chapter is not None:
            book.chapters.remove(old_chapter)
        chapter = BookChapter(
            index, chapter_title, doc.id, len(doc.text), str(meta.get("volume") or "")
        )
        book.chapters.append(chapter)
        plan.sources[doc.id] = doc.source
        doc.metadata = {**meta, **book.chapter_metadata(chapter)}
        if not doc.title.startswith("《"):
            doc.title = book.chapter_title(chapter)
        return doc

    # -- after the ingest --------------------------------------------------------------------
    def finish(self, report: IngestReport) -> list[BookMade]:
        """Write the record of every planned book: the chapters the ingest stored (one
        whose document failed is left out), in book order. A whole book ingested again
        replaces its former version: chapters it no longer has are deleted."""
        failed = {e.source for e in report.errors}
        made: list[BookMade] = []
        for plan in self.planned.values():
            book = plan.book
            book.chapters = sorted(
                (c for c in book.chapters if plan.sources.get(c.work_id, "") not in failed),
                key=lambda c: (c.index, c.work_id),
            )
            if not book.chapters:
                continue
            old = self.service.books.find_book(book.id)
            dropped = 0
            if old is not None:
                book.created_at = old.created_at
                if plan.whole:
                    keep = set(book.work_ids())
                    for c in old.chapters:
                        if c.work_id not in keep and self.service.library.ingestion.delete_mother(
                            c.work_id, from_book=False
                        ):
                            dropped += 1
            self.service.books.put_book(book)
            made.append(BookMade(book, old is None, dropped))
        report.warnings += self.warnings
        return made
