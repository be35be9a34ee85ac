"""The crawler: fetch a suspect page safely, decode it, extract its main text.

A library package (the Celery workers and the CLI call it); it starts no thread or
server at import. Guarantees, all per ``CrawlerConfig`` (see docs/CRAWLER.md):

- SSRF guard (``guard``): only http/https, no credentials in URLs; the host is resolved
  once per hop and refused if ANY address is non-public, then the connection goes to
  that validated IP (with the original Host header and SNI), so a DNS answer cannot
  change between the check and the connect. Redirects are followed by hand and every
  hop is checked again, before any connection is made.
- Bounded (``fetch``): connect/read timeouts, a total deadline per fetch, a size cap
  applied while streaming and to the *decoded* body (gzip bombs), a redirect limit.
- Polite (``ratelimit``, ``robots``): one user agent, a thread-safe per-host minimum
  interval, robots.txt per origin (RFC 9309: 4xx = allow, 5xx/unreachable = disallow),
  retries with exponential backoff and ``Retry-After``.
- Chinese-aware decoding (``decoding.decode_html``): GBK, GB18030 and Big5 pages are
  read right even when they declare nothing or declare the wrong charset.
- Main-text extraction (``extraction.extract``).
- Evidence (``results.Page.to_capture``): the redirect hops, the address connected to,
  headers as received, the TLS certificate presented, the response time; an optional
  full-page screenshot through headless Chromium (``screenshot``), under the same guard.

The names below are loaded on first use (PEP 562), so ``import tracker.crawler.decoding``
or ``from tracker.crawler import CrawlError`` does not pay for urllib3.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracker.crawler.config import DEFAULT_USER_AGENT, CrawlerConfig, IPAddress
    from tracker.crawler.crawler import Crawler
    from tracker.crawler.decoding import CJK_RATIO_THRESHOLD, cjk_ratio, decode_html
    from tracker.crawler.errors import (
        BadContent,
        Blocked,
        CrawlError,
        HTTPStatusError,
        InvalidURL,
        NotText,
        RobotsDisallowed,
        Timeout,
        TooLarge,
        TooManyRedirects,
        Unreachable,
    )
    from tracker.crawler.extraction import extract
    from tracker.crawler.fetch import REDIRECT_STATUSES
    from tracker.crawler.guard import DEFAULT_PORTS, is_public_address
    from tracker.crawler.ratelimit import HostRateLimiter
    from tracker.crawler.results import CRAWLER_VERSION, FetchResult, Page, Redirect
    from tracker.crawler.screenshot import Screenshot, Screenshotter

# exported name -> the submodule that defines it
_EXPORTS = {
    "Crawler": "crawler",
    "CrawlerConfig": "config",
    "DEFAULT_USER_AGENT": "config",
    "IPAddress": "config",
    "FetchResult": "results",
    "Page": "results",
    "Redirect": "results",
    "CRAWLER_VERSION": "results",
    "Screenshot": "screenshot",
    "Screenshotter": "screenshot",
    "CrawlError": "errors",
    "InvalidURL": "errors",
    "Blocked": "errors",
    "RobotsDisallowed": "errors",
    "TooLarge": "errors",
    "TooManyRedirects": "errors",
    "HTTPStatusError": "errors",
    "Timeout": "errors",
    "Unreachable": "errors",
    "NotText": "errors",
    "BadContent": "errors",
    "is_public_address": "guard",
    "DEFAULT_PORTS": "guard",
    "REDIRECT_STATUSES": "fetch",
    "HostRateLimiter": "ratelimit",
    "decode_html": "decoding",
    "cjk_ratio": "decoding",
    "CJK_RATIO_THRESHOLD": "decoding",
    "extract": "extraction",
}

__all__ = [
    "CJK_RATIO_THRESHOLD",
    "CRAWLER_VERSION",
    "DEFAULT_PORTS",
    "DEFAULT_USER_AGENT",
    "REDIRECT_STATUSES",
    "BadContent",
    "Blocked",
    "CrawlError",
    "Crawler",
    "CrawlerConfig",
    "FetchResult",
    "HTTPStatusError",
    "HostRateLimiter",
    "IPAddress",
    "InvalidURL",
    "NotText",
    "Page",
    "Redirect",
    "RobotsDisallowed",
    "Screenshot",
    "Screenshotter",
    "Timeout",
    "TooLarge",
    "TooManyRedirects",
    "Unreachable",
    "cjk_ratio",
    "decode_html",
    "extract",
    "is_public_address",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
