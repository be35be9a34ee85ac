"""The records of a library as the web app reads and writes them: matches, works,
suspects and users, and the book and case reads made over the stored matches.

``LibraryRecords`` is the one way the web app reaches the library's store: each method
is one record read or write (or one tracker function that needs the store, given it
here), so a page never holds the ``Store`` itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from tracker.books.stats import (
    BookIndex,
    BookSummary,
    MatchPage,
    book_match_counts,
    book_pages,
    book_summaries,
)
from tracker.books.store import BookStore, book_store_for
from tracker.common.records import JSONObject, Match, MatchQuery, Mother, Suspect, User
from tracker.store.interfaces import MatchStats, UserStore

if TYPE_CHECKING:
    from tracker.books.model import Book
    from tracker.cases import Case
    from tracker.cases.service import CaseService, VerdictResult
    from tracker.library import Library
    from tracker.store import Store


class LibraryRecords:
    """The record reads and writes of one library's store (the web app's only door)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @classmethod
    def of(cls, library: Library) -> LibraryRecords:
        """The records of ``library`` (its store)."""
        return cls(library.store)

    # --- matches ---------------------------------------------------------------------
    def count_matches(self, query: MatchQuery) -> int:
        """How many matches the query's filters select (offset and limit ignored)."""
        return self._store.count_matches(query)

    def query_matches(self, query: MatchQuery) -> list[Match]:
        """The matches of the query's filters, in its order and page."""
        return self._store.query_matches(query)

    def get_match(self, match_id: str) -> Match:
        """The match of ``match_id``; ``NotFound`` (a ``KeyError``) if absent."""
        return self._store.get_match(match_id)

    def match_stats(self, query: MatchQuery | None = None) -> MatchStats:
        """The analytics page's counts over the filtered matches."""
        return self._store.match_stats(query)

    # --- works (mothers) -------------------------------------------------------------
    def get_work(self, work_id: str) -> Mother:
        """The work of ``work_id``; ``NotFound`` if absent."""
        return self._store.get_mother(work_id)

    def list_works(
        self,
        *,
        search: str | None = None,
        offset: int = 0,
        limit: int = 50,
        with_text: bool = True,
    ) -> list[Mother]:
        """Newest first; ``search`` is a case-insensitive substring of id or title;
        ``with_text=False`` leaves each text empty (``chars`` still gives its length)."""
        return self._store.list_mothers(
            search=search, offset=offset, limit=limit, with_text=with_text
        )

    def count_works(self, *, search: str | None = None) -> int:
        """How many works ``list_works`` would list over all pages."""
        return self._store.count_mothers(search=search)

    # --- suspects --------------------------------------------------------------------
    def get_suspect(self, suspect_id: str) -> Suspect:
        """The suspect of ``suspect_id``; ``NotFound`` if absent."""
        return self._store.get_suspect(suspect_id)

    def list_suspects(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50
    ) -> list[Suspect]:
        """Newest fetched first, without ``raw``."""
        return self._store.list_suspects(search=search, offset=offset, limit=limit)

    def count_suspects(self, *, search: str | None = None) -> int:
        """How many suspects ``list_suspects`` would list over all pages."""
        return self._store.count_suspects(search=search)

    # --- users -----------------------------------------------------------------------
    @property
    def users(self) -> UserStore:
        """The accounts, for ``web.accounts`` (passwords, tokens, roles)."""
        return self._store

    def get_user(self, username: str) -> User | None:
        """The user named ``username``, or None."""
        return self._store.get_user(username)

    def list_users(self) -> list[User]:
        """Every user, in username order."""
        return self._store.list_users()

    def delete_user(self, username: str) -> None:
        """Delete the user (nothing happens when there is none)."""
        self._store.delete_user(username)

    # --- books over the stored matches -----------------------------------------------
    def book_store(self) -> BookStore:
        """The book store beside this store (same sqlite file or MongoDB database)."""
        return book_store_for(self._store)

    def book_summaries(
        self, index: BookIndex, books: Iterable[Book] | None = None
    ) -> dict[str, BookSummary]:
        """``tracker.books.stats.book_summaries`` over this store's matches."""
        return book_summaries(self._store, index, books)

    def book_pages(self, book: Book) -> Iterator[MatchPage]:
        """The grouped matches of the book's chapters (``book_pages``)."""
        return book_pages(self._store, book)

    def book_match_counts(
        self, index: BookIndex, query: MatchQuery | None = None, top: int = 10
    ) -> list[tuple[Book, int]]:
        """The books with the most matches under ``query``'s filters, most first."""
        return book_match_counts(self._store, index, query, top)

    # --- cases over the stored matches -----------------------------------------------
    def sync_cases(self, cases: CaseService, *, who: str = "system:sync") -> int:
        """File every confirmed match that no case holds yet (``CaseService.sync``)."""
        return cases.sync(self._store, who=who)

    def apply_verdict(
        self,
        cases: CaseService,
        suspect_id: str,
        mother_id: str,
        verdict: str,
        *,
        who: str,
        note: str | None = None,
    ) -> VerdictResult:
        """The verdict of a match, its case and the evidence log in one step
        (``CaseService.apply_verdict``)."""
        return cases.apply_verdict(self._store, suspect_id, mother_id, verdict, who=who, note=note)

    def mark_sent(
        self,
        cases: CaseService,
        case_id: str,
        *,
        who: str,
        note: str = "",
        data: JSONObject | None = None,
    ) -> Case:
        """``CaseService.mark_sent``, refused for a case without a confirmed match."""
        return cases.mark_sent(case_id, who=who, note=note, data=data, matches=self._store)
