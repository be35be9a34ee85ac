"""The crawler's errors: one ``CrawlError`` hierarchy for every reason a page was not fetched.

A worker only needs ``err.transient`` (try again later?) and ``err.retry_after``; the
subclasses name the reason for logs, results and tests.
"""

from __future__ import annotations


class CrawlError(Exception):
    """A page could not be fetched. ``str(err)`` names the reason and the URL.

    ``transient`` tells a worker whether trying again later may succeed;
    ``retry_after`` (seconds) is set when the server said when to come back.
    The exception pickles (Celery sends it between processes): the constructor
    arguments are kept in ``args`` and the rest in ``__dict__``.
    """

    transient: bool = False

    def __init__(
        self,
        url: str,
        reason: str,
        status: int | None = None,
        *,
        retry_after: float | None = None,
        transient: bool | None = None,
    ) -> None:
        super().__init__(url, reason, status)
        self.url = url
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        if transient is not None:
            self.transient = transient

    def __str__(self) -> str:
        return f"{self.reason}: {self.url}"


class InvalidURL(CrawlError):
    """The URL fails ``tracker.common.rules.check_url`` (not http(s), no host, credentials,
    control characters, too long, bad port) or its host name or port is invalid."""


class Blocked(CrawlError):
    """Refused by the SSRF guard: the host is or resolves to a non-public address."""


class RobotsDisallowed(CrawlError):
    """robots.txt (or its unavailability, RFC 9309) forbids this URL."""


class TooLarge(CrawlError):
    """The body (after content decoding) exceeds ``max_bytes``."""


class TooManyRedirects(CrawlError):
    """More than ``max_redirects`` redirects."""


class HTTPStatusError(CrawlError):
    """The final response had an error status (4xx/5xx, or a 3xx without Location)."""

    def __init__(
        self,
        url: str,
        reason: str,
        status: int | None = None,
        *,
        retry_after: float | None = None,
        transient: bool | None = None,
    ) -> None:
        if transient is None:
            transient = status in {408, 425, 429, 500, 502, 503, 504}
        super().__init__(url, reason, status, retry_after=retry_after, transient=transient)


class Timeout(CrawlError):
    """Connect/read timeout or the total deadline ran out."""

    transient = True


class Unreachable(CrawlError):
    """DNS failure, connection refused/reset, TLS failure."""

    transient = True


class NotText(CrawlError):
    """The response is not a text/HTML page (image, archive, PDF...)."""


class BadContent(CrawlError):
    """The body cannot be decoded (unsupported or corrupt Content-Encoding)."""
