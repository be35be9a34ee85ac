"""Where book records live: beside the library's own store, chosen by
``book_store_for(store)`` — a ``books`` table in the library's sqlite file (on the
store's own connections, so the same read-only, fork and busy rules hold), or a
``books`` collection in the library's MongoDB database.

A book record is one row / document: the book's fields and its ordered chapter list
(index, heading, work id, characters, volume). The chapters' texts are works
(``Mother`` records) of the main store, which carry the book in their metadata.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from tracker.common.records import ChapterRef, NotFound

from .model import Book, BookChapter

if TYPE_CHECKING:
    from tracker.common.records import Mother
    from tracker.store import Store
    from tracker.store.mongo import MongoStore
    from tracker.store.sqlite import SqliteStore


class BookStore(ABC):
    """Book records: put (insert or replace by id), get, list, delete."""

    @abstractmethod
    def put_book(self, book: Book) -> None:
        """Insert or replace the record of ``book.id``."""

    @abstractmethod
    def find_book(self, book_id: str) -> Book | None: ...

    def get_book(self, book_id: str) -> Book:
        """Raise ``NotFound`` naming the id if there is no such book."""
        book = self.find_book(book_id)
        if book is None:
            raise NotFound(f"no book with id {book_id!r}")
        return book

    @abstractmethod
    def list_books(self) -> list[Book]:
        """Every book, by title then id."""

    @abstractmethod
    def delete_book(self, book_id: str) -> bool:
        """Delete the record (not its works); False if there was none."""

    def drop_chapter(self, work: Mother) -> bool:
        """A chapter work deleted on its own (``yinji delete``) leaves its book's
        chapter list; a book left without chapters goes. False if no book held it."""
        ref = ChapterRef.from_metadata(work.metadata or {}, work.title)
        book = self.find_book(ref.book_id) if ref is not None else None
        if book is None or book.chapter_of(work.id) is None:
            return False
        book.chapters = [c for c in book.chapters if c.work_id != work.id]
        if book.chapters:
            self.put_book(book)
        else:
            self.delete_book(book.id)
        return True


def _sort(books: list[Book]) -> list[Book]:
    return sorted(books, key=lambda b: (b.title, b.id))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS books (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    author     TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    doc        TEXT NOT NULL
)
"""


class SqliteBookStore(BookStore):
    """The ``books`` table of the library's sqlite file."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        if not store.read_only:
            with store._tx() as c:
                c.execute(_SCHEMA)

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return list(self.store._conn().execute(sql, params))
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # a read-only library from before books
                return []
            raise

    def put_book(self, book: Book) -> None:
        rec = book.record()
        doc = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
        with self.store._tx() as c:
            c.execute(
                "INSERT INTO books(id, title, author, created_at, doc) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET title = excluded.title, "
                "author = excluded.author, doc = excluded.doc",
                (book.id, book.title, book.author, rec["created_at"], doc),
            )

    def find_book(self, book_id: str) -> Book | None:
        rows = self._rows("SELECT doc FROM books WHERE id = ?", (book_id,))
        return Book.from_record(json.loads(rows[0]["doc"])) if rows else None

    def list_books(self) -> list[Book]:
        rows = self._rows("SELECT doc FROM books ORDER BY title, id")
        return _sort([Book.from_record(json.loads(r["doc"])) for r in rows])

    def delete_book(self, book_id: str) -> bool:
        with self.store._tx() as c:
            return c.execute("DELETE FROM books WHERE id = ?", (book_id,)).rowcount > 0


class MongoBookStore(BookStore):
    """The ``books`` collection of the library's MongoDB database (``_id``: book id)."""

    def __init__(self, store: MongoStore) -> None:
        self.books = store.db["books"]

    def put_book(self, book: Book) -> None:
        doc: dict[str, Any] = dict(book.record())
        self.books.replace_one({"_id": book.id}, {"_id": book.id, **doc}, upsert=True)

    def find_book(self, book_id: str) -> Book | None:
        doc = self.books.find_one({"_id": book_id})
        return None if doc is None else Book.from_record(doc)

    def list_books(self) -> list[Book]:
        return _sort([Book.from_record(d) for d in self.books.find({})])

    def delete_book(self, book_id: str) -> bool:
        return self.books.delete_one({"_id": book_id}).deleted_count > 0


def leave_book(store: Store, work: Mother) -> bool:
    """A chapter work deleted on its own leaves its book (``BookStore.drop_chapter``);
    a work in no book touches no book store."""
    if ChapterRef.from_metadata(work.metadata or {}) is None:
        return False
    return book_store_for(store).drop_chapter(work)


def label_chapter(store: Store, book: Book, chapter: BookChapter, *, retitle: bool = True) -> bool:
    """Write the book fields into a chapter work's metadata in ``store`` (legacy title
    keys kept current too); its title becomes ``《书名》章`` when ``retitle``. False when
    the work is gone."""
    try:
        mother = store.get_mother(chapter.work_id)
    except (NotFound, KeyError):
        return False
    meta = dict(mother.metadata or {})
    meta.update(book.chapter_metadata(chapter))
    if "work_title" in meta:
        meta["work_title"] = book.title
    title = book.chapter_title(chapter) if retitle else None
    return store.update_mother_metadata(mother.id, meta, title=title)


def book_store_for(store: Store) -> BookStore:
    """The book store beside ``store`` (same sqlite file, or same MongoDB database)."""
    from tracker.store.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        return SqliteBookStore(store)
    from tracker.store.mongo import MongoStore

    if isinstance(store, MongoStore):
        return MongoBookStore(store)
    raise TypeError(f"no book store for a {type(store).__name__}")
