"""The records every part of Yinji passes around: works, suspects, matches, passages.

Plain dataclasses with no storage behind them, so that the algorithms (alignment,
matching, crawling) import no storage package, and the CLI, the Celery tasks and the
Flask app all see the same shapes. Times are timezone-aware UTC ``datetime`` objects.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, Self, TypeAlias, TypedDict, get_args

Verdict = Literal["pending", "confirmed", "dismissed"]
# The one list of verdicts: forms, API validation, the OpenAPI enum and the CLI read it.
VERDICTS: tuple[str, ...] = get_args(Verdict)
Role = Literal["admin", "analyst", "viewer"]
ROLES: tuple[str, ...] = ("admin", "analyst", "viewer")

# JSON values as the stores, the API, the CLI's --json and the evidence log hold them:
# the one alias, for results that are JSON objects (``to_dict``/``to_json``) and for
# values stored as JSON (``Store.set_meta``). Nested containers are read-only types
# (``Sequence``/``Mapping``, which take a ``list[str]`` or a ``dict[str, int]`` as
# they are); the top level of a ``JSONObject`` is a ``dict`` callers may add keys to.
JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | Sequence["JSONValue"] | Mapping[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]


def json_object(value: JSONValue) -> JSONObject:
    """A copy of ``value`` when it is a JSON object, else an empty one (a meta key not
    set yet reads as None)."""
    return dict(value) if isinstance(value, Mapping) else {}


def json_int(value: JSONValue) -> int:
    """An integer stored as JSON (a number, or its digits); 0 when not set."""
    return int(value) if isinstance(value, int | float | str) else 0


def json_strings(value: JSONValue) -> list[str]:
    """The strings of a JSON list (a meta key not set yet: none)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        return []
    return [v for v in value if isinstance(v, str)]


# Sort keys of the match dashboard, ``GET /api/v1/matches`` and the stores: the one list.
# The type checker reads the Literal; the run-time tuple is taken from it, so the two
# cannot drift apart (tracker.rules.check_sort checks values against SORTS).
MatchSort = Literal["-score", "score", "-created_at", "created_at", "-coverage", "coverage"]
SORTS: tuple[str, ...] = get_args(MatchSort)


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


class PassageRecord(TypedDict):
    """A stored ``Passage`` or ``Segment`` (their ``to_dict``); ``segments`` only on a
    reordered passage."""

    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float
    segments: NotRequired[list[PassageRecord]]


@dataclass
class Segment:
    """One aligned pair inside a reordered passage: this stretch of the suspect is that
    stretch of the mother, in order (Python string offsets, end exclusive).
    ``similarity`` is measured on the pinyin initials of the pair alone."""

    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float

    def to_dict(self) -> JSONObject:
        return {
            "suspect_start": self.suspect_start,
            "suspect_end": self.suspect_end,
            "mother_start": self.mother_start,
            "mother_end": self.mother_end,
            "similarity": round(float(self.similarity), 4),
        }

    def moved(self, chars: int) -> Self:
        """The same pair with suspect offsets ``chars`` later (found in a piece of the
        suspect that starts at that character)."""
        if not chars:
            return self
        return replace(
            self, suspect_start=self.suspect_start + chars, suspect_end=self.suspect_end + chars
        )

    @classmethod
    def from_dict(cls, d: PassageRecord) -> Self:
        return cls(
            int(d["suspect_start"]),
            int(d["suspect_end"]),
            int(d["mother_start"]),
            int(d["mother_end"]),
            float(d["similarity"]),
        )


@dataclass
class Passage(Segment):
    """One copied passage: Python string offsets, end exclusive.

    ``segments`` is empty for a passage copied in order. For a reordered copy (the
    suspect's sentences stand in another order than the mother's) it lists the pairs
    that really align, in suspect order: the passage's two spans only bound them, and
    its ``similarity`` says how much of them is covered, not that they read alike."""

    segments: list[Segment] = field(default_factory=list)

    def moved(self, chars: int) -> Self:
        if not chars:
            return self
        moved = super().moved(chars)
        moved.segments = [s.moved(chars) for s in self.segments]
        return moved

    def to_dict(self) -> JSONObject:
        d = super().to_dict()
        if self.segments:  # only reordered passages carry the key
            d["segments"] = [s.to_dict() for s in self.segments]
        return d

    @classmethod
    def from_dict(cls, d: PassageRecord) -> Self:
        passage = super().from_dict(d)
        segments: list[PassageRecord] = d.get("segments") or []
        passage.segments = [Segment.from_dict(s) for s in segments]
        return passage


class RegionRecord(TypedDict):
    """A stored ``Region`` (its ``to_dict``)."""

    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float
    excluded: list[dict[str, int]]


@dataclass
class Region:
    """One stretch of the suspect copied from one stretch of the mother, as a person
    reads it (issue #39): the passages of a copy broken up by inserted lines (a pirate
    ad after every sentence or two, a watermark line) make one region, the inserted
    text listed in ``excluded`` (suspect offsets, end exclusive, inside the region).
    ``similarity`` is the region's own: how much of its text (less the excluded spans)
    the passages inside it cover, each at its own similarity, on pinyin initials.
    Built from the passages (``tracker.noise.regions``); ``Match.passages`` stay as
    they are."""

    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float
    excluded: list[tuple[int, int]] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "suspect_start": self.suspect_start,
            "suspect_end": self.suspect_end,
            "mother_start": self.mother_start,
            "mother_end": self.mother_end,
            "similarity": round(float(self.similarity), 4),
            "excluded": [{"suspect_start": a, "suspect_end": b} for a, b in self.excluded],
        }

    @classmethod
    def from_dict(cls, d: RegionRecord) -> Self:
        return cls(
            int(d["suspect_start"]),
            int(d["suspect_end"]),
            int(d["mother_start"]),
            int(d["mother_end"]),
            float(d["similarity"]),
            [(int(x["suspect_start"]), int(x["suspect_end"])) for x in d.get("excluded") or []],
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
    #: The passages as a person reads them: one region per copied stretch, inserted
    #: lines inside it excluded (``Region``; stored with the match).
    regions: list[Region] = field(default_factory=list)

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
    """A URL, site or pirate book the scheduler re-crawls (a book: its index page,
    followed chapter by chapter by ``tracker.cases.books.monitor_book``)."""

    url: str
    kind: Literal["url", "site", "book"] = "url"
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
    sort: MatchSort = "-score"
    offset: int = 0
    limit: int = 50


class NotFound(KeyError):
    """Raised when a record asked for by id does not exist."""
