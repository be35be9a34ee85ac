"""Pacing: the per-host minimum interval between requests and the per-fetch deadline."""

from __future__ import annotations

import threading
import time

from tracker.crawler.errors import Timeout


class HostRateLimiter:
    """Thread-safe minimum interval between request starts to the same host.

    Each caller reserves the next free slot under the lock and sleeps outside it, so
    concurrent workers to one host are spaced out instead of bursting together.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}
        self._intervals: dict[str, float] = {}

    def set_interval(self, host: str, seconds: float) -> None:
        with self._lock:
            self._intervals[host] = seconds

    def wait(self, host: str) -> float:
        """Block until ``host`` may be contacted; return the seconds waited."""
        with self._lock:
            now = time.monotonic()
            interval = self._intervals.get(host, self.interval)
            slot = max(now, self._next.get(host, 0.0))
            self._next[host] = slot + interval
            if len(self._next) > 10_000:  # forget hosts whose slot has long passed
                self._next = {h: t for h, t in self._next.items() if t > now}
        delay = slot - now
        if delay > 0:
            time.sleep(delay)
        return max(delay, 0.0)


class Deadline:
    """The total time budget of one fetch (all hops, retries, backoff and the body)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def extend(self, seconds: float) -> None:
        # Waits for our own rate limiter or robots.txt are not the server's slowness.
        self.end += seconds

    def check(self, url: str) -> float:
        """The seconds left; raise ``Timeout`` naming ``url`` when none are."""
        left = self.remaining()
        if left <= 0:
            raise Timeout(url, f"total deadline of {self.seconds:g}s exceeded")
        return left
