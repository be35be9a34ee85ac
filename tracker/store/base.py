"""The repository interface: one contract, two adapters (sqlite3 and MongoDB).

Records are plain dataclasses so that the CLI, the Celery tasks and the Flask app
all see the same shapes. Times are timezone-aware UTC ``datetime`` objects.

Identity:
- ``Mother.id`` / ``Suspect.id`` are the user's ids (strings).
- ``Mother.seq`` is an internal integer the index stores instead of the string id.
  A re-ingested mother gets a *new* ``seq``, so index postings of the old version
  point at a seq that no longer exists and are ignored until ``index rebuild``.
- ``Match.id`` is ``f"{suspect_id}\\x1f{mother_id}"``: writing the same match twice
  (a redelivered task) replaces it and never duplicates it; a re-check keeps the
  verdict and note a person gave.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Verdict = Literal["pending", "confirmed", "dismissed"]
VERDICTS: tuple[str, ...] = ("pending", "confirmed", "dismissed")
Role = Literal["admin", "analyst", "viewer"]
ROLES: tuple[str, ...] = ("admin", "analyst", "viewer")


def utcnow() -> datetime:
    return datetime.now(UTC)


def match_id(suspect_id: str, mother_id: str) -> str:
    return f"{suspect_id}\x1f{mother_id}"


@dataclass
class Mother:
    """A work in the mother corpus (the page library)."""

    id: str
    title: str
    text: str
    source: str = ""  # where it came from: file path, URL, upload name
    metadata: dict[str, Any] = field(default_factory=dict)
    ingested_at: datetime = field(default_factory=utcnow)
    seq: int = 0  # assigned by the store on put_mother
    chars: int = -1  # len(text); filled by the store, also when a listing leaves text out

    def __post_init__(self) -> None:
        if self.chars < 0:
            self.chars = len(self.text)


@dataclass
class Suspect:
    """A page or text suspected of copying."""

    id: str
    text: str
    title: str = ""
    url: str = ""
    domain: str = ""  # host of url, lower case, for dashboard filters
    fetched_at: datetime = field(default_factory=utcnow)
    source: str = ""  # "crawl", "text", "file:<name>", ...
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: bytes | None = None  # the raw fetched page, kept as evidence
    checked_at: datetime | None = None


@dataclass
class Passage:
    """One copied passage: Python string offsets, end exclusive."""

    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "suspect_start": self.suspect_start,
            "suspect_end": self.suspect_end,
            "mother_start": self.mother_start,
            "mother_end": self.mother_end,
            "similarity": round(float(self.similarity), 4),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Passage:
        return cls(
            int(d["suspect_start"]),
            int(d["suspect_end"]),
            int(d["mother_start"]),
            int(d["mother_end"]),
            float(d["similarity"]),
        )


@dataclass
class Match:
    """A mother found in a suspect, with the evidence."""

    suspect_id: str
    mother_id: str
    score: float
    coverage: float  # share of the suspect's text that is copied from this mother
    mother_coverage: float  # share of the mother's text found in the suspect
    passages: list[Passage] = field(default_factory=list)
    engine: str = "daguan"
    verdict: str = "pending"
    note: str = ""
    mother_title: str = ""
    suspect_title: str = ""
    suspect_url: str = ""
    domain: str = ""
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)

    @property
    def id(self) -> str:
        return match_id(self.suspect_id, self.mother_id)


@dataclass
class User:
    username: str
    password_hash: str
    role: str = "viewer"
    api_token_hash: str | None = None  # sha256 hex of the API token
    created_at: datetime = field(default_factory=utcnow)


@dataclass
class WatchItem:
    """A URL or site the scheduler re-crawls."""

    url: str
    kind: Literal["url", "site"] = "url"
    added_at: datetime = field(default_factory=utcnow)
    last_crawled_at: datetime | None = None
    active: bool = True


@dataclass
class MatchQuery:
    """Filters of the match dashboard and of ``GET /api/v1/matches``."""

    verdict: str | None = None
    min_score: float | None = None
    max_score: float | None = None
    mother_id: str | None = None
    suspect_id: str | None = None
    # exact host or a parent domain ("example.com" matches "www.example.com")
    domain: str | None = None
    since: datetime | None = None  # created_at >= since
    until: datetime | None = None  # created_at < until
    search: str | None = None  # substring of mother title, suspect title or URL (case-insensitive)
    sort: Literal["score", "-score", "created_at", "-created_at", "coverage", "-coverage"] = (
        "-score"
    )
    offset: int = 0
    limit: int = 50


class NotFound(KeyError):
    """Raised when a record asked for by id does not exist."""


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
        self, *, search: str | None = None, offset: int = 0, limit: int = 50
    ) -> list[Mother]:
        """Newest first; ``search`` is a case-insensitive substring of id or title.
        Text included."""

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
