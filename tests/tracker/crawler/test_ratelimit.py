"""Per-host pacing (tracker.crawler.ratelimit).

No network: see conftest.py.
"""

from __future__ import annotations

import itertools
import threading
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
