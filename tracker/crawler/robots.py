"""robots.txt per origin, as RFC 9309 says: 2xx = the rules, 4xx = allow all, 429/5xx or
unreachable = disallow all (for a shorter time), more than five redirects = allow all.

``RobotsCache`` fetches each origin's file once (through the same guarded fetcher, with
its own time budget), caches it, and applies a ``Crawl-delay`` to the host's rate limit.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.robotparser import RobotFileParser

from tracker.crawler.config import CrawlerConfig
from tracker.crawler.errors import CrawlError, HTTPStatusError, RobotsDisallowed, TooManyRedirects
from tracker.crawler.ratelimit import Deadline, HostRateLimiter

if TYPE_CHECKING:
    from tracker.crawler.fetch import Fetcher
    from tracker.crawler.guard import Target

Origin = tuple[str, str, int]  # scheme, host (IDNA), port


@dataclass
class RobotsRules:
    """The rules of one origin, or the blanket verdict when there are none."""

    parser: RobotFileParser | None  # None: the blanket rule applies
    allow_all: bool
    reason: str
    expires: float
    transient: bool = False  # disallowed only because robots.txt was unavailable

    def allows(self, agent: str, url: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return self.parser.can_fetch(agent, url)


def parse_robots(text: str, url: str) -> RobotFileParser:
    """robotparser's parse, with each group's rules in RFC 9309 order."""
    parser = RobotFileParser(url)
    parser.parse(text.splitlines())
    # robotparser applies the first matching rule; RFC 9309 wants the longest match
    # (Allow winning ties). Sorting each group's rules gives that for plain prefixes.
    # (``entries`` and ``default_entry`` are robotparser internals the stubs omit.)
    entries = list(getattr(parser, "entries", []))
    default_entry = getattr(parser, "default_entry", None)
    if default_entry is not None:
        entries.append(default_entry)
    for entry in entries:
        entry.rulelines.sort(key=lambda rule: (-len(rule.path), not rule.allowance))
    return parser


class RobotsCache:
    """Thread-safe robots.txt cache: one fetch per origin even when many workers arrive
    at once."""

    def __init__(self, config: CrawlerConfig, fetcher: Fetcher, limiter: HostRateLimiter) -> None:
        self.config = config
        self._fetcher = fetcher
        self._limiter = limiter
        self._cache: dict[Origin, RobotsRules] = {}
        self._lock = threading.Lock()
        self._origin_locks: dict[Origin, threading.Lock] = {}
        # robotparser matches groups on the product token ("YinjiBot").
        self.agent = config.user_agent.split("/", 1)[0].strip() or "*"

    def check(self, target: Target) -> None:
        """Raise ``RobotsDisallowed`` when the origin's robots.txt forbids ``target``."""
        robots = self.rules_for(target)
        if not robots.allows(self.agent, target.url):
            raise RobotsDisallowed(target.url, robots.reason, transient=robots.transient)

    def rules_for(self, target: Target) -> RobotsRules:
        key = target.origin
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached.expires > time.monotonic():
                return cached
            origin_lock = self._origin_locks.setdefault(key, threading.Lock())
        with origin_lock:
            with self._lock:
                cached = self._cache.get(key)
                if cached is not None and cached.expires > time.monotonic():
                    return cached
            robots = self._load(target)
            with self._lock:
                self._cache[key] = robots
            return robots

    def _load(self, target: Target) -> RobotsRules:
        cfg = self.config
        netloc = target.url.split("/", 3)[2]
        robots_url = f"{target.scheme}://{netloc}/robots.txt"
        now = time.monotonic()
        try:
            _, response, _ = self._fetcher.fetch(
                robots_url,
                Deadline(cfg.total_timeout),  # its own budget; the page's is extended
                robots=None,
                text_only=False,
                max_bytes=cfg.robots_max_bytes,
                truncate=True,
                max_redirects=5,  # RFC 9309: follow at least five
            )
        except HTTPStatusError as exc:
            status = exc.status or 0
            if status >= 500 or status == 429:
                return RobotsRules(
                    None,
                    False,
                    f"robots.txt unavailable (HTTP {status}): RFC 9309 treats as disallow-all",
                    now + cfg.robots_error_ttl,
                    transient=True,
                )
            return RobotsRules(
                None, True, f"robots.txt HTTP {status}: allow all", now + cfg.robots_ttl
            )
        except TooManyRedirects:
            return RobotsRules(
                None, True, "robots.txt redirect loop: allow all", now + cfg.robots_ttl
            )
        except CrawlError as exc:
            return RobotsRules(
                None,
                False,
                f"robots.txt unreachable ({exc.reason}): RFC 9309 treats as disallow-all",
                now + cfg.robots_error_ttl,
                transient=True,
            )
        parser = parse_robots(response.body.decode("utf-8", errors="replace"), robots_url)
        delay = parser.crawl_delay(self.agent)
        if delay:
            try:
                seconds = min(max(float(delay), cfg.min_interval), cfg.max_crawl_delay)
                self._limiter.set_interval(target.host_ascii, seconds)
            except (TypeError, ValueError):
                pass
        return RobotsRules(parser, True, "disallowed by robots.txt", now + cfg.robots_ttl)
