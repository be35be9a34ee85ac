"""Where a library's books are copied, read from what is stored (issue #36): the
matches (a chapter's work found on a page), their verdicts, and the takedown cases
(a notice sent, a page removed). Nothing here writes.

- ``BookIndex``: which book and chapter a work is, from the book records (one pass
  over them, then a dictionary); ``chapter_label`` names a chapter the way people do:
  ``《西游记》第四十一回 心猿遭火败 木母被魔擒`` (zh) or
  ``"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)`` (en).
- ``book_grid``: one book's chapters × sites (a site is host and port, ``site_of``),
  each cell the furthest step reached there: ``pirated`` (a match that was not
  dismissed) → ``confirmed`` (a confirmed match) → ``noticed`` (the chapter's page is
  in a case whose notice was sent) → ``removed`` (every page of the chapter in the
  site's cases is gone).
- ``book_summaries``: per book, the chapters found pirated and the sites with
  confirmed / only pending matches (the library's list), in one pass over the matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from tracker.records import ChapterRef, JSONObject, Match, MatchQuery

from .model import Book, BookChapter

if TYPE_CHECKING:
    from tracker.cases.model import Case
    from tracker.store import Store

CellState = Literal["pirated", "confirmed", "noticed", "removed"]
#: The steps of a cell, in order: a cell shows the furthest one reached.
STEPS: tuple[CellState, ...] = ("pirated", "confirmed", "noticed", "removed")
#: Case states in which the case's notice has gone out.
_NOTICED_STATES = frozenset(
    {"notice_sent", "documents", "still_online", "removed", "compensated", "disputed"}
)
#: Case states that say the copies are gone (a person or the re-check said so).
_REMOVED_STATES = frozenset({"removed", "compensated"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCAN_PAGE = 1000


def site_of(url: str, domain: str = "") -> str:
    """The site of a page: its host, with the port when it is not the scheme's default
    (``127.0.0.1:8001``; two servers on one host are two sites). ``domain`` when the
    URL gives no host; "" for a match without a URL (a pasted text)."""
    try:
        parts = urlsplit((url or "").strip())
        host = (parts.hostname or "").strip(".").lower()
        port = parts.port
    except ValueError:
        return domain
    if not host:
        return domain
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        return f"{host}:{port}"
    return host


def chapter_label(ref: ChapterRef, lang: str = "zh") -> str:
    """A chapter as people name it: ``《西游记》第四十一回 心猿遭火败 木母被魔擒`` in
    Chinese; ``"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)`` in English (the
    number is the chapter's place in the book, the heading the book's own)."""
    title = ref.book_title.strip().strip("《》")
    if lang != "en":
        return f"《{title}》{ref.chapter}"
    out = f'"{title}"'
    if ref.chapter_index is not None:
        out += f", chapter {ref.chapter_index}"
        if ref.chapter:
            out += f" ({ref.chapter})"
    elif ref.chapter:
        out += f", {ref.chapter}"
    return out


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
        return ChapterRef(book.id, book.title, chapter.title, chapter.index)

    def label(self, work_id: str, lang: str = "zh") -> str:
        """``chapter_label`` of the work; "" when it is in no book."""
        ref = self.ref(work_id)
        return chapter_label(ref, lang) if ref is not None else ""

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


def _add_match(cells: dict[tuple[str, str], Cell], m: Match) -> None:
    if m.verdict == "dismissed":
        return
    site = site_of(m.suspect_url, m.domain)
    cell = cells.get((m.mother_id, site))
    if cell is None:
        cell = cells[(m.mother_id, site)] = Cell(m.mother_id, site, "pirated")
    cell.matches += 1
    if m.verdict == "confirmed":
        cell.confirmed += 1
        if STEPS.index(cell.state) < STEPS.index("confirmed"):
            cell.state = "confirmed"
    else:
        cell.pending += 1
    if m.suspect_url and m.suspect_url not in cell.urls:
        cell.urls.append(m.suspect_url)


def book_matches(store: Store, book: Book) -> Iterator[Match]:
    """Every stored match of the book's chapters (one query a chapter)."""
    for chapter in book.chapters:
        offset = 0
        while True:
            rows = store.query_matches(
                MatchQuery(
                    mother_id=chapter.work_id, sort="created_at", offset=offset, limit=_SCAN_PAGE
                )
            )
            yield from rows
            if len(rows) < _SCAN_PAGE:
                break
            offset += _SCAN_PAGE


def book_grid(book: Book, matches: Iterable[Match], cases: Iterable[Case]) -> BookGrid:
    """The chapters × sites grid of ``book`` from its stored ``matches`` and the
    ``cases`` (any cases: those holding none of the book's works are passed over)."""
    works = set(book.work_ids())
    cells: dict[tuple[str, str], Cell] = {}
    for m in matches:
        if m.mother_id in works:
            _add_match(cells, m)
    # The pages of each (chapter, site) in cases: noticed when a notice went out for
    # one of them, removed when every one is gone.
    pages: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
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
            pages.setdefault(key, []).append((noticed, gone))
    for key, found in pages.items():
        cell = cells[key]
        if all(removed for _, removed in found):
            cell.state = "removed"
        elif any(noticed for noticed, _ in found):
            cell.state = "noticed"
        elif cell.state == "pirated" and not cell.matches:
            cell.state = "confirmed"  # filed in a case: it was confirmed once
    sites = sorted({site for _, site in cells}, key=lambda s: (s == "", s))
    return BookGrid(book, sites, cells)


def book_summaries(store: Store, index: BookIndex) -> dict[str, BookSummary]:
    """Every book's ``BookSummary`` (a book without matches has zeros), in one pass
    over the stored matches."""
    cells: dict[str, dict[tuple[str, str], Cell]] = {b: {} for b in index.books}
    offset = 0
    while True:
        rows = store.query_matches(MatchQuery(sort="created_at", offset=offset, limit=_SCAN_PAGE))
        for m in rows:
            found = index.of(m.mother_id)
            if found is not None:
                _add_match(cells[found[0].id], m)
        if len(rows) < _SCAN_PAGE:
            break
        offset += _SCAN_PAGE
    return {book_id: _summary(book_id, c.values()) for book_id, c in cells.items()}


def book_match_counts(
    store: Store, index: BookIndex, query: MatchQuery | None = None, top: int = 10
) -> list[tuple[Book, int]]:
    """The books with the most matches under ``query``'s filters (its paging
    ignored), most first: the analytics page's "most-copied books"."""
    base = query or MatchQuery()
    counts: dict[str, int] = {}
    offset = 0
    while True:
        rows = store.query_matches(
            replace(base, sort="created_at", offset=offset, limit=_SCAN_PAGE)
        )
        for m in rows:
            found = index.of(m.mother_id)
            if found is not None:
                counts[found[0].id] = counts.get(found[0].id, 0) + 1
        if len(rows) < _SCAN_PAGE:
            break
        offset += _SCAN_PAGE
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], index.books[kv[0]].title, kv[0]))
    return [(index.books[book_id], n) for book_id, n in ranked[:top]]
