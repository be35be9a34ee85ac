"""The storage interfaces, one concern each, and the two generic parts every backend
writes once (``Collection``: records of one kind; ``KeyValues``: settings).

``Store`` (``tracker.store.base``) is composed of the narrow interfaces below, so a
caller keeps calling ``store.list_mothers(...)``; behind it, mothers, suspects, users
and the watch list are ``Collection`` objects of the adapter (``SqliteCollection``,
``MongoCollection``) and the settings a ``KeyValues`` (``SqliteKeyValues``,
``MongoKeyValues``, also the case store's). Only what differs between kinds of record
(a mother's seq, a suspect's ``checked_at``, the matches' filters) stays abstract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypedDict, TypeVar

from tracker.common.records import (
    JSONObject,
    JSONValue,
    Match,
    MatchQuery,
    Mother,
    NotFound,
    Suspect,
    User,
    WatchItem,
)

from ._common import prepare_suspect

R = TypeVar("R")


class StoreError(RuntimeError):
    """The store cannot do what was asked for a reason outside the input: its folder
    is read-only or full, its server is unreachable. The message names the folder or
    server, the cause, and what to do."""


class Duplicate(ValueError):
    """A record collides with another on a field that must be unique (a user's token
    hash): raised by ``Collection.put`` of either backend."""


@dataclass
class Replaced:
    """The version of a mother that ``replace_mother`` replaced: its seq and the
    fingerprints it had (engine -> blob), so the caller can take them out of the index."""

    seq: int
    fingerprints: dict[str, bytes] = field(default_factory=dict)


class MatchStats(TypedDict):
    """The analytics page's counts over the filtered matches (``Store.match_stats``)."""

    by_day: list[tuple[str, int]]  # (date, matches found that day), oldest first
    by_verdict: dict[str, int]  # every verdict, with 0 for none
    top_mothers: list[tuple[str, str, int]]  # (mother id, title, matches), most first
    top_domains: list[tuple[str, int]]  # (domain, matches), most first


# --- the generic parts, written once per backend ------------------------------------
class Collection(ABC, Generic[R]):
    """Records of one kind, each under a unique key, as one backend keeps them.

    ``brief`` reads leave out what listings never show (a mother's text, a suspect's
    raw bytes): the record then has it empty (``Mother.chars`` still gives the length)."""

    @abstractmethod
    def find_by(self, field: str, value: str) -> R | None:
        """The record whose ``field`` (its key, or another unique field) is ``value``."""

    @abstractmethod
    def put(self, record: R) -> None:
        """Insert, or replace the record of the same key (``Duplicate`` when another
        record holds one of its unique values)."""

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Delete the record of ``key``; False if there was none."""

    @abstractmethod
    def page(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50, brief: bool = False
    ) -> list[R]:
        """One page in the collection's listing order; ``search`` is a case-insensitive
        substring of the collection's search fields (user input, never a pattern)."""

    @abstractmethod
    def count(self, *, search: str | None = None) -> int:
        """How many records ``page`` would list over all pages."""

    @abstractmethod
    def scan(
        self, *, batch_size: int = 500, after: str | int | None = None, brief: bool = False
    ) -> Iterator[R]:
        """Every record whose scan key is above ``after``, in scan-key order, read in
        short batches (no cursor or transaction stays open while the caller works)."""

    def get(self, key: str) -> R:
        """The record of ``key``; ``NotFound`` if absent."""
        found = self.find_by(self.key_field, key)
        if found is None:
            raise NotFound(key)
        return found

    #: The key's field as ``find_by`` names it.
    key_field: str = "id"


class KeyValues(ABC):
    """JSON values under string keys (the reference distribution's version, index
    parameters, the case profile ...)."""

    @abstractmethod
    def get(self, key: str) -> JSONValue: ...

    @abstractmethod
    def set(self, key: str, value: JSONValue) -> None:
        """``value`` must be JSON-serialisable (strict: NaN and Infinity are refused)."""

    @abstractmethod
    def init(self, key: str, value: JSONValue) -> JSONValue:
        """Set ``key`` to ``value`` unless it is set; return the value it has then
        (atomic: of two callers, both get the first one's value)."""

    @abstractmethod
    def raise_to(self, key: str, value: int) -> int:
        """Set the integer ``key`` to ``max(current, value)`` atomically (missing: 0);
        return the value it has then. A key raised this way is only ever written so."""

    @abstractmethod
    def delete(self, key: str) -> None: ...

    @abstractmethod
    def items(self, prefix: str) -> JSONObject:
        """Every key starting with ``prefix``, with its value."""


# --- the narrow interfaces ``Store`` is made of ---------------------------------------
class MotherStore(ABC):
    """The works (mothers): versions numbered by a seq that only ever grows."""

    mother_records: Collection[Mother]  # listed newest first, scanned in seq order

    @abstractmethod
    def replace_mother(
        self, mother: Mother, fingerprints: Mapping[str, bytes] | None = None
    ) -> tuple[Mother, Replaced | None]:
        """Insert or replace by ``mother.id`` under a fresh seq, with its ``fingerprints``
        (engine -> blob) in the same write; also return the version it replaced (None
        for a new id), decided atomically: of two writers of one id, each learns exactly
        the version it displaced. The replaced version's fingerprints are deleted and
        returned."""

    @abstractmethod
    def current_seqs(self, seqs: Iterable[int]) -> set[int]:
        """Which of ``seqs`` are the seq of a current mother (cheap: no texts read)."""

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
        text, seq, fingerprints and matches untouched. False if there is no such mother."""

    @abstractmethod
    def last_seq(self) -> int:
        """The last seq handed out (0 before the first mother)."""

    @abstractmethod
    def mothers_since(self, since: datetime) -> list[Mother]:
        """Mothers ingested at or after ``since`` (new works to check against old suspects)."""

    def put_mother(
        self, mother: Mother, *, fingerprints: Mapping[str, bytes] | None = None
    ) -> Mother:
        """Insert or replace by ``mother.id``; assigns and returns a fresh ``seq``."""
        return self.replace_mother(mother, fingerprints)[0]

    def replace_mothers(
        self, items: Sequence[tuple[Mother, Mapping[str, bytes] | None]]
    ) -> list[tuple[Mother, Replaced | None]]:
        """``replace_mother`` for a batch, results in the same order, with the same
        guarantees per mother. Adapters override it to write a batch in a few round
        trips; ids within one batch must differ (``ValueError`` names the repeated one)."""
        check_batch_ids(items)
        return [self.replace_mother(mother, fps) for mother, fps in items]

    def get_mother(self, mother_id: str) -> Mother:
        """Raise ``NotFound`` if absent."""
        return self.mother_records.get(mother_id)

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
        return self.mother_records.page(
            search=search, offset=offset, limit=limit, brief=not with_text
        )

    def count_mothers(self, *, search: str | None = None) -> int:
        return self.mother_records.count(search=search)

    def iter_mothers(self, *, batch_size: int = 500, after_seq: int = 0) -> Iterator[Mother]:
        """Every mother whose seq is above ``after_seq``, in seq order."""
        return self.mother_records.scan(batch_size=batch_size, after=int(after_seq))


class FingerprintStore(ABC):
    """The fingerprints of each mother version (derived, kept so the index can be rebuilt)."""

    @abstractmethod
    def put_fingerprints(self, seq: int, engine: str, data: bytes) -> None:
        """Replace the fingerprint blob of one mother version for one engine."""

    @abstractmethod
    def get_fingerprints(self, seq: int, engine: str) -> bytes | None: ...

    @abstractmethod
    def iter_fingerprints(
        self, engine: str, *, batch_size: int = 500
    ) -> Iterator[tuple[int, bytes | None]]:
        """``(seq, fingerprint blob of engine, or None)`` of every mother, in seq order,
        without reading the texts."""

    @abstractmethod
    def fingerprint_totals(self, engine: str, *, after_seq: int = 0) -> tuple[int, int]:
        """(mothers with stored fingerprints for ``engine``, total bytes of them), of
        seqs above ``after_seq``, without reading the blobs."""


class SuspectStore(ABC):
    """The texts checked (suspects), listed newest fetched first, scanned in id order."""

    suspect_records: Collection[Suspect]

    @abstractmethod
    def mark_checked(self, suspect_id: str, when: datetime | None = None) -> None:
        """Set ``checked_at`` (now by default); ``NotFound`` if there is no such suspect."""

    def put_suspect(self, suspect: Suspect) -> Suspect:
        """Insert or replace by id; return it as stored (UTC times, lower-case domain
        taken from the URL when empty, JSON-shaped metadata)."""
        stored = prepare_suspect(suspect)
        self.suspect_records.put(stored)
        return stored

    def get_suspect(self, suspect_id: str) -> Suspect:
        """Raise ``NotFound`` if absent."""
        return self.suspect_records.get(suspect_id)

    def list_suspects(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50
    ) -> list[Suspect]:
        """Newest fetched first, without ``raw``."""
        return self.suspect_records.page(search=search, offset=offset, limit=limit, brief=True)

    def count_suspects(self, *, search: str | None = None) -> int:
        return self.suspect_records.count(search=search)

    def iter_suspects(self, *, batch_size: int = 500) -> Iterator[Suspect]:
        """Every suspect in id order, without ``raw`` (re-checks need the text)."""
        return self.suspect_records.scan(batch_size=batch_size, brief=True)


class MatchStore(ABC):
    """The results: a suspect's matches with the mothers, and people's verdicts on them."""

    @abstractmethod
    def put_matches(self, suspect_id: str, matches: Sequence[Match]) -> None:
        """Replace the suspect's machine results with ``matches``. A match that exists
        keeps its ``verdict``, ``note`` and ``created_at``; an earlier match of this
        suspect not in ``matches`` is deleted unless a person gave it a verdict."""

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
        """For the analytics page, over the filtered matches (top lists: 10 entries)."""


class UserStore(ABC):
    """The accounts of the web admin, in username order."""

    user_records: Collection[User]

    def put_user(self, user: User) -> None:
        try:
            self.user_records.put(user)
        except Duplicate as exc:  # one token must never authenticate two users
            raise ValueError("API token already belongs to another user") from exc

    def get_user(self, username: str) -> User | None:
        return self.user_records.find_by(self.user_records.key_field, username)

    def get_user_by_token_hash(self, token_hash: str) -> User | None:
        return self.user_records.find_by("api_token_hash", token_hash) if token_hash else None

    def list_users(self) -> list[User]:
        return list(self.user_records.scan())

    def delete_user(self, username: str) -> None:
        self.user_records.delete(username)


class WatchStore(ABC):
    """The pages re-crawled on a schedule, by url."""

    watch_records: Collection[WatchItem]

    @abstractmethod
    def list_watch(self, *, active_only: bool = True) -> list[WatchItem]:
        """Oldest added first."""

    def put_watch(self, item: WatchItem) -> None:
        """Insert or replace by url."""
        self.watch_records.put(item)

    def delete_watch(self, url: str) -> None:
        self.watch_records.delete(url)


class MetaStore:
    """Settings under string keys (reference distribution version, index params...)."""

    meta_values: KeyValues

    def get_meta(self, key: str) -> JSONValue:
        return self.meta_values.get(key)

    def set_meta(self, key: str, value: JSONValue) -> None:
        self.meta_values.set(key, value)

    def init_meta(self, key: str, value: JSONValue) -> JSONValue:
        return self.meta_values.init(key, value)

    def raise_meta(self, key: str, value: int) -> int:
        return self.meta_values.raise_to(key, value)

    def delete_meta(self, key: str) -> None:
        self.meta_values.delete(key)

    def meta_items(self, prefix: str) -> JSONObject:
        return self.meta_values.items(prefix)


def check_batch_ids(items: Sequence[tuple[Mother, object]]) -> None:
    seen: set[str] = set()
    for mother, _ in items:
        if mother.id in seen:
            raise ValueError(f"mother id {mother.id!r} appears twice in one batch")
        seen.add(mother.id)
