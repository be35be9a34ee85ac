"""The migration of a library stored before books (issue #36): its works made books
once, keeping every work id, verdict and case (``LegacyMigration``; marked done in the
store's meta ``books:migrated``). ``tracker.books.service.BookService`` runs it lazily
before its first read or write; ``yinji book migrate`` runs it by hand."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tracker.common.ids import id_problem
from tracker.common.records import ChapterRef, JSONObject, NotFound, strip_book_title, utcnow

from .files import book_id_for, may_be_book
from .model import MIGRATED_META, Book, BookChapter
from .store import BookStore, label_chapter

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tracker.store import Mother, Store

#: A work shorter than this is not read by the migration as a possible whole book (two
#: chapters of a novel are longer; articles are spared the read of their text).
WHOLE_BOOK_MIN_CHARS = 5000


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


class LegacyMigration:
    """Books from the works of ``store`` stored before books (``run``)."""

    def __init__(self, store: Store, books: BookStore) -> None:
        self.store = store
        self.books = books

    def run(self, *, force: bool = False) -> MigrationReport:
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
            self._group(key, members, existing, report)
        for mother in loose:
            if mother.chars >= WHOLE_BOOK_MIN_CHARS:
                self._whole(mother, existing, report)
        self.store.set_meta(
            MIGRATED_META, {"at": utcnow().isoformat(), **report.to_dict(), "already": False}
        )
        return report

    def _group(
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
            if chapter.work_id in {m.id for m in todo} and label_chapter(
                self.store, book, chapter, retitle=False
            ):
                report.chapters_labelled += 1
        if created:
            report.books_created += 1
        else:
            report.books_updated += 1

    def _whole(self, mother: Mother, existing: dict[str, Book], report: MigrationReport) -> None:
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
        label_chapter(self.store, book, book.chapters[0], retitle=False)
        report.books_created += 1
        report.chapters_labelled += 1
        report.whole_books.append(mother.id)
        report.notes.append(
            f"work {mother.id!r} holds a whole book of {len(chapters)} chapters: kept as one "
            f"chapter of book {book_id!r} (its matches stay); ingest the file again to have "
            "it in chapters"
        )


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
