"""Where a library's books are copied, read from what is stored (issue #36): the
matches (a chapter's work found on a page), their verdicts, and the takedown cases
(a notice sent, a page removed). Nothing here writes.

- ``BookIndex``: which book and chapter a work is, from the book records (one pass
  over them, then a dictionary); ``label`` names a chapter the way people do
  (``ChapterRef.label``): ``《西游记》第四十一回 心猿遭火败 木母被魔擒`` (zh) or
  ``"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)`` (en).
- ``book_grid``: one book's chapters × sites (a site is host and port,
``tracker.common.rules.site_of``),
  each cell the furthest step reached there: ``pirated`` (a match that was not
  dismissed) → ``confirmed`` (a confirmed match) → ``noticed`` (the chapter's page is
  in a case whose notice was sent) → ``removed`` (every page of the chapter in the
  site's cases is gone).
- ``book_summaries``: per book, the chapters found pirated and the sites with
  confirmed / only pending matches (the library's list).
- ``match_pages``: what all of these read of the matches — counts per work, verdict
  and page, grouped by the store (one ``GROUP BY`` / ``$group``), never every match
  with its passages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from tracker.common.records import ChapterRef, JSONObject, Match, MatchQuery
from tracker.common.rules import site_of

from .model import Book, BookChapter

if TYPE_CHECKING:
    from tracker.cases.model import Case
    from tracker.store import Store
    from tracker.store.mongo import MongoStore
    from tracker.store.sqlite import SqliteStore

CellState = Literal["pirated", "confirmed", "noticed", "removed"]
#: The steps of a cell, in order: a cell shows the furthest one reached.
STEPS: tuple[CellState, ...] = ("pirated", "confirmed", "noticed", "removed")
#: Case states in which the case's notice has gone out.
_NOTICED_STATES = frozenset(
    {"notice_sent", "documents", "still_online", "removed", "compensated", "disputed"}
)
#: Case states that say the copies are gone (a person or the re-check said so).
_REMOVED_STATES = frozenset({"removed", "compensated"})
_SCAN_PAGE = 1000
_IN_CHUNK = 500  # work ids of one sqlite IN (...)


class BookIndex:
    """Which book (and chapter) each work is, from the book records."""

    def __init__(self, books: Iterable[Book]) -> None:
        self.books: dict[str, Book] = {}
        self._works: dict[str, tuple[Book, BookChapter]] = {}
        for book in books:
            self.books[book.id] = book
            for chapter in book.chapters:
                self._works[chapter.work_id] = (book, chapter)

    def of(self, work_id: str) -> tuple[Book, BookChapter] | None:
        return self._works.get(work_id)

    def ref(self, work_id: str) -> ChapterRef | None:
        """The book fields of a work (``check --json``'s), None when it is in no book."""
        found = self._works.get(work_id)
        if found is None:
            return None
        book, chapter = found
        return book.chapter_ref(chapter)

    def label(self, work_id: str, lang: str = "zh") -> str:
        """The work's chapter named in ``lang`` (``ChapterRef.label``); "" when it is
        in no book."""
        ref = self.ref(work_id)
        return ref.label(lang) if ref is not None else ""

    def named(self, match: Match) -> Match:
        """The match with ``book`` set (a copy; the stored match is not changed)."""
        return replace(match, book=self.ref(match.mother_id))


@dataclass
class Cell:
    """One chapter on one site."""

    work_id: str
    site: str
    state: CellState
    matches: int = 0  # matches not dismissed
    confirmed: int = 0
    pending: int = 0
    urls: list[str] = field(default_factory=list)  # the pages of the matches
    case_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "work_id": self.work_id,
            "site": self.site,
            "state": self.state,
            "matches": self.matches,
            "confirmed": self.confirmed,
            "pending": self.pending,
            "urls": list(self.urls),
            "case_ids": list(self.case_ids),
        }


@dataclass
class BookSummary:
    """A book's copies in figures (the library's list)."""

    book_id: str
    chapters_pirated: int = 0  # chapters with a match not dismissed
    sites_confirmed: int = 0  # sites where a chapter's match is confirmed
    sites_pending: int = 0  # sites with pending matches only
    sites: list[str] = field(default_factory=list)  # every site with a match, by name

    def to_dict(self) -> JSONObject:
        return {
            "chapters_pirated": self.chapters_pirated,
            "sites_confirmed": self.sites_confirmed,
            "sites_pending": self.sites_pending,
            "sites": list(self.sites),
        }


@dataclass
class BookGrid:
    """A book's chapters × sites; a cell only where a chapter was found on a site."""

    book: Book
    sites: list[str]
    cells: dict[tuple[str, str], Cell]

    def cell(self, work_id: str, site: str) -> Cell | None:
        return self.cells.get((work_id, site))

    def row(self, chapter: BookChapter) -> list[Cell | None]:
        return [self.cells.get((chapter.work_id, s)) for s in self.sites]

    def summary(self) -> BookSummary:
        return _summary(self.book.id, self.cells.values())

    def to_dict(self) -> JSONObject:
        """``{"sites": [...], "chapters": [{"index", "work_id", "cells": {site:
        cell}}]}``: a chapter lists only the sites it was found on."""
        return {
            "sites": list(self.sites),
            "chapters": [
                {
                    "index": c.index,
                    "work_id": c.work_id,
                    "cells": {
                        site: cell.to_dict()
                        for site in self.sites
                        if (cell := self.cells.get((c.work_id, site))) is not None
                    },
                }
                for c in self.book.chapters
            ],
        }


def _summary(book_id: str, cells: Iterable[Cell]) -> BookSummary:
    chapters: set[str] = set()
    confirmed: set[str] = set()
    pending: set[str] = set()
    for cell in cells:
        if cell.matches:
            chapters.add(cell.work_id)
        if cell.confirmed:
            confirmed.add(cell.site)
        elif cell.pending:
            pending.add(cell.site)
    sites = confirmed | pending
    return BookSummary(
        book_id,
        chapters_pirated=len(chapters),
        sites_confirmed=len(confirmed),
        sites_pending=len(pending - confirmed),
        sites=sorted(sites),
    )


@dataclass(frozen=True)
class MatchPage:
    """The stored matches of one work on one page with one verdict, counted: what the
    figures need of the matches, without their passages."""

    mother_id: str
    verdict: str
    url: str
    domain: str
    count: int


def match_pages(
    store: Store, query: MatchQuery | None = None, mother_ids: Iterable[str] | None = None
) -> Iterator[MatchPage]:
    """The matches under ``query``'s filters (its paging ignored), and of
    ``mother_ids`` when given, grouped by work, verdict and page: one ``GROUP BY`` in
    sqlite, one ``$group`` in MongoDB (with the stores' own filters), so that the
    figures of a library with many matches do not read every match with its passages.
    Any other store: its matches read page by page."""
    from tracker.store.sqlite import SqliteStore

    ids = None if mother_ids is None else sorted(set(mother_ids))
    if ids is not None and not ids:
        return
    if isinstance(store, SqliteStore):
        yield from _sqlite_pages(store, query, ids)
        return
    if type(store).__name__ == "MongoStore":  # its module (pymongo) only when in use
        from tracker.store.mongo import MongoStore

        if isinstance(store, MongoStore):
            yield from _mongo_pages(store, query, ids)
            return
    yield from _scanned_pages(store, query, ids)


def _sqlite_pages(
    store: SqliteStore, query: MatchQuery | None, ids: list[str] | None
) -> Iterator[MatchPage]:
    from tracker.store.sqlite_matches import _match_where

    where, params = _match_where(query)
    chunks: list[list[str] | None] = (
        [None] if ids is None else [ids[i : i + _IN_CHUNK] for i in range(0, len(ids), _IN_CHUNK)]
    )
    for chunk in chunks:
        sql, args = where, list(params)
        if chunk is not None:
            marks = ", ".join("?" for _ in chunk)
            sql = (
                f"{where} AND mother_id IN ({marks})" if where else f" WHERE mother_id IN ({marks})"
            )
            args += chunk
        rows = store._conn().execute(
            "SELECT mother_id, verdict, suspect_url, domain, count(*) FROM matches"
            f"{sql} GROUP BY mother_id, verdict, suspect_url, domain",
            args,
        )
        for r in rows:
            yield MatchPage(str(r[0]), str(r[1]), str(r[2] or ""), str(r[3] or ""), int(r[4]))


def _mongo_pages(
    store: MongoStore, query: MatchQuery | None, ids: list[str] | None
) -> Iterator[MatchPage]:
    from tracker.store.mongo_matches import _match_filter

    flt = _match_filter(query)
    if ids is not None:
        flt = {"$and": [flt, {"mother_id": {"$in": ids}}]} if flt else {"mother_id": {"$in": ids}}
    pipeline: list[dict[str, object]] = [{"$match": flt}] if flt else []
    pipeline.append(
        {
            "$group": {
                "_id": {
                    "m": "$mother_id",
                    "v": "$verdict",
                    "u": "$suspect_url",
                    "d": "$domain",
                },
                "n": {"$sum": 1},
            }
        }
    )
    for doc in store.matches.aggregate(pipeline):
        key = doc["_id"]
        yield MatchPage(
            str(key.get("m") or ""),
            str(key.get("v") or "pending"),
            str(key.get("u") or ""),
            str(key.get("d") or ""),
            int(doc["n"]),
        )


def _scanned_pages(
    store: Store, query: MatchQuery | None, ids: list[str] | None
) -> Iterator[MatchPage]:
    base = query or MatchQuery()
    wanted = None if ids is None else set(ids)
    counts: dict[tuple[str, str, str, str], int] = {}
    offset = 0
    while True:
        rows = store.query_matches(
            replace(base, sort="created_at", offset=offset, limit=_SCAN_PAGE)
        )
        for m in rows:
            if wanted is None or m.mother_id in wanted:
                key = (m.mother_id, m.verdict, m.suspect_url, m.domain)
                counts[key] = counts.get(key, 0) + 1
        if len(rows) < _SCAN_PAGE:
            break
        offset += _SCAN_PAGE
    for (mother_id, verdict, url, domain), n in counts.items():
        yield MatchPage(mother_id, verdict, url, domain, n)


def _add_page(cells: dict[tuple[str, str], Cell], p: MatchPage) -> None:
    if p.verdict == "dismissed":
        return
    site = site_of(p.url) or p.domain
    cell = cells.get((p.mother_id, site))
    if cell is None:
        cell = cells[(p.mother_id, site)] = Cell(p.mother_id, site, "pirated")
    cell.matches += p.count
    if p.verdict == "confirmed":
        cell.confirmed += p.count
        if STEPS.index(cell.state) < STEPS.index("confirmed"):
            cell.state = "confirmed"
    else:
        cell.pending += p.count
    if p.url and p.url not in cell.urls:
        cell.urls.append(p.url)


def book_pages(store: Store, book: Book) -> Iterator[MatchPage]:
    """The grouped matches (``match_pages``) of the book's chapters."""
    return match_pages(store, mother_ids=book.work_ids())


def book_grid(book: Book, pages: Iterable[MatchPage], cases: Iterable[Case]) -> BookGrid:
    """The chapters × sites grid of ``book`` from its stored matches (``book_pages``)
    and the ``cases`` (any cases: those holding none of the book's works are passed
    over)."""
    works = set(book.work_ids())
    cells: dict[tuple[str, str], Cell] = {}
    for p in pages:
        if p.mother_id in works:
            _add_page(cells, p)
    # The pages of each (chapter, site) in cases: noticed when a notice went out for
    # one of them, removed when every one is gone.
    filed: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for case in cases:
        noticed = case.notice_sent_at is not None or case.state in _NOTICED_STATES
        for u in case.urls:
            if u.mother_id not in works:
                continue
            key = (u.mother_id, site_of(u.url))
            cell = cells.get(key)
            if cell is None:  # a case's page whose match is gone or dismissed since
                cell = cells[key] = Cell(key[0], key[1], "pirated")
            if case.id not in cell.case_ids:
                cell.case_ids.append(case.id)
            gone = u.status == "removed" or case.state in _REMOVED_STATES
            filed.setdefault(key, []).append((noticed, gone))
    for key, found in filed.items():
        cell = cells[key]
        if all(removed for _, removed in found):
            cell.state = "removed"
        elif any(noticed for noticed, _ in found):
            cell.state = "noticed"
        elif cell.state == "pirated" and not cell.matches:
            cell.state = "confirmed"  # filed in a case: it was confirmed once
    sites = sorted({site for _, site in cells}, key=lambda s: (s == "", s))
    return BookGrid(book, sites, cells)


def book_summaries(
    store: Store, index: BookIndex, books: Iterable[Book] | None = None
) -> dict[str, BookSummary]:
    """The ``BookSummary`` of ``books`` (default: every book of the index; a book
    without matches has zeros), from one grouped read of the stored matches
    (``match_pages``; of the books' chapters only when ``books`` is given)."""
    wanted = list(index.books.values()) if books is None else list(books)
    cells: dict[str, dict[tuple[str, str], Cell]] = {b.id: {} for b in wanted}
    ids = None if books is None else [w for b in wanted for w in b.work_ids()]
    for p in match_pages(store, mother_ids=ids):
        found = index.of(p.mother_id)
        if found is not None and found[0].id in cells:
            _add_page(cells[found[0].id], p)
    return {book_id: _summary(book_id, c.values()) for book_id, c in cells.items()}


def book_match_counts(
    store: Store, index: BookIndex, query: MatchQuery | None = None, top: int = 10
) -> list[tuple[Book, int]]:
    """The books with the most matches under ``query``'s filters (its paging
    ignored), most first: the analytics page's "most-copied books"."""
    counts: dict[str, int] = {}
    for p in match_pages(store, query):
        found = index.of(p.mother_id)
        if found is not None:
            counts[found[0].id] = counts.get(found[0].id, 0) + p.count
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], index.books[kv[0]].title, kv[0]))
    return [(index.books[book_id], n) for book_id, n in ranked[:top]]
