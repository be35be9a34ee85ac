"""``CrawlerConfig``: every limit and policy of the crawler, in one frozen dataclass.

``from_settings`` also reads the crawler's own environment variables (with the strict
parsers of ``tracker.plumbing.config``; a bad value is a ``SettingError`` naming it):

- ``YINJI_SCREENSHOTS``: ``off``, ``auto`` (the default: a full-page PNG of each crawled
  page when the worker has Chromium and Playwright, else the capture says why not) or
  ``on`` (as ``auto``, but a crawler without a browser refuses to start).
- ``YINJI_SCREENSHOT_TIMEOUT``: seconds for one screenshot, browser start included
  (default 30).
- ``YINJI_CHROMIUM``: the Chromium executable (default ``/usr/bin/chromium``, then
  ``chromium`` / ``chromium-browser`` / ``google-chrome`` on the PATH, then
  Playwright's own build).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracker.plumbing.config import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_USER_AGENT = "YinjiBot/0.1 (+copyright tracking)"
SCREENSHOT_MODES = ("off", "auto", "on")


@dataclass(frozen=True)
class CrawlerConfig:
    """Crawler settings. Times are seconds; ``from_settings`` reads ``Settings``."""

    connect_timeout: float = 5.0
    read_timeout: float = 15.0  # per socket read, not for the whole body
    total_timeout: float = 60.0  # one fetch(): all hops, retries, backoff, body
    max_bytes: int = 5 * 1024 * 1024  # decoded body cap
    max_redirects: int = 5
    user_agent: str = DEFAULT_USER_AGENT
    min_interval: float = 1.0  # per host: from the end of one request to the next
    retries: int = 2  # extra attempts after the first one
    backoff_factor: float = 0.5  # sleeps factor * 2**attempt (0.5 s, 1 s, ...)
    retry_statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504})
    max_retry_after: float = 30.0  # a longer Retry-After gives up at once (reschedule instead)
    respect_robots: bool = True
    robots_ttl: float = 3600.0
    robots_error_ttl: float = 300.0  # a 5xx/unreachable robots.txt is retried sooner
    robots_max_bytes: int = 512 * 1024  # RFC 9309: parse at least 500 KiB, ignore the rest
    max_crawl_delay: float = 30.0  # cap on a robots.txt Crawl-delay
    allow_private: bool = False
    # Escape hatch consulted for each address the rules would refuse: return True to allow
    # it anyway (a loopback test server, an internal mirror) without opening everything.
    allow_address: Callable[[IPAddress, int], bool] | None = None
    # host, port -> IP strings; defaults to socket.getaddrinfo (tests inject a fake DNS).
    resolver: Callable[[str, int], Sequence[str]] | None = None
    ca_certs: str | None = None  # CA bundle for https (default: the system store)
    accept_language: str = "zh-CN,zh;q=0.9,zh-TW;q=0.8,en;q=0.5"
    screenshots: str = "off"  # off / auto / on (see the module docstring)
    screenshot_timeout: float = 30.0  # one screenshot, browser start included
    screenshot_max_requests: int = 150  # subresources one screenshot may fetch
    browser_path: str | None = None  # Chromium; None: looked for (see the docstring)

    def __post_init__(self) -> None:
        if self.screenshots not in SCREENSHOT_MODES:
            raise ValueError(
                f"screenshots must be one of {', '.join(SCREENSHOT_MODES)}, "
                f"got {self.screenshots!r}"
            )

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> CrawlerConfig:
        from tracker.plumbing.config import SettingError, env_float, env_optional_str, env_str

        mode = env_str("YINJI_SCREENSHOTS", "auto").lower()
        if mode not in SCREENSHOT_MODES:
            raise SettingError(
                f"YINJI_SCREENSHOTS must be one of {', '.join(SCREENSHOT_MODES)}, got {mode!r}"
            )
        values: dict[str, Any] = {
            "allow_private": settings.allow_private_urls,
            "screenshots": mode,
            "screenshot_timeout": env_float("YINJI_SCREENSHOT_TIMEOUT", 30.0, minimum=1.0),
            "browser_path": env_optional_str("YINJI_CHROMIUM"),
        }
        values.update(overrides)
        return cls(**values)
