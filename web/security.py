"""Secret key, CSRF tokens, security headers and login throttling."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
import time
from pathlib import Path

from flask import Flask, Response, request, session

from tracker.config import Settings
from tracker.reports import REPORT_CSS

SECRET_FILE = "secret_key"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"

# The app's own pages: scripts and styles only from /static (no inline code), no
# framing, no plug-ins; forms post only back to us.
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# The HTML evidence report is a self-contained file with one inline stylesheet: allow
# exactly that stylesheet by its hash and nothing else (no scripts at all).
REPORT_CSP = (
    "default-src 'none'; style-src 'sha256-"
    + base64.b64encode(hashlib.sha256(REPORT_CSS.encode("utf-8")).digest()).decode("ascii")
    + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def load_secret_key(settings: Settings) -> str:
    """``YINJI_SECRET_KEY``, else the key kept in ``<data_dir>/secret_key`` (mode 600),
    made on first start so sessions survive restarts and every process of one
    installation (web, workers) agrees on it."""
    if settings.secret_key:
        return settings.secret_key
    path = Path(settings.data_dir) / SECRET_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL: two processes starting at once cannot both write a different key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_text(encoding="ascii").strip()
        if key:
            return key
        # An empty file left by a crash between create and write: replace it.
        path.unlink()
        return load_secret_key(settings)
    key = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key + "\n")
    return key


def csrf_token() -> str:
    """The session's CSRF token (made on first use); every form posts it back."""
    token = session.get("csrf")
    if not token:
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


def csrf_ok() -> bool:
    expected = session.get("csrf")
    sent = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD) or ""
    return bool(expected) and hmac.compare_digest(str(expected), str(sent))


def set_security_headers(response: Response) -> Response:
    headers = response.headers
    headers.setdefault("Content-Security-Policy", PAGE_CSP)
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("X-Frame-Options", "DENY")
    # Suspect URLs are links to pirate sites: never tell them where the click came from.
    headers.setdefault("Referrer-Policy", "no-referrer")
    headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    headers.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
    if not request.path.startswith("/static/"):
        # Pages and API answers hold unpublished works and case data: keep them out
        # of shared and browser caches.
        headers.setdefault("Cache-Control", "no-store")
    return response


class LoginThrottle:
    """Failed logins per (address, username): after ``limit`` failures within
    ``window`` seconds further attempts are refused until the window passes.
    In memory, per process: enough to stop password guessing against one server."""

    def __init__(self, limit: int = 10, window: float = 900.0) -> None:
        self.limit = limit
        self.window = window
        self._failures: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str], now: float) -> list[float]:
        times = [t for t in self._failures.get(key, []) if now - t < self.window]
        if times:
            self._failures[key] = times
        else:
            self._failures.pop(key, None)
        return times

    def blocked(self, address: str, username: str) -> bool:
        with self._lock:
            return len(self._recent((address, username.lower()), time.monotonic())) >= self.limit

    def failed(self, address: str, username: str) -> None:
        key = (address, username.lower())
        with self._lock:
            now = time.monotonic()
            self._failures[key] = [*self._recent(key, now), now]
            if len(self._failures) > 10_000:  # bounded memory under a spraying attack
                self._failures.clear()

    def succeeded(self, address: str, username: str) -> None:
        with self._lock:
            self._failures.pop((address, username.lower()), None)


def init_security(app: Flask) -> None:
    app.after_request(set_security_headers)
    app.extensions["yinji.throttle"] = LoginThrottle()
    app.jinja_env.globals["csrf_token"] = csrf_token
