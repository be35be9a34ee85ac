"""The repository interface: one contract, two adapters (sqlite3 and MongoDB).

The records it stores live in ``tracker.records`` (re-exported here for the adapters).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from tracker.records import (
    ROLES,
    SORTS,
    VERDICTS,
    JSONObject,
    JSONValue,
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
    "CheckWrite",
    "Match",
    "MatchQuery",
    "Mother",
    "NotFound",
    "Passage",
    "Replaced",
    "Role",
    "Store",
    "StoreError",
    "Suspect",
    "User",
    "Verdict",
    "WatchItem",
    "match_id",
    "utcnow",
]


class StoreError(RuntimeError):
    """The store cannot do what was asked for a reason outside the input: its folder
    is read-only or full, its server is unreachable. The message names the folder or
    server, the cause, and what to do."""


@dataclass
class Replaced:
    """The version of a mother that ``replace_mother`` replaced: its seq and the
    fingerprints it had (engine -> blob), so the caller can take them out of the index."""

    seq: int
    fingerprints: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckWrite:
    """What saving one check writes (``Store.save_checks``): the suspect (``rewrite``:
    a new or handed-in suspect is put as a whole; False: a stored suspect checked again,
    only its ``checked_at`` is set) and its matches (``put_matches``)."""

    suspect: Suspect
    matches: Sequence[Match]
    rewrite: bool = True


class MatchStats(TypedDict):
    """The analytics page's counts over the filtered matches (``Store.match_stats``)."""

    by_day: list[tuple[str, int]]  # (date, matches found that day), oldest first
    by_verdict: dict[str, int]  # every verdict, with 0 for none
    top_mothers: list[tuple[str, str, int]]  # (mother id, title, matches), most first
    top_domains: list[tuple[str, int]]  # (domain, matches), most first


def check_batch_ids(items: Sequence[tuple[Mother, object]]) -> None:
    seen: set[str] = set()
    for mother, _ in items:
        if mother.id in seen:
            raise ValueError(f"mother id {mother.id!r} appears twice in one batch")
        seen.add(mother.id)


def match_sides(store: Store, match: Match) -> tuple[Mother | None, Suspect | None]:
    """The mother and the suspect of ``match``, None for one deleted since (a confirmed
    match is kept as evidence; a report or notice then says its text is missing)."""
    mother: Mother | None
    suspect: Suspect | None
    try:
        mother = store.get_mother(match.mother_id)
    except (NotFound, KeyError):
        mother = None
    try:
        suspect = store.get_suspect(match.suspect_id)
    except (NotFound, KeyError):
        suspect = None
    return mother, suspect


class Store(ABC):
    """Documents and results. Implementations: ``SqliteStore``, ``MongoStore``."""

    #: True when the store was opened read-only (a read-only data folder): reads work,
    #: every write raises ``StoreError``.
    read_only: bool = False

    # --- mothers -------------------------------------------------------------
    def put_mother(
        self, mother: Mother, *, fingerprints: Mapping[str, bytes] | None = None
    ) -> Mother:
        """Insert or replace by ``mother.id``; assigns and returns a fresh ``seq``.
        ``fingerprints`` (engine -> blob) are stored with it, in the same write."""
        return self.replace_mother(mother, fingerprints)[0]

    @abstractmethod
    def replace_mother(
        self, mother: Mother, fingerprints: Mapping[str, bytes] | None = None
    ) -> tuple[Mother, Replaced | None]:
        """``put_mother`` that also returns the version it replaced (None for a new id),
        decided atomically: of two writers of one id, each learns exactly the version
        it displaced, so neither leaves index postings of a dead version behind.
        The new version and its ``fingerprints`` are stored together; the replaced
        version's fingerprints are deleted and returned."""

    def replace_mothers(
        self, items: Sequence[tuple[Mother, Mapping[str, bytes] | None]]
    ) -> list[tuple[Mother, Replaced | None]]:
        """``replace_mother`` for a batch of (mother, fingerprints), results in the same
        order, with the same guarantees per mother. Adapters override it to write a
        batch in a few round trips instead of a few per mother (ingest's path); ids
        within one batch must differ (``ValueError`` names the repeated one)."""
        check_batch_ids(items)
        return [self.replace_mother(mother, fps) for mother, fps in items]

    @abstractmethod
    def current_seqs(self, seqs: Iterable[int]) -> set[int]:
        """Which of ``seqs`` are the seq of a current mother (cheap: no texts read)."""

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
    def update_mother_metadata(
        self, mother_id: str, metadata: Mapping[str, JSONValue], *, title: str | None = None
    ) -> bool:
        """Replace a mother's ``metadata`` (and its ``title``, when given) in place:
        text, seq, fingerprints and matches untouched (a book renamed, a legacy chapter
        given its book: ``tracker.books``). False if there is no such mother."""

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
    def iter_mothers(self, *, batch_size: int = 500, after_seq: int = 0) -> Iterator[Mother]:
        """Every mother whose seq is above ``after_seq``, in seq order (for index
        rebuild, repairs and re-checks)."""

    @abstractmethod
    def last_seq(self) -> int:
        """The last seq handed out (0 before the first mother): every mother stored
        after this call gets a larger one."""

    @abstractmethod
    def mothers_since(self, since: datetime) -> list[Mother]:
        """Mothers ingested at or after ``since`` (new works to check against old suspects)."""

    # --- mother fingerprints (derived, kept so the index can be rebuilt) -------
    @abstractmethod
    def put_fingerprints(self, seq: int, engine: str, data: bytes) -> None:
        """Replace the fingerprint blob of one mother version for one engine."""

    @abstractmethod
    def get_fingerprints(self, seq: int, engine: str) -> bytes | None: ...

    def iter_fingerprints(
        self, engine: str, *, batch_size: int = 500
    ) -> Iterator[tuple[int, bytes | None]]:
        """``(seq, fingerprint blob of engine, or None when none is stored)`` of every
        mother, in seq order, without reading the texts where the store can (an index
        rebuild reads every blob; the texts are most of the store)."""
        for mother in self.iter_mothers(batch_size=batch_size):
            yield mother.seq, self.get_fingerprints(mother.seq, engine)

    @abstractmethod
    def fingerprint_totals(self, engine: str, *, after_seq: int = 0) -> tuple[int, int]:
        """(mothers with stored fingerprints for ``engine``, total bytes of them), of
        seqs above ``after_seq``: the size of a rebuild of that engine's index, without
        reading the blobs."""

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

    def save_checks(self, writes: Sequence[CheckWrite]) -> list[bool]:
        """The writes of several saved checks (a chunk of a job), in one transaction
        where the store has them (sqlite: one commit; this default: each write on its
        own). A re-checked suspect deleted meanwhile is skipped (False), nothing of it
        written; the others are written (True)."""
        done: list[bool] = []
        for w in writes:
            if w.rewrite:
                self.put_suspect(w.suspect)
                self.put_matches(w.suspect.id, w.matches)
            else:
                try:
                    self.mark_checked(w.suspect.id, w.suspect.checked_at)
                except NotFound:
                    done.append(False)
                    continue
                self.put_matches(w.suspect.id, w.matches)
            done.append(True)
        return done

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
    def match_stats(self, query: MatchQuery | None = None) -> MatchStats:
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
    def get_meta(self, key: str) -> JSONValue: ...

    @abstractmethod
    def set_meta(self, key: str, value: JSONValue) -> None:
        """``value`` must be JSON-serialisable."""

    @abstractmethod
    def init_meta(self, key: str, value: JSONValue) -> JSONValue:
        """Set ``key`` to ``value`` unless it is set; return the value it has then
        (atomic: of two callers, both get the first one's value)."""

    @abstractmethod
    def raise_meta(self, key: str, value: int) -> int:
        """Set the integer ``key`` to ``max(current, value)`` atomically (missing: 0);
        return the value it has then. A key raised this way is only ever written by
        ``raise_meta`` (``get_meta`` reads it)."""

    @abstractmethod
    def delete_meta(self, key: str) -> None: ...

    @abstractmethod
    def meta_items(self, prefix: str) -> JSONObject:
        """Every meta key starting with ``prefix``, with its value."""

    # --- lifecycle -----------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
