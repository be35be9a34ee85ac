"""The models of the books (``web/handlers/books_api.py``)."""

from __future__ import annotations

from pydantic import ConfigDict, RootModel

from tracker.books.stats import CellState

from .base import ApiModel, TimeOrNull


class BookCopies(ApiModel):
    """What the stored matches say of a book's copies"""

    chapters_pirated: int | None = None
    """Chapters with a match that was not dismissed"""
    sites_confirmed: int | None = None
    """Sites (host:port) where a chapter's match is confirmed"""
    sites_pending: int | None = None
    """Sites with pending matches only"""
    sites: list[str] | None = None


class BookFields(ApiModel):
    """What a book's list entry and its whole record both say of it."""

    id: str
    title: str
    """Without 《》"""
    author: str
    characters: int | None = None
    series: str | None = None
    isbn: str | None = None
    language: str | None = None
    source: str | None = None
    """The file (or files) it was read from"""
    created_at: TimeOrNull = None


class BookSummary(BookFields):
    """One object of `yinji book list --json`, with `copies`"""

    chapters: int
    """The number of chapters"""
    copies: BookCopies | None = None


class BookChapter(ApiModel):
    index: int
    """1-based position in the book"""
    title: str
    """The heading as in the book"""
    work_id: str
    """The chapter's work (mother) id"""
    characters: int
    volume: str | None = None


class BookCell(ApiModel):
    """One chapter on one site: the furthest step reached"""

    work_id: str | None = None
    site: str | None = None
    """host, or host:port off the default"""
    state: CellState | None = None
    matches: int | None = None
    """Matches not dismissed"""
    confirmed: int | None = None
    pending: int | None = None
    urls: list[str] | None = None
    case_ids: list[str] | None = None


class GridChapter(ApiModel):
    index: int | None = None
    work_id: str | None = None
    cells: dict[str, BookCell] | None = None
    """By site; only the sites the chapter was found on"""


class Grid(ApiModel):
    sites: list[str] | None = None
    chapters: list[GridChapter] | None = None


class Book(BookFields):
    """`yinji book show --json`, with `copies` and the chapters × sites `grid`"""

    chapters: list[BookChapter]
    copies: BookCopies | None = None
    grid: Grid | None = None


class BooksQuery(ApiModel):
    q: str | None = None


class BookSummaryList(RootModel[list[BookSummary]]):
    root: list[BookSummary]


class BookFilesIn(ApiModel):
    files: list[bytes] | None = None
    """.txt .html .htm .docx .epub (a whole book), or .zip (the chapter files of one book)"""


class BookPatch(ApiModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    title: str | None = None
    author: str | None = None
    series: str | None = None
    isbn: str | None = None
    language: str | None = None


class BookRenamed(ApiModel):
    id: str | None = None
    title: str | None = None
    """Without 《》"""
    author: str | None = None
    characters: int | None = None
    series: str | None = None
    isbn: str | None = None
    language: str | None = None
    source: str | None = None
    """The file (or files) it was read from"""
    created_at: TimeOrNull = None
    chapters: int | None = None


class BookDeleted(ApiModel):
    deleted: str | None = None
    works_deleted: int | None = None
    works_missing: list[str] | None = None
