"""Document store: the ``Store`` interface, its records, and ``open_store``.

Importing this package loads only the stdlib adapter; ``MongoStore`` (and with it
pymongo) is imported on first use, so the embedded default never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import (
    ROLES,
    VERDICTS,
    CheckWrite,
    Match,
    MatchQuery,
    Mother,
    NotFound,
    Passage,
    Replaced,
    Role,
    Store,
    StoreError,
    Suspect,
    User,
    Verdict,
    WatchItem,
    match_id,
    utcnow,
)
from .factory import open_store
from .files import DataFiles
from .sqlite import SqliteStore

if TYPE_CHECKING:
    from .mongo import MongoStore


def __getattr__(name: str) -> object:
    # Lazy export: ``from tracker.store import MongoStore`` works without making
    # ``import tracker.store`` import pymongo.
    if name == "MongoStore":
        from .mongo import MongoStore

        return MongoStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ROLES",
    "VERDICTS",
    "CheckWrite",
    "DataFiles",
    "Match",
    "MatchQuery",
    "MongoStore",
    "Mother",
    "NotFound",
    "Passage",
    "Replaced",
    "Role",
    "SqliteStore",
    "Store",
    "StoreError",
    "Suspect",
    "User",
    "Verdict",
    "WatchItem",
    "match_id",
    "open_store",
    "utcnow",
]
