"""Server-side session revocation.

The session itself is Flask's signed cookie; on its own such a cookie stays valid until
it expires, even after "sign out" (anyone who copied it could go on using it). So each
sign-in also registers a random session id in Redis (``<prefix>:web:session:<sid>`` =
the username, expiring with the session; ``tracker.services.sessions``), the cookie
carries the id, and every request checks it is still registered. Signing out deletes
it: the copied cookie is dead at once. The password stamp
(``web.accounts.session_stamp``) still ends every session of a user whose password
changed.
"""

from __future__ import annotations

from flask import current_app

from tracker.services.sessions import SessionRegistry

from .core import state

SESSION_ID = "sid"  # the session cookie's key holding the id


def _registry() -> SessionRegistry:
    return state().resource("sessions", lambda: SessionRegistry.of(state().library))


def _ttl() -> int:
    return max(1, int(current_app.permanent_session_lifetime.total_seconds()))


def open_session(username: str) -> str:
    """Register a new session of ``username``; the id to keep in the cookie."""
    return _registry().open(username, _ttl())


def session_alive(sid: object, username: str) -> bool:
    """True when ``sid`` is a registered session of ``username`` (and keeps it alive as
    long as the cookie, which each request renews)."""
    return _registry().alive(sid, username, _ttl())


def end_session(sid: object) -> None:
    """Forget a session: its cookie signs nobody in any more."""
    _registry().end(sid)
