"""robots.txt (tracker.crawler.robots), RFC 9309.

No network: see conftest.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from tracker.crawler import Crawler, RobotsDisallowed
from tracker.crawler import robots as robots_module

from .helpers import SIMPLIFIED, Site, article, closed_port, fake_dns

pytestmark = pytest.mark.timeout(60)


# --------------------------------------------------------------------------- robots.txt

ROBOTS_HOSTS = [
    "rules.test",
    "agent.test",
    "longest.test",
    "none.test",
    "error.test",
    "ttl.test",
]


def robots_crawler(make_crawler: Callable[..., Crawler], **kw: Any) -> Crawler:
    return make_crawler(resolver=fake_dns({h: ["127.0.0.1"] for h in ROBOTS_HOSTS}), **kw)


def test_robots_disallow_and_allow(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.page(
        "/robots.txt", "User-agent: *\nDisallow: /private/\n", "text/plain", host="rules.test"
    )
    site.page("/public/a", article("公开", SIMPLIFIED), host="rules.test")
    site.page("/private/a", article("私有", SIMPLIFIED), host="rules.test")
    crawler = robots_crawler(make_crawler)

    assert crawler.crawl_page(site.url("/public/a", "rules.test")).title == "公开"
    with pytest.raises(RobotsDisallowed) as info:
        crawler.fetch(site.url("/private/a", "rules.test"))
    assert site.url("/private/a", "rules.test") in str(info.value)
    crawler.fetch(site.url("/public/a", "rules.test"))
    assert site.arrivals("/private/a") == []  # refused before connecting
    assert len(site.arrivals("/robots.txt", "rules.test")) == 1  # fetched once, cached


def test_robots_group_for_our_agent(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    rules = "User-agent: YinjiBot\nDisallow: /\n\nUser-agent: *\nDisallow:\n"
    site.page("/robots.txt", rules, "text/plain", host="agent.test")
    site.page("/a", article("页", SIMPLIFIED), host="agent.test")
    with pytest.raises(RobotsDisallowed):
        robots_crawler(make_crawler).fetch(site.url("/a", "agent.test"))
    assert site.arrivals("/a") == []


def test_robots_longest_match_wins(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    rules = "User-agent: *\nDisallow: /\nAllow: /books/\n"
    site.page("/robots.txt", rules, "text/plain", host="longest.test")
    site.page("/books/1", article("书", SIMPLIFIED), host="longest.test")
    crawler = robots_crawler(make_crawler)
    assert crawler.fetch(site.url("/books/1", "longest.test")).status == 200
    with pytest.raises(RobotsDisallowed):
        crawler.fetch(site.url("/other", "longest.test"))


def test_robots_missing_allows_and_server_error_disallows(
    site: Site, make_crawler: Callable[..., Crawler]
) -> None:
    site.page("/a", article("页", SIMPLIFIED))
    site.route("/robots.txt", host="error.test")(lambda h: h.reply(503, b"down"))
    crawler = robots_crawler(make_crawler, retries=0)
    assert crawler.fetch(site.url("/a", "none.test")).status == 200  # robots.txt 404: allow
    with pytest.raises(RobotsDisallowed, match="503"):  # 5xx: disallow (RFC 9309)
        crawler.fetch(site.url("/a", "error.test"))
    assert [h.host for h in site.arrivals("/a")] == ["none.test"]


def test_robots_unreachable_disallows(make_crawler: Callable[..., Crawler]) -> None:
    crawler = robots_crawler(make_crawler, retries=0)
    with pytest.raises(RobotsDisallowed, match="unreachable") as info:
        crawler.fetch(f"http://none.test:{closed_port()}/a")
    assert info.value.transient  # a worker may try again later


def test_robots_cache_expires(
    site: Site, make_crawler: Callable[..., Crawler], monkeypatch: pytest.MonkeyPatch
) -> None:
    site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain", host="ttl.test")
    site.page("/a", article("页", SIMPLIFIED), host="ttl.test")
    # The robots cache's clock is moved by hand: a real 0.2 s TTL could lapse between the
    # first two fetches on a loaded machine.
    later = [0.0]
    clock = SimpleNamespace(monotonic=lambda: time.monotonic() + later[0])
    monkeypatch.setattr(robots_module, "time", clock)
    crawler = robots_crawler(make_crawler, robots_ttl=60)
    crawler.fetch(site.url("/a", "ttl.test"))
    crawler.fetch(site.url("/a", "ttl.test"))
    assert len(site.arrivals("/robots.txt", "ttl.test")) == 1
    later[0] = 61.0
    crawler.fetch(site.url("/a", "ttl.test"))
    assert len(site.arrivals("/robots.txt", "ttl.test")) == 2
