"""Server-side session revocation.

The session itself is Flask's signed cookie; on its own such a cookie stays valid until
it expires, even after "sign out" (anyone who copied it could go on using it). So each
sign-in also registers a random session id in Redis (``<prefix>:web:session:<sid>`` =
the username, expiring with the session), the cookie carries the id, and every request
checks it is still registered. Signing out deletes it: the copied cookie is dead at
once. The password stamp (``web.accounts.session_stamp``) still ends every session of a
user whose password changed.
"""

from __future__ import annotations

import secrets
from typing import Any

from flask import current_app

SESSION_ID = "sid"  # the session cookie's key holding the id


def _redis_and_key(sid: str) -> tuple[Any, str]:
    handle = current_app.extensions["yinji"]
    return handle.library.redis, f"{handle.settings.redis_prefix}:web:session:{sid}"


def _ttl() -> int:
    return max(1, int(current_app.permanent_session_lifetime.total_seconds()))


def open_session(username: str) -> str:
    """Register a new session of ``username``; the id to keep in the cookie."""
    sid = secrets.token_urlsafe(24)
    client, key = _redis_and_key(sid)
    client.set(key, username, ex=_ttl())
    return sid


def session_alive(sid: Any, username: str) -> bool:
    """True when ``sid`` is a registered session of ``username`` (and keeps it alive as
    long as the cookie, which each request renews)."""
    if not isinstance(sid, str) or not sid or len(sid) > 64:
        return False
    client, key = _redis_and_key(sid)
    owner = client.get(key)
    if owner is None:
        return False
    if isinstance(owner, bytes):
        owner = owner.decode("utf-8", "replace")
    if owner != username:
        return False
    client.expire(key, _ttl())
    return True


def end_session(sid: Any) -> None:
    """Forget a session: its cookie signs nobody in any more."""
    if isinstance(sid, str) and sid and len(sid) <= 64:
        client, key = _redis_and_key(sid)
        client.delete(key)
