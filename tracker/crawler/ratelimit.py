"""Pacing: the per-host politeness interval and the per-fetch deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tracker.crawler.errors import Timeout


class HostRateLimiter:
    """Thread-safe politeness per host: one request at a time to a host, and the next
    one only ``interval`` seconds after the previous one *ended* (its body read, or its
    failure). Every request of the crawler goes through it: robots.txt, each redirect
    hop, each retry. Spacing by the end of the previous request (not by its start slot)
    is what the server sees: however late a thread sends, two requests never arrive
    closer than the interval (a start-slot limiter let a robots.txt fetch and the first
    page arrive 16 ms apart under a 20 ms interval on a loaded machine). An interval
    of 0 paces nothing (requests to one host may then run in parallel).
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._cond = threading.Condition()
        self._free_at: dict[str, float] = {}  # monotonic time the host may be asked again
        self._busy: set[str] = set()  # hosts with a request in flight
        self._intervals: dict[str, float] = {}

    def set_interval(self, host: str, seconds: float) -> None:
        with self._cond:
            self._intervals[host] = seconds

    def interval_of(self, host: str) -> float:
        with self._cond:
            return self._intervals.get(host, self.interval)

    def acquire(self, host: str) -> float:
        """Block until ``host`` may be asked (no request to it in flight, its interval
        passed since the last one ended), then hold it; return the seconds waited.
        Every ``acquire`` needs its ``release``: use ``slot``."""
        start = time.monotonic()
        with self._cond:
            if self._intervals.get(host, self.interval) <= 0:
                return 0.0  # no pacing asked (subresources of a screenshot, tests)
            while True:
                now = time.monotonic()
                if host not in self._busy:
                    delay = self._free_at.get(host, 0.0) - now
                    if delay <= 0:
                        break
                    self._cond.wait(delay)
                else:
                    self._cond.wait()
            self._busy.add(host)
            if len(self._free_at) > 10_000:  # forget hosts whose interval has long passed
                self._free_at = {h: t for h, t in self._free_at.items() if t > now}
        return time.monotonic() - start

    def release(self, host: str) -> None:
        """The request to ``host`` ended now: its interval starts."""
        with self._cond:
            if host not in self._busy:
                return
            self._busy.discard(host)
            self._free_at[host] = time.monotonic() + self._intervals.get(host, self.interval)
            self._cond.notify_all()

    @contextmanager
    def slot(self, host: str) -> Iterator[float]:
        """``with limiter.slot(host) as waited:`` one request to ``host``."""
        waited = self.acquire(host)
        try:
            yield waited
        finally:
            self.release(host)


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
