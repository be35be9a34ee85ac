"""A book and its chapters as the library keeps them (issue #36).

Each chapter is a work (a ``Mother``) on its own; the ``Book`` record orders them and
holds what belongs to the whole book (title, author, series, ISBN, language, where it
came from). The chapter works carry the book in their metadata (``CHAPTER_FIELDS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from tracker.common.records import ChapterRef, JSONObject, utcnow
from tracker.common.timefmt import iso_utc

#: The metadata keys a chapter work carries (the contract of issue #36).
CHAPTER_FIELDS = ("book_id", "book_title", "author", "chapter", "chapter_index", "volume")
#: The store meta key the migration of a library stored before books marks done
#: (``tracker.books.service.BookService.migrate_legacy``); until it is there, a work's
#: ``《书名》章节名`` title still names its book (``ChapterRef.from_metadata``'s
#: ``from_title``).
MIGRATED_META = "books:migrated"


class BookChapterRecord(TypedDict):
    index: int
    title: str
    work_id: str
    characters: int
    volume: str


class BookRecord(TypedDict):
    id: str
    title: str
    author: str
    series: str
    isbn: str
    language: str
    source: str
    created_at: str
    chapters: list[BookChapterRecord]


@dataclass
class BookChapter:
    """One chapter: its position, its heading as in the book, and the work holding it."""

    index: int  # 1-based position in the book
    title: str  # the heading as in the book ("" for a book without headings)
    work_id: str  # the id of the chapter's work (a Mother)
    characters: int  # length of the chapter's text
    volume: str = ""  # the volume heading it sits under, if any

    def to_dict(self) -> JSONObject:
        """``book show --json``'s chapter: ``{index, title, work_id, characters}`` (and
        ``volume`` when it has one)."""
        out: JSONObject = {
            "index": self.index,
            "title": self.title,
            "work_id": self.work_id,
            "characters": self.characters,
        }
        if self.volume:
            out["volume"] = self.volume
        return out

    def record(self) -> BookChapterRecord:
        return {
            "index": self.index,
            "title": self.title,
            "work_id": self.work_id,
            "characters": self.characters,
            "volume": self.volume,
        }

    @classmethod
    def from_record(cls, d: Mapping[str, object]) -> BookChapter:
        return cls(
            index=_int(d.get("index")),
            title=str(d.get("title") or ""),
            work_id=str(d.get("work_id") or ""),
            characters=_int(d.get("characters")),
            volume=str(d.get("volume") or ""),
        )


@dataclass
class Book:
    """A book of the library: its chapters in book order."""

    id: str
    title: str
    author: str = ""
    series: str = ""
    isbn: str = ""
    language: str = ""
    source: str = ""  # the file (or files) it was read from
    created_at: datetime = field(default_factory=utcnow)
    chapters: list[BookChapter] = field(default_factory=list)

    @property
    def characters(self) -> int:
        return sum(c.characters for c in self.chapters)

    def chapter_of(self, work_id: str) -> BookChapter | None:
        for c in self.chapters:
            if c.work_id == work_id:
                return c
        return None

    def work_ids(self) -> list[str]:
        return [c.work_id for c in self.chapters]

    def chapter_metadata(self, chapter: BookChapter) -> JSONObject:
        """The book fields a chapter's work carries in its metadata."""
        meta: JSONObject = {
            "book_id": self.id,
            "book_title": self.title,
            "author": self.author,
            "chapter": chapter.title,
            "chapter_index": chapter.index,
        }
        if chapter.volume:
            meta["volume"] = chapter.volume
        return meta

    def chapter_title(self, chapter: BookChapter) -> str:
        """A chapter work's title: ``《书名》第一章 …`` (``《书名》`` for a chapter
        without a heading)."""
        return ChapterRef(self.id, self.title, chapter.title).label()

    def chapter_ref(self, chapter: BookChapter) -> ChapterRef:
        """The book fields of one of its chapters, as this record states them."""
        return ChapterRef(
            self.id, self.title, chapter.title, chapter.index, self.author, chapter.volume
        )

    def summary(self) -> JSONObject:
        """``book list --json``'s object: ``chapters`` is the number of chapters."""
        return {
            "id": self.id,
            "title": self.title,
            "author": self.author,
            "chapters": len(self.chapters),
            "characters": self.characters,
            "series": self.series,
            "isbn": self.isbn,
            "language": self.language,
            "source": self.source,
            "created_at": iso_utc(self.created_at),
        }

    def to_dict(self) -> JSONObject:
        """``book show --json``: the book with ``chapters`` as a list of ``{index,
        title, work_id, characters}``."""
        out = self.summary()
        out["chapters"] = [c.to_dict() for c in self.chapters]
        return out

    def record(self) -> BookRecord:
        """What the book stores keep."""
        return {
            "id": self.id,
            "title": self.title,
            "author": self.author,
            "series": self.series,
            "isbn": self.isbn,
            "language": self.language,
            "source": self.source,
            "created_at": self.created_at.isoformat(),
            "chapters": [c.record() for c in self.chapters],
        }

    @classmethod
    def from_record(cls, d: Mapping[str, object]) -> Book:
        chapters = d.get("chapters")
        created = d.get("created_at")
        return cls(
            id=str(d["id"]),
            title=str(d.get("title") or ""),
            author=str(d.get("author") or ""),
            series=str(d.get("series") or ""),
            isbn=str(d.get("isbn") or ""),
            language=str(d.get("language") or ""),
            source=str(d.get("source") or ""),
            created_at=(
                datetime.fromisoformat(created)
                if isinstance(created, str)
                else created
                if isinstance(created, datetime)
                else utcnow()
            ),
            chapters=[
                BookChapter.from_record(c)
                for c in (chapters if isinstance(chapters, list) else [])
                if isinstance(c, Mapping)
            ],
        )


def _int(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return 0
