"""Sign-in sessions of the web admin, registered in Redis so that signing out ends one
at once (``web.sessions`` keeps the id in Flask's signed cookie).

A session is the key ``<prefix>:web:session:<sid>`` holding the username and expiring
with the session; one key per session, so every key stays usable under Redis Cluster.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient
    from tracker.library import Library

MAX_SID = 64  # longer ids are never ours: refused before Redis is asked


class SessionRegistry:
    """Open, check (and keep alive) and end the sessions of one installation."""

    def __init__(self, redis: RedisClient, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix

    @classmethod
    def of(cls, library: Library) -> SessionRegistry:
        """The registry in the library's Redis, under its key prefix."""
        return cls(library.redis, library.settings.redis_prefix)

    def _key(self, sid: str) -> str:
        return f"{self._prefix}:web:session:{sid}"

    def open(self, username: str, ttl: int) -> str:
        """Register a new session of ``username`` for ``ttl`` seconds; its id."""
        sid = secrets.token_urlsafe(24)
        self._redis.set(self._key(sid), username, ex=ttl)
        return sid

    def alive(self, sid: object, username: str, ttl: int) -> bool:
        """True when ``sid`` is a registered session of ``username``; it then lives
        ``ttl`` seconds more."""
        if not isinstance(sid, str) or not sid or len(sid) > MAX_SID:
            return False
        owner = self._redis.get(self._key(sid))
        if owner is None or owner.decode("utf-8", "replace") != username:
            return False
        self._redis.expire(self._key(sid), ttl)
        return True

    def end(self, sid: object) -> None:
        """Forget a session: its cookie signs nobody in any more."""
        if isinstance(sid, str) and sid and len(sid) <= MAX_SID:
            self._redis.delete(self._key(sid))
