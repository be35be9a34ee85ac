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

import re
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
# cannot drift apart (tracker.common.rules.check_sort checks values against SORTS).
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


def _meta_text(value: object) -> str:
    """A metadata value as text: strings and numbers; anything else (a list, an
    object, a bool) is no value."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return str(value).strip()


@dataclass(frozen=True)
class ChapterRef:
    """Which book a work is a chapter of, and its place there: the one reader of a
    work's book (check results, cases, notices, alerts, the books' stores and their
    migration all read a work's book through ``from_metadata``).

    The metadata of the books contract (issue #36): ``book_id``, ``book_title``,
    ``author``, ``chapter`` (the heading as in the book), ``chapter_index`` (1-based),
    ``volume``. A library stored before books has other fields instead, read so:

    - ``work`` or ``book`` is the book's key (``{"work": "shuihu", "work_title":
      "水浒传"}`` is the book ``shuihu`` titled 水浒传; ``{"book": "红楼梦"}`` the book
      红楼梦); ``work_title`` is its title like ``book_title``; a title alone
      (``{"work_title": "雾城旧梦"}``) is the key too;
    - without ``chapter``, the heading is the work's title less its book's name
      (``《水浒传》第五回 …`` → ``第五回 …``); a whole number in ``chapter`` is the
      position; without ``chapter_index``, the position is the number the heading
      states (``第五回`` → 5; the migration records it so);
    - only with ``from_title`` (a library stored before books: its migration, and
      cases of a library not yet migrated), a work with no book fields whose title has
      the usual ``《书名》章节名`` form is a chapter of that book (``《雾城旧梦》第一章
      雾起``: the book 雾城旧梦, the chapter 第一章 雾起). A work stored since is in a
      book only by its metadata.
    """

    book_id: str
    book_title: str
    chapter: str = ""  # the heading as in the book ("第四十一回 心猿遭火败 木母被魔擒")
    chapter_index: int | None = None  # 1-based position in the book
    author: str = ""
    volume: str = ""

    @classmethod
    def from_metadata(
        cls, metadata: Mapping[str, object], title: str = "", *, from_title: bool = False
    ) -> ChapterRef | None:
        """The book of a work with this ``metadata`` and ``title`` (see the class
        docstring), or None when it is in no book."""
        book_title = _meta_text(metadata.get("book_title")) or _meta_text(
            metadata.get("work_title")
        )
        book_id = (
            _meta_text(metadata.get("book_id"))
            or _meta_text(metadata.get("work"))
            or _meta_text(metadata.get("book"))
            or book_title
        )
        raw_chapter = metadata.get("chapter")
        has_chapter = "chapter" in metadata
        if not book_id and from_title:
            found = _TITLED.match(title or "")
            if found is not None:
                book_id = book_title = found.group(1).strip()
                raw_chapter, has_chapter = found.group(2).strip(), True
        if not book_id:
            return None
        book_title = book_title or book_id
        if isinstance(raw_chapter, str):
            chapter = raw_chapter.strip()
        elif has_chapter:
            chapter = ""
        else:  # legacy: the title, less its book's name
            chapter = strip_book_title(title, book_title)
        index = _position(metadata.get("chapter_index"))
        if index is None and "chapter_index" not in metadata:  # legacy: {"chapter": 5},
            index = _position(raw_chapter) or _heading_number(chapter)  # else "第五回 …"
        return cls(
            book_id,
            book_title,
            chapter,
            index,
            author=_meta_text(metadata.get("author")),
            volume=_meta_text(metadata.get("volume")),
        )

    @classmethod
    def of(cls, mother: Mother, *, from_title: bool = False) -> ChapterRef | None:
        """``from_metadata`` of a work."""
        return cls.from_metadata(mother.metadata or {}, mother.title, from_title=from_title)

    def label(self, lang: str = "zh") -> str:
        """How people name the chapter: ``《西游记》第四十一回 心猿遭火败 木母被魔擒`` in
        Chinese; ``"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)`` in English
        (the number is the chapter's place in the book, the heading the book's own)."""
        title = self.book_title.strip().strip("《》")
        if lang != "en":
            return f"《{title}》{self.chapter}"
        out = f'"{title}"'
        if self.chapter_index is not None:
            out += f", chapter {self.chapter_index}"
            if self.chapter:
                out += f" ({self.chapter})"
        elif self.chapter:
            out += f", {self.chapter}"
        return out

    def to_dict(self) -> JSONObject:
        return {
            "book_id": self.book_id,
            "book_title": self.book_title,
            "chapter": self.chapter,
            "chapter_index": self.chapter_index,
        }


#: ``《书名》章节名``: a legacy chapter's title naming its book.
_TITLED = re.compile(r"^\s*《([^《》]+)》\s*(\S.*)$", re.S)


def _heading_number(heading: str) -> int | None:
    """The number a legacy chapter's heading states (``第五回 …`` → 5)."""
    if not heading:
        return None
    from tracker.text.numerals import chapter_number

    return chapter_number(heading)


def _position(value: object) -> int | None:
    """A 1-based position: a whole number above 0 (an int, or a float without a
    fraction; not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if value > 0 else None


def strip_book_title(title: str, book_title: str) -> str:
    """A chapter's heading from a title that may start with its book's name
    (``《水浒传》第五回 …`` → ``第五回 …``); a title that is the book's name alone gives
    ""."""
    text = title.strip()
    bare = book_title.strip().strip("《》")
    for prefix in (f"《{bare}》", bare):
        if bare and text.startswith(prefix):
            return text[len(prefix) :].strip(" \u3000·:：-—")
    return text


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
    Built from the passages (``tracker.text.noise.regions``); ``Match.passages`` stay as
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
    #: The book the mother is a chapter of, when it is one (set by a check from the
    #: mother's metadata and the book's current title; not stored with the match).
    book: ChapterRef | None = field(default=None, compare=False)
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
