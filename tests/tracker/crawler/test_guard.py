"""The SSRF guard (tracker.crawler.guard) and the one URL rule.

No network: see conftest.py.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from tracker.common.rules import MAX_URL_LENGTH, check_url
from tracker.crawler import Blocked, Crawler, InvalidURL, is_public_address

from .helpers import SIMPLIFIED, Site, article, closed_port, fake_dns

pytestmark = pytest.mark.timeout(60)


# --------------------------------------------------------------------------- SSRF guard


PRIVATE_URLS = [
    "http://127.0.0.1:{port}/",
    "http://localhost:{port}/",
    "http://[::1]:{port}/",
    "http://10.0.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://2130706433:{port}/",  # 127.0.0.1 in decimal
    "http://0x7f.1:{port}/",  # 127.0.0.1 in inet_aton shorthand
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[2002:a00:1::1]/",  # 6to4 wrapping 10.0.0.1
]


@pytest.mark.parametrize("template", PRIVATE_URLS)
def test_guard_refuses_private_addresses_before_connecting(
    site: Site, make_crawler: Callable[..., Crawler], net: list[Any], template: str
) -> None:
    url = template.format(port=site.port)
    with pytest.raises(Blocked) as info:
        make_crawler(allow_private=False).fetch(url)
    assert url in str(info.value)
    assert net == []  # refused before any connection
    assert site.hits == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/file",
        "gopher://example.com:70/",
        "javascript:alert(1)",
        "http://user:secret@example.com/",
        "http://example.com@127.0.0.1/",
    ],
)
def test_guard_refuses_schemes_and_credentials(
    make_crawler: Callable[..., Crawler], net: list[Any], url: str
) -> None:
    # The URL rule (tracker.common.rules.check_url) refuses them before any DNS or connection.
    with pytest.raises(InvalidURL):
        make_crawler(allow_private=True).fetch(url)
    assert net == []


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "ftp://example.com/file",
        "http://user:secret@example.com/",
        "http://exa\nmple.com/",
        "http://example.com:99999/",
        "http:///no-host",
        "https://example.com/" + "a" * MAX_URL_LENGTH,
    ],
)
def test_the_crawler_applies_the_one_url_rule(
    make_crawler: Callable[..., Crawler], net: list[Any], url: str
) -> None:
    """Every URL tracker.common.rules.check_url refuses, the crawler refuses with its message."""
    with pytest.raises(ValueError) as rule:
        check_url(url)
    with pytest.raises(InvalidURL) as crawled:
        make_crawler(allow_private=True).check_url(url)
    assert crawled.value.reason == str(rule.value)
    assert net == []


def test_guard_checks_every_redirect_hop(
    site: Site, make_crawler: Callable[..., Crawler], net: list[tuple[str, int]]
) -> None:
    # Only the test server itself is allowed: the first hop passes, the targets do not.
    def allow(ip: Any, port: int) -> bool:
        return ip == ipaddress.ip_address("127.0.0.1") and port == site.port

    other = closed_port()
    targets = {
        "/go/metadata": "http://169.254.169.254/latest/meta-data/",
        "/go/ten": "http://10.0.0.1/admin",
        "/go/v6": f"http://[::1]:{site.port}/ok",
        "/go/other-port": f"http://127.0.0.1:{other}/",
        "/go/file": "file:///etc/passwd",
        "/go/zero": f"http://0.0.0.0:{site.port}/ok",
    }
    for path, location in targets.items():
        site.route(path)(lambda h, loc=location: h.reply(302, b"", headers={"Location": loc}))
    site.page("/ok", article("可以", SIMPLIFIED).encode(), "text/html")

    crawler = make_crawler(allow_private=False, allow_address=allow)
    assert crawler.fetch(site.url("/ok")).status == 200
    for path, location in targets.items():
        # file: fails the URL rule itself; the others pass it and fail the address check.
        refusal = InvalidURL if location.startswith("file:") else Blocked
        with pytest.raises(refusal) as info:
            crawler.fetch(site.url(path))
        assert info.value.url.startswith(location.split("/")[0])
        assert len(site.arrivals(path)) == 1
    assert set(net) == {("127.0.0.1", site.port)}


def test_check_url_normalises_and_guards(make_crawler: Callable[..., Crawler]) -> None:
    crawler = make_crawler(allow_private=False, resolver=fake_dns({"pirate.test": ["8.8.8.8"]}))
    assert crawler.check_url("HTTP://Pirate.TEST:80/书 1?q=字#frag") == (
        "http://pirate.test/%E4%B9%A6%201?q=%E5%AD%97"
    )
    with pytest.raises(Blocked):
        crawler.check_url("http://169.254.169.254/")


def test_guard_refuses_when_any_dns_answer_is_private(
    site: Site, make_crawler: Callable[..., Crawler], net: list[Any]
) -> None:
    crawler = make_crawler(
        allow_private=False,
        allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port == site.port,
        resolver=fake_dns({"mixed.test": ["127.0.0.1", "10.0.0.1"]}),
    )
    with pytest.raises(Blocked, match=r"10\.0\.0\.1"):
        crawler.fetch(site.url("/ok", host="mixed.test"))
    assert net == []


def test_connects_to_the_validated_ip_with_original_host(
    site: Site, make_crawler: Callable[..., Crawler], net: list[tuple[str, int]]
) -> None:
    """DNS rebinding: the second answer is private; it is checked again and refused,
    and the first fetch went to the address that was checked (never re-resolved)."""
    answers = [["127.0.0.1"], ["10.0.0.1"]]
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[min(len(calls), 2) - 1]

    site.page("/hello", article("你好", SIMPLIFIED).encode(), "text/html")
    crawler = make_crawler(
        allow_private=False,
        allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port == site.port,
        resolver=rebinding,
        respect_robots=False,
    )
    page = crawler.crawl_page(site.url("/hello", host="pirate.test"))
    assert page.final_url == site.url("/hello", host="pirate.test")
    assert site.arrivals("/hello")[0].headers["Host"] == f"pirate.test:{site.port}"
    assert net == [("127.0.0.1", site.port)]
    with pytest.raises(Blocked, match=r"10\.0\.0\.1"):
        crawler.fetch(site.url("/hello", host="pirate.test"))
    assert len(site.arrivals("/hello")) == 1
    assert all(ip == "127.0.0.1" for ip, _ in net)


def test_is_public_address() -> None:
    public = ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"]
    private = ["127.0.0.1", "10.1.2.3", "169.254.1.1", "0.0.0.0", "::", "::1", "fec0::1"]
    private += ["::ffff:10.0.0.1", "2002:7f00:1::1", "224.0.0.251", "255.255.255.255"]
    assert all(is_public_address(ipaddress.ip_address(a)) for a in public)
    assert not any(is_public_address(ipaddress.ip_address(a)) for a in private)
