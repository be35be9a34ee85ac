"""One "same site" rule (tracker.crawler.links) for the site crawl and the book monitor."""

from __future__ import annotations

import pytest

from tracker.common.rules import site_of
from tracker.crawler.links import Link, page_links, same_site, same_site_links


def _page(*hrefs: str, base: str = "") -> str:
    head = f'<head><base href="{base}"></head>' if base else ""
    body = "".join(f'<a href="{h}">第{i}章 link {i}</a> ' for i, h in enumerate(hrefs, 1))
    return f"<html>{head}<body><p>正文</p>{body}</body></html>"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("http://site.test/a", "https://SITE.test./b?x=1", True),  # scheme, case, dot
        ("http://site.test:80/a", "http://site.test/b", True),  # the default port
        ("https://site.test:443/a", "https://site.test/b", True),
        ("http://site.test:8080/a", "http://site.test/b", False),  # another server
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:9090/a", False),
        ("http://m.site.test/a", "http://site.test/a", False),  # another subdomain
        ("http://site.test/a", "ftp://site.test/a", False),
        ("http://site.test/a", "http://[::1/a", False),  # malformed: no site
        ("mailto:a@site.test", "mailto:a@site.test", False),
    ],
)
def test_which_urls_share_a_site(a: str, b: str, same: bool) -> None:
    assert same_site(a, b) is same
    assert same_site(b, a) is same


def test_site_of_names_host_and_odd_port() -> None:
    assert site_of("https://Www.Example.com/x") == "www.example.com"
    assert site_of("http://example.com:8000/") == "example.com:8000"
    assert site_of("javascript:alert(1)") == ""


def test_same_site_links_of_a_page() -> None:
    html = _page(
        "/a",
        "b.html#x",
        "/a?utm_source=x",  # the same page as /a once tracking parameters go
        "/a/",  # and once the trailing slash goes
        "https://site.test/c",  # https of the same host: the same site
        "http://site.test:81/d",  # another port: another site
        "https://other.org/",
        "mailto:a@b.c",
        "javascript:void(0)",
        "#top",  # the page itself
        "/dir/",  # the page itself
        "/e",
    )
    got = same_site_links(html, "http://site.test/dir/")
    assert [link.url for link in got] == [
        "http://site.test/a",
        "http://site.test/dir/b.html",
        "https://site.test/c",
        "http://site.test/e",
    ]
    assert got[0] == Link("http://site.test/a", "第1章 link 1")
    assert [x.url for x in same_site_links(html, "http://site.test/dir/", 2)] == [
        "http://site.test/a",
        "http://site.test/dir/b.html",
    ]
    assert same_site_links(html, "http://site.test/dir/", 0) == []


def test_links_resolve_against_base_href_and_survive_bad_markup() -> None:
    html = _page("ch1.html", "../up.html", base="http://site.test/book/7/")
    assert [link.url for link in page_links(html, "http://site.test/other/index")] == [
        "http://site.test/book/7/ch1.html",
        "http://site.test/book/up.html",
    ]
    assert page_links("", "http://site.test/") == []
    assert page_links("   ", "http://site.test/") == []
    assert page_links('<?xml version="1.0" encoding="gbk"?><a href="/x">x</a>', "http://s.t/") == [
        Link("http://s.t/x", "x")
    ]
    assert page_links(b"\x00\x01", "http://site.test/") == []
    assert page_links('<a href="http://[bad/x">x</a><a href="/ok">ok</a>', "http://s.t/") == [
        Link("http://s.t/ok", "ok")
    ]
