"""Document store: the ``Store`` interface, its records, and ``open_store``.

Importing this package loads only the stdlib adapter; ``MongoStore`` (and with it
pymongo) is imported on first use, so the embedded default never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from .sqlite import SqliteStore

if TYPE_CHECKING:
    from tracker.config import Settings

    from .mongo import MongoStore


def open_store(settings: Settings) -> Store:
    """The store the settings ask for, alone (``tracker.backends.Backends.store``):
    MongoDB when ``mongo_uri`` is set (with a client of its own, closed by ``close``),
    else the sqlite file in the data folder (created if missing; opened read-only when
    the folder is read-only, see ``Store.read_only``)."""
    if settings.mongo_uri:
        from .mongo import MongoStore

        return MongoStore(settings.mongo_uri, db_name=settings.mongo_db)
    from tracker.backends import open_backends

    return open_backends(settings).store()


def __getattr__(name: str) -> Any:
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
