"""Storage, the bottom layer: the document store (``Store``, the narrow interfaces it is
made of, its records) and ``open_store``, the factory that picks its backend.

``interfaces`` holds the interfaces and the two generic parts (``Collection``,
``KeyValues``) that each backend writes once (``sqlite_records``, ``mongo_records``);
``sqlite_db`` one sqlite file's connections and transactions; ``mongo_client`` the one
way a MongoDB client is made; ``files`` the data folder's files. Nothing here imports
the settings, the services, the cases or the evidence log.

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
