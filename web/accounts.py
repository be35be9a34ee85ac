"""Users, passwords and API tokens (shared by the web app and ``yinji user``).

Passwords are hashed with werkzeug.security (scrypt). An API token is shown once, when
it is made; the store keeps only its SHA-256, so a leaked database does not leak
working tokens. Tokens are long random strings, so a fast hash is enough for them.
"""

from __future__ import annotations

import hashlib
import re
import secrets

from werkzeug.security import check_password_hash, generate_password_hash

from tracker.store import ROLES, User
from tracker.store.interfaces import UserStore

ROLE_RANK = {"viewer": 0, "analyst": 1, "admin": 2}
USERNAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MIN_PASSWORD = 8
TOKEN_PREFIX = "yj_"

# A hash to check against when the user does not exist, so that a login attempt takes
# as long for an unknown name as for a wrong password (no user enumeration by timing).
_DUMMY_HASH = generate_password_hash("not-a-real-password-yinji")


class AccountError(ValueError):
    """A bad username, role or password; the message says which."""


def role_at_least(role: str, needed: str) -> bool:
    return ROLE_RANK.get(role, -1) >= ROLE_RANK[needed]


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def check_username(username: str) -> str:
    username = (username or "").strip()
    if not USERNAME_RE.match(username):
        raise AccountError(
            "username must be 1-64 characters: letters, digits, '_', '.', '@' or '-'"
        )
    return username


def check_role(role: str) -> str:
    if role not in ROLES:
        raise AccountError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    return role


def check_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD:
        raise AccountError(f"password must have at least {MIN_PASSWORD} characters")
    return password


def create_user(store: UserStore, username: str, role: str, password: str) -> str:
    """Add a user; returns their first API token (shown once). Fails if the name is taken."""
    username = check_username(username)
    check_role(role)
    check_password(password)
    if store.get_user(username) is not None:
        raise AccountError(f"user {username!r} already exists")
    token = new_token()
    store.put_user(
        User(
            username=username,
            password_hash=generate_password_hash(password),
            role=role,
            api_token_hash=token_hash(token),
        )
    )
    return token


def _get(store: UserStore, username: str) -> User:
    user = store.get_user(username)
    if user is None:
        raise AccountError(f"no user {username!r}")
    return user


def reset_token(store: UserStore, username: str) -> str:
    """A new API token for the user (the old one stops working)."""
    user = _get(store, username)
    token = new_token()
    user.api_token_hash = token_hash(token)
    store.put_user(user)
    return token


def set_password(store: UserStore, username: str, password: str) -> None:
    user = _get(store, username)
    user.password_hash = generate_password_hash(check_password(password))
    store.put_user(user)


def set_role(store: UserStore, username: str, role: str) -> None:
    user = _get(store, username)
    user.role = check_role(role)
    store.put_user(user)


def authenticate(store: UserStore, username: str, password: str) -> User | None:
    user = store.get_user((username or "").strip())
    if user is None:
        check_password_hash(_DUMMY_HASH, password or "")
        return None
    return user if check_password_hash(user.password_hash, password or "") else None


def user_for_token(store: UserStore, token: str) -> User | None:
    if not token or len(token) > 512:
        return None
    return store.get_user_by_token_hash(token_hash(token))


def session_stamp(user: User) -> str:
    """A short digest of the password hash, kept in the session: changing a password
    ends the user's other sessions (their stamp no longer matches)."""
    return hashlib.sha256(user.password_hash.encode("utf-8")).hexdigest()[:16]
