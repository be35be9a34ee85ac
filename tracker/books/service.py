"""Books of one library: ingest, list, show, rename, delete, and the migration of a
library stored before books (issue #36).

- A book's chapters are works (``Mother``) ingested through the library's own ingest
  (``Library.ingest``: fingerprints, index, snapshots as for any work), with ids
  ``{book_id}-{index:04d}``, the title ``《书名》第N章 …`` and the book in their
  metadata (``tracker.books.model.CHAPTER_FIELDS``). The ``Book`` record (the chapter
  list) is written after its chapters are stored.
- ``yinji ingest`` reads files through ``BookIngest``: a whole-book file (.epub always;
  .txt/.html/.htm/.docx when ``tracker.books.parse`` finds at least two chapter
  headings, or every such file with ``--book``) becomes a book; ``--book`` on a folder
  or zip makes its files one book (``book_from_files``); ``--as-works`` keeps the
  behaviour of before (one file, one work). JSONL rows carrying ``book_id``/``book``
  (or the legacy ``work``) group into books.
- Renaming keeps the chapters' ``book_title`` (and title) current; deleting a book
  deletes its chapter works through the library's delete path.
- ``migrate_legacy`` turns a library stored before books into books once (marked in
  the store's meta ``books:migrated``), keeping every work id, verdict and case: only
  book records and chapter metadata are added. ``BookService`` runs it lazily before
  its first read or write (``ensure_migrated``); ``yinji book migrate`` runs it by hand.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tracker.documents import (
    Document,
    DocumentError,
    decode_html_bytes,
    decode_text,
    docx_text,
    extract_html,
    file_label,
    iter_documents,
)
from tracker.ids import check_id, id_problem
from tracker.records import (
    ChapterRef,
    JSONObject,
    Match,
    MatchQuery,
    NotFound,
    strip_book_title,
    utcnow,
)

from .model import MIGRATED_META, Book, BookChapter
from .store import BookStore, book_store_for
from .types import ParsedBook, ParsedChapter

if TYPE_CHECKING:
    from tracker.config import ReadLimits
    from tracker.library import Library
    from tracker.services.results import IngestReport
    from tracker.store import Mother, Store

#: Meta key marking the legacy migration done (its summary as the value).
#: A work shorter than this is not read by the migration as a possible whole book (two
#: chapters of a novel are longer; articles are spared the read of their text).
WHOLE_BOOK_MIN_CHARS = 5000
IngestMode = Literal["auto", "book", "works"]

# A numbered chapter heading anywhere in a text: the cheap test that decides whether a
# file is worth reading as a book at all (``tracker.books.parse`` decides for real).
_HEADING = re.compile(
    r"第\s*[0-9０-９零〇一二三四五六七八九十百千万两壹贰叁肆伍陆柒捌玖拾佰仟]+\s*[章回囘节節卷集]"
)


def may_be_book(text: str) -> bool:
    """True when ``text`` names at least two numbered chapters (第N章/回/节/卷/集):
    only then is a plain file read by the book reader in ``auto`` mode."""
    return any(n >= 1 for n, _ in enumerate(_HEADING.finditer(text)))


def book_from_file(name: str, data: bytes) -> ParsedBook:
    """A whole-book file (.txt .html .htm .docx .epub) read into chapters
    (``tracker.books.parse.read_book``); ``BookFileError`` naming the file."""
    from tracker.books.parse import read_book

    return read_book(name, data)


def book_from_chapter_files(name: str, files: list[tuple[str, bytes]]) -> ParsedBook:
    """A folder or zip of chapter files read as one book
    (``tracker.books.parse.book_from_files``)."""
    from tracker.books.parse import book_from_files

    return book_from_files(name, files)


def chapter_work_id(book_id: str, index: int) -> str:
    return f"{book_id}-{index:04d}"


def book_id_for(name: str, title: str = "") -> str:
    """A book id from a file or folder name (its stem), else from a digest of the name
    and title (a stem that is no valid id)."""
    stem = Path(name.rsplit("!", 1)[-1].replace("\\", "/")).stem
    if stem and id_problem(stem) is None and len(stem) <= 120:
        return check_id(stem)
    digest = hashlib.sha1(f"{name}\x1f{title}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"book-{digest[:12]}"


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
class MigrationReport:
    """What ``migrate_legacy`` did (``already``: it had run before, nothing done)."""

    already: bool = False
    books_created: int = 0
    books_updated: int = 0
    chapters_labelled: int = 0
    whole_books: list[str] = field(default_factory=list)  # work ids read as one-chapter books
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "already": self.already,
            "books_created": self.books_created,
            "books_updated": self.books_updated,
            "chapters_labelled": self.chapters_labelled,
            "whole_books": list(self.whole_books),
            "notes": list(self.notes),
        }


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

    def __init__(self, library: Library, books: BookStore | None = None) -> None:
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
            self._label(book, chapter)
        return book

    def _label(self, book: Book, chapter: BookChapter, *, retitle: bool = True) -> bool:
        """Write the book fields into a chapter work's metadata (legacy title keys kept
        current too); its title becomes ``《书名》章`` when ``retitle``."""
        try:
            mother = self.store.get_mother(chapter.work_id)
        except (NotFound, KeyError):
            return False
        meta = dict(mother.metadata or {})
        meta.update(book.chapter_metadata(chapter))
        if "work_title" in meta:
            meta["work_title"] = book.title
        title = book.chapter_title(chapter) if retitle else None
        return self.store.update_mother_metadata(mother.id, meta, title=title)

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

    # -- the migration ----------------------------------------------------------------------
    def ensure_migrated(self) -> None:
        """Run ``migrate_legacy`` once per library (a read-only library: never)."""
        if self._migrated:
            return
        self._migrated = True
        if self.store.read_only or self.store.get_meta(MIGRATED_META) is not None:
            return
        self.migration = self.migrate_legacy()

    def migrate_legacy(self, *, force: bool = False) -> MigrationReport:
        """Books from a library stored before them, keeping every id, verdict and case.

        - works group into books by ``ChapterRef.from_metadata`` with ``from_title``
          (the reader cases use on a library not yet migrated, so both group the
          same works into the same book): ``book_id``, ``work`` or ``book`` metadata,
          a ``book_title``/``work_title`` alone, else a ``《书名》章节名`` title (the key
          is the book's id when it is a valid id); the title from
          ``book_title``/``work_title``, else the key; chapters ordered by
          ``chapter_index``, else the chapter number in their titles, else their ids;
        - a work in no book of at least ``WHOLE_BOOK_MIN_CHARS`` characters whose text
          ``tracker.books.parse`` splits into two or more chapters (a whole book stored
          as one work) becomes a book of one chapter,
          that work: its id and matches stay; re-ingest the file to split it;
        - only book records and chapter metadata are written (titles, texts, seqs,
          matches, verdicts and cases untouched). Idempotent: a book already recorded
          gets the chapters it lacks. Marked done in the store's meta."""
        report = MigrationReport()
        if not force and self.store.get_meta(MIGRATED_META) is not None:
            report.already = True
            return report
        groups: dict[str, list[Mother]] = {}
        loose: list[Mother] = []
        for mother in _all_mothers(self.store):
            ref = ChapterRef.of(mother, from_title=True)
            if ref is None:
                loose.append(mother)
            else:
                groups.setdefault(ref.book_id, []).append(mother)
        existing = {b.id: b for b in self.books.list_books()}
        for key, members in groups.items():
            self._migrate_group(key, members, existing, report)
        for mother in loose:
            if mother.chars >= WHOLE_BOOK_MIN_CHARS:
                self._migrate_whole(mother, existing, report)
        self.store.set_meta(
            MIGRATED_META, {"at": utcnow().isoformat(), **report.to_dict(), "already": False}
        )
        self._migrated = True
        return report

    def _migrate_group(
        self, key: str, members: list[Mother], existing: dict[str, Book], report: MigrationReport
    ) -> None:
        first = members[0]
        ref = ChapterRef.of(first, from_title=True)
        assert ref is not None
        book_id = key if id_problem(key) is None else book_id_for(key, ref.book_title)
        book = existing.get(book_id)
        created = book is None
        if book is None:
            read = (ChapterRef.of(m, from_title=True) for m in members)
            author = next((r.author for r in read if r is not None and r.author), "")
            book = Book(id=book_id, title=ref.book_title, author=author, source="migration")
        known = set(book.work_ids())
        todo = [m for m in members if m.id not in known]
        if not todo and not created:
            return
        refs = {m.id: ChapterRef.of(m, from_title=True) for m in todo}
        next_index = max((c.index for c in book.chapters), default=0)

        def order(m: Mother) -> tuple[int, int, str]:
            r = refs[m.id]
            if r is not None and r.chapter_index is not None:
                return (0, r.chapter_index, _natural(m.id))
            number = _chapter_number(r.chapter if r else "") or _chapter_number(m.title)
            if number is not None:
                return (1, number, _natural(m.id))
            return (2, 0, _natural(m.id))

        taken = {c.index for c in book.chapters}
        for m in sorted(todo, key=order):
            r = refs[m.id]
            index = r.chapter_index if r is not None and r.chapter_index is not None else None
            if index is None or index in taken or index < 1:
                next_index = max(next_index, max(taken, default=0)) + 1
                index = next_index
            taken.add(index)
            chapter = BookChapter(
                index=index,
                title=r.chapter if r is not None else strip_book_title(m.title, book.title),
                work_id=m.id,
                characters=m.chars,
                volume=str(m.metadata.get("volume") or ""),
            )
            book.chapters.append(chapter)
        book.chapters.sort(key=lambda c: c.index)
        self.books.put_book(book)
        existing[book.id] = book
        for chapter in book.chapters:
            if chapter.work_id in {m.id for m in todo} and self._label(
                book, chapter, retitle=False
            ):
                report.chapters_labelled += 1
        if created:
            report.books_created += 1
        else:
            report.books_updated += 1

    def _migrate_whole(
        self, mother: Mother, existing: dict[str, Book], report: MigrationReport
    ) -> None:
        """A work in no book that is a whole book (two or more chapter headings)."""
        try:
            full = self.store.get_mother(mother.id)
        except (NotFound, KeyError):
            return
        if not may_be_book(full.text):
            return
        from tracker.books.parse import split_chapters

        _front, chapters, _warnings = split_chapters(full.text)
        if len(chapters) < 2:
            return
        book_id = mother.id if mother.id not in existing else book_id_for(mother.id, mother.title)
        if book_id in existing:
            return
        title = mother.title.strip().strip("《》") or mother.id
        book = Book(
            id=book_id,
            title=title,
            author=str(full.metadata.get("author") or ""),
            source=full.source or "migration",
            chapters=[BookChapter(1, "", mother.id, mother.chars)],
        )
        self.books.put_book(book)
        existing[book.id] = book
        self._label(book, book.chapters[0], retitle=False)
        report.books_created += 1
        report.chapters_labelled += 1
        report.whole_books.append(mother.id)
        report.notes.append(
            f"work {mother.id!r} holds a whole book of {len(chapters)} chapters: kept as one "
            f"chapter of book {book_id!r} (its matches stay); ingest the file again to have "
            "it in chapters"
        )


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
        """A ``tracker.documents.BookReader``: the chapters of a whole-book file, or
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


def parse_book_file(data: bytes, name: str, mode: IngestMode) -> ParsedBook | DocumentError | None:
    """A file's book as ``BookIngest.read_file`` takes it: the parsed book, its error
    named, or None to read the file as one work (``mode`` "works", or in "auto" a file
    without two chapter headings)."""
    suffix = Path(name).suffix.lower()
    if mode == "works" and suffix != ".epub":
        return None
    with _decoding_once():  # a TXT read here and by the book reader: decoded once
        if mode == "auto" and suffix != ".epub":
            try:
                text = _plain_text(data, name, suffix)
            except ValueError:
                return None  # the document reader says what is wrong with it
            if not may_be_book(text):
                return None
        try:
            parsed = book_from_file(name, data)
        except ValueError as exc:  # BookFileError, named by the reader
            return DocumentError(name, str(exc).removeprefix(f"{name}: "))
    if mode == "auto" and suffix != ".epub" and len(parsed.chapters) < 2:
        return None  # a plain work after all
    return parsed


@dataclass
class _EarlyRead:
    data: bytes
    parsed: ParsedBook | DocumentError | None


class EarlyReads:
    """Whole-book files read and parsed in a thread of their own while the caller opens
    the library (``yinji ingest``: the embedded index server starts meanwhile). Only
    plain files given by path are read early; ``BookIngest.read_file`` takes a file's
    result when the bytes it was handed are the same, else reads them itself."""

    SUFFIXES = (".txt", ".html", ".htm", ".docx", ".epub")

    def __init__(
        self, paths: Iterable[str | Path], mode: IngestMode, max_bytes: int = 64 << 20
    ) -> None:
        self.mode = mode
        files = [Path(p) for p in paths]
        self._wanted = [
            f for f in files if f.suffix.lower() in self.SUFFIXES and _small_file(f, max_bytes)
        ]
        self._done: dict[str, _EarlyRead] = {}
        self._thread = threading.Thread(target=self._read_all, name="yinji-book-read", daemon=True)
        if self._wanted and mode != "works":
            self._thread.start()

    def _read_all(self) -> None:
        for f in self._wanted:
            name = file_label(os.fsdecode(f))
            try:
                data = f.read_bytes()
                self._done[name] = _EarlyRead(data, parse_book_file(data, name, self.mode))
            except Exception:  # read again (and its error said) by the ingest
                continue

    def take(self, name: str, data: bytes) -> _EarlyRead | None:
        """The early read of ``name`` when it read these bytes (waiting for the reader)."""
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()
        read = self._done.pop(name, None)
        return read if read is not None and read.data == data else None


def _small_file(path: Path, max_bytes: int) -> bool:
    try:
        return path.is_file() and path.stat().st_size <= max_bytes
    except OSError:
        return False


# -- helpers ---------------------------------------------------------------------------------
def _decoding_once() -> contextlib.AbstractContextManager[None]:
    from tracker.books.parse import decoding_once

    return decoding_once()


def _txt_text(data: bytes, name: str) -> str:
    """A TXT's text as the book reader reads it (``decode_book_text``: decoded once in
    ``_decoding_once``), or as the document reader does when that refuses it."""
    from tracker.books.parse import decode_book_text, reads_as_txt

    if reads_as_txt(name, data):
        with contextlib.suppress(ValueError):
            return decode_book_text(name or "<book>", data)
    return decode_text(data, name)


def _plain_text(data: bytes, name: str, suffix: str) -> str:
    if suffix == ".txt":
        return _txt_text(data, name)
    if suffix in (".html", ".htm"):
        return extract_html(decode_html_bytes(data, name))[1]
    if suffix == ".docx":
        return docx_text(data, name)
    return ""


def _all_mothers(store: Store) -> Iterator[Mother]:
    """Every work without its text (pages of a listing), oldest last."""
    offset, page = 0, 1000
    while True:
        batch = store.list_mothers(offset=offset, limit=page, with_text=False)
        yield from batch
        if len(batch) < page:
            return
        offset += page


def _natural(text: str) -> str:
    """Ids with numbers compared by value ("ch-2" before "ch-10")."""
    return re.sub(r"\d+", lambda m: f"{int(m.group()):012d}", text)


def _chapter_number(text: str) -> int | None:
    from tracker.cases.chapters import chapter_number  # the one numeral reader

    return chapter_number(text)
