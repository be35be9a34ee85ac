"""The document store's façade, ``Store``: the narrow interfaces of
``tracker.store.interfaces`` (mothers, fingerprints, suspects, matches, users, watch
list, settings) in one object, written by two adapters (sqlite3 and MongoDB).

The records it stores live in ``tracker.common.records`` (re-exported here for the adapters).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from tracker.common.records import (
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

from .interfaces import (
    Collection,
    Duplicate,
    FingerprintStore,
    KeyValues,
    MatchStats,
    MatchStore,
    MetaStore,
    MotherStore,
    Replaced,
    StoreError,
    SuspectStore,
    UserStore,
    WatchStore,
    check_batch_ids,
)

__all__ = [
    "ROLES",
    "SORTS",
    "VERDICTS",
    "CheckWrite",
    "Collection",
    "Duplicate",
    "KeyValues",
    "Match",
    "MatchQuery",
    "MatchStats",
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
    "check_batch_ids",
    "match_id",
    "match_sides",
    "utcnow",
]


@dataclass(frozen=True)
class CheckWrite:
    """What saving one check writes (``Store.save_checks``): the suspect (``rewrite``:
    a new or handed-in suspect is put as a whole; False: a stored suspect checked again,
    only its ``checked_at`` is set) and its matches (``put_matches``)."""

    suspect: Suspect
    matches: Sequence[Match]
    rewrite: bool = True


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


class Store(
    MotherStore, FingerprintStore, SuspectStore, MatchStore, UserStore, WatchStore, MetaStore
):
    """Documents and results: the narrow interfaces of ``tracker.store.interfaces`` in
    one object. Implementations: ``SqliteStore``, ``MongoStore``."""

    #: True when the store was opened read-only (a read-only data folder): reads work,
    #: every write raises ``StoreError``.
    read_only: bool = False

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
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
