"""The repository interface: one contract, two adapters (sqlite3 and MongoDB).

The records it stores live in ``tracker.records`` (re-exported here for the adapters).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from tracker.records import (
    ROLES,
    SORTS,
    VERDICTS,
    Match,
    MatchQuery,
    Mother,
    NotFound,
    Passage,
    Role,
    Suspect,
    User,
    Verdict,
    WatchItem,
    match_id,
    utcnow,
)

__all__ = [
    "ROLES",
    "SORTS",
    "VERDICTS",
    "Match",
    "MatchQuery",
    "Mother",
    "NotFound",
    "Passage",
    "Role",
    "Store",
    "Suspect",
    "User",
    "Verdict",
    "WatchItem",
    "match_id",
    "utcnow",
]


class Store(ABC):
    """Documents and results. Implementations: ``SqliteStore``, ``MongoStore``."""

    # --- mothers -------------------------------------------------------------
    @abstractmethod
    def put_mother(self, mother: Mother) -> Mother:
        """Insert or replace by ``mother.id``; assigns and returns a fresh ``seq``."""

    @abstractmethod
    def get_mother(self, mother_id: str) -> Mother:
        """Raise ``NotFound`` if absent."""

    @abstractmethod
    def get_mothers_by_seq(self, seqs: Iterable[int]) -> dict[int, Mother]:
        """Current mothers whose seq is given; stale or unknown seqs are left out."""

    @abstractmethod
    def delete_mother(self, mother_id: str) -> Mother | None:
        """Delete the mother, its fingerprints and its matches; return what was deleted."""

    @abstractmethod
    def list_mothers(
        self,
        *,
        search: str | None = None,
        offset: int = 0,
        limit: int = 50,
        with_text: bool = True,
    ) -> list[Mother]:
        """Newest first; ``search`` is a case-insensitive substring of id or title.

        ``with_text=False`` leaves each ``text`` empty (``chars`` still gives its
        length): a listing page of a library of novels must not load them whole."""

    @abstractmethod
    def count_mothers(self, *, search: str | None = None) -> int: ...

    @abstractmethod
    def iter_mothers(self, *, batch_size: int = 500) -> Iterator[Mother]:
        """Every mother, in seq order (for index rebuild and re-checks)."""

    @abstractmethod
    def mothers_since(self, since: datetime) -> list[Mother]:
        """Mothers ingested at or after ``since`` (new works to check against old suspects)."""

    # --- mother fingerprints (derived, kept so the index can be rebuilt) -------
    @abstractmethod
    def put_fingerprints(self, seq: int, engine: str, data: bytes) -> None:
        """Replace the fingerprint blob of one mother version for one engine."""

    @abstractmethod
    def get_fingerprints(self, seq: int, engine: str) -> bytes | None: ...

    # --- suspects ------------------------------------------------------------
    @abstractmethod
    def put_suspect(self, suspect: Suspect) -> Suspect:
        """Insert or replace by id."""

    @abstractmethod
    def get_suspect(self, suspect_id: str) -> Suspect:
        """Raise ``NotFound`` if absent."""

    @abstractmethod
    def list_suspects(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50
    ) -> list[Suspect]:
        """Newest fetched first; ``raw`` may be left out (None) in listings."""

    @abstractmethod
    def count_suspects(self, *, search: str | None = None) -> int: ...

    @abstractmethod
    def iter_suspects(self, *, batch_size: int = 500) -> Iterator[Suspect]: ...

    @abstractmethod
    def mark_checked(self, suspect_id: str, when: datetime | None = None) -> None: ...

    # --- matches -------------------------------------------------------------
    @abstractmethod
    def put_matches(self, suspect_id: str, matches: Sequence[Match]) -> None:
        """Replace the suspect's machine results with ``matches``.

        A match that already exists keeps its ``verdict``, ``note`` and ``created_at``;
        an earlier match of this suspect not in ``matches`` is deleted unless a person
        gave it a verdict other than pending (their decision is evidence and is kept).
        """

    @abstractmethod
    def get_match(self, match_id: str) -> Match: ...

    @abstractmethod
    def set_verdict(self, match_id: str, verdict: str, note: str | None = None) -> Match:
        """Set verdict (one of VERDICTS; ValueError otherwise) and, if given, note."""

    @abstractmethod
    def query_matches(self, query: MatchQuery) -> list[Match]: ...

    @abstractmethod
    def count_matches(self, query: MatchQuery) -> int:
        """How many matches the query's filters select (offset and limit ignored)."""

    @abstractmethod
    def match_stats(self, query: MatchQuery | None = None) -> dict[str, Any]:
        """For the analytics page, over the filtered matches:
        ``{"by_day": [(date_iso, count)], "by_verdict": {verdict: count},
        "top_mothers": [(mother_id, title, count)], "top_domains": [(domain, count)]}``
        (top lists: 10 entries, most first)."""

    # --- users ---------------------------------------------------------------
    @abstractmethod
    def put_user(self, user: User) -> None: ...

    @abstractmethod
    def get_user(self, username: str) -> User | None: ...

    @abstractmethod
    def get_user_by_token_hash(self, token_hash: str) -> User | None: ...

    @abstractmethod
    def list_users(self) -> list[User]: ...

    @abstractmethod
    def delete_user(self, username: str) -> None: ...

    # --- watch list ----------------------------------------------------------
    @abstractmethod
    def put_watch(self, item: WatchItem) -> None:
        """Insert or replace by url."""

    @abstractmethod
    def list_watch(self, *, active_only: bool = True) -> list[WatchItem]: ...

    @abstractmethod
    def delete_watch(self, url: str) -> None: ...

    # --- key/value settings (reference distribution version, index params...) --
    @abstractmethod
    def get_meta(self, key: str) -> Any | None: ...

    @abstractmethod
    def set_meta(self, key: str, value: Any) -> None:
        """``value`` must be JSON-serialisable."""

    # --- lifecycle -----------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
