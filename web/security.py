"""Secret key, CSRF tokens, security headers and login throttling."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
import time
from collections import OrderedDict, deque
from pathlib import Path

from flask import Flask, Response, request, session

from tracker.plumbing.config import Settings
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
    """Failed sign-ins, counted per username and per client address in two bounded
    tables (in memory, per process: enough to stop password guessing against one
    server).

    - A name with ``name_limit`` failures within ``window`` seconds is refused from
      every address (guessing one user's password from many addresses).
    - An address with ``address_limit`` failures within the window is refused for
      every name (spraying many names from one address).

    Each table keeps at most ``max_entries`` keys. When one is full, the entry dropped
    is the stalest one that is not blocked: the junk names of a spraying attack (one
    failure each) go first, and a blocked entry is never dropped while its window
    lasts, so flooding the table cannot reset the counter of the name under attack.
    If every entry is blocked, a new key is not counted in that table (the other
    table still counts it)."""

    def __init__(
        self,
        name_limit: int = 10,
        address_limit: int = 50,
        window: float = 900.0,
        max_entries: int = 10_000,
    ) -> None:
        self.name_limit = name_limit
        self.address_limit = address_limit
        self.window = window
        self.max_entries = max_entries
        self._names: OrderedDict[str, deque[float]] = OrderedDict()
        self._addresses: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _count(self, times: deque[float] | None, now: float) -> int:
        return sum(1 for t in times or () if now - t < self.window)

    def blocked(self, address: str, username: str) -> bool:
        with self._lock:
            now = time.monotonic()
            return (
                self._count(self._names.get(username.lower()), now) >= self.name_limit
                or self._count(self._addresses.get(address), now) >= self.address_limit
            )

    def failed(self, address: str, username: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._record(self._names, username.lower(), self.name_limit, now)
            self._record(self._addresses, address, self.address_limit, now)

    def succeeded(self, address: str, username: str) -> None:
        """The user's own counter ends; the address's does not (an attacker signing in
        to an account of their own must not reset the count of their guesses)."""
        with self._lock:
            self._names.pop(username.lower(), None)

    def _record(
        self, table: OrderedDict[str, deque[float]], key: str, limit: int, now: float
    ) -> None:
        times = table.get(key)
        if times is None:
            if len(table) >= self.max_entries and not self._evict(table, limit, now):
                return
            times = table[key] = deque(maxlen=limit)
        times.append(now)
        table.move_to_end(key)  # the table is ordered by last failure, stalest first

    def _evict(self, table: OrderedDict[str, deque[float]], limit: int, now: float) -> bool:
        """Drop the stalest entry that is not blocked; False when all are blocked."""
        for key, times in table.items():
            if self._count(times, now) < limit:
                del table[key]
                return True
        return False


def init_security(app: Flask) -> None:
    app.after_request(set_security_headers)
    app.extensions["yinji.throttle"] = LoginThrottle()
    app.jinja_env.globals["csrf_token"] = csrf_token
