"""Per-host pacing (tracker.crawler.ratelimit).

No network: see conftest.py.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from tracker.crawler import Crawler

from .helpers import SIMPLIFIED, Site, article

pytestmark = pytest.mark.timeout(60)


# --------------------------------------------------------------------------- rate limit


def test_rate_limit_spaces_requests_to_one_host(
    site: Site, make_crawler: Callable[..., Crawler]
) -> None:
    interval = 0.25
    for i in range(5):
        site.page(f"/rate/{i}", article("限速", SIMPLIFIED))
    crawler = make_crawler(min_interval=interval)
    crawler.fetch(site.url("/rate/0"))
    crawler.fetch(site.url("/rate/1"))
    threads = [
        threading.Thread(target=crawler.fetch, args=(site.url(f"/rate/{i}"),)) for i in (2, 3, 4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    times = sorted(h.at for h in site.hits)  # robots.txt and pages share the host's slots
    assert len(times) == 6
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= interval * 0.8, gaps  # without the limiter they would be ~0


def test_interval_counts_from_the_end_of_the_previous_request_at_the_server(
    site: Site, make_crawler: Callable[..., Crawler]
) -> None:
    """robots.txt, a redirect hop and pages fetched by four threads at once: the server
    never sees a request to the host before the previous answer was sent plus the
    interval (a limiter spacing start slots sent the next request while the slow
    previous answer was still being written)."""
    interval, slow = 0.1, 0.15
    ended: list[tuple[float, str]] = []  # when the server began writing each answer

    def slow_reply(body: str, status: int = 200, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        def handle(h):  # type: ignore[no-untyped-def]
            time.sleep(slow)
            with site.lock:
                ended.append((time.monotonic(), h.path))
            h.reply(status, body, headers=headers)

        return handle

    site.route("/robots.txt")(slow_reply("User-agent: *\nAllow: /\n"))
    site.route("/moved")(slow_reply("", 302, {"Location": "/end/0"}))
    for i in range(4):
        site.route(f"/end/{i}")(slow_reply(article("限速", SIMPLIFIED)))
    crawler = make_crawler(min_interval=interval, respect_robots=True)
    urls = [site.url("/moved")] + [site.url(f"/end/{i}") for i in (1, 2, 3)]
    threads = [threading.Thread(target=crawler.fetch, args=(u,)) for u in urls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    arrivals = sorted((h.at, h.path) for h in site.hits)
    assert [p for _, p in arrivals].count("/robots.txt") == 1
    assert len(arrivals) == 6  # robots.txt, /moved, /end/0 .. /end/3
    ends = sorted(ended)
    assert len(ends) == 6
    for (arrived, path), (ended_at, prev) in zip(arrivals[1:], ends, strict=False):
        assert arrived - ended_at >= interval * 0.95, (path, prev, arrived - ended_at)
