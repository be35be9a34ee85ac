"""Crawler tests against a local threaded HTTP server on 127.0.0.1.

Nothing here may reach the network: an autouse fixture wraps urllib3's connect and
socket.getaddrinfo so that only loopback addresses (and numeric / localhost lookups,
which never leave the machine) are possible; anything else fails the test. Host names
such as ``pirate.test`` go through an injected resolver that maps them to 127.0.0.1.
"""

from __future__ import annotations

import gzip
import hashlib
import ipaddress
import itertools
import pickle
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import urllib3.util.connection

from tracker.config import Settings
from tracker.crawler import (
    Blocked,
    Crawler,
    CrawlerConfig,
    CrawlError,
    HTTPStatusError,
    InvalidURL,
    NotText,
    Page,
    RobotsDisallowed,
    Timeout,
    TooLarge,
    TooManyRedirects,
    Unreachable,
    cjk_ratio,
    decode_html,
    extract,
    is_public_address,
)
from tracker.rules import MAX_URL_LENGTH, check_url

pytestmark = pytest.mark.timeout(60)

# Our own sentences (simplified, traditional, and GB18030-only characters).
SIMPLIFIED = (
    "清晨的小镇还没有完全醒来，河边的石板路上只有几个早起的老人在散步。"
    "卖豆浆的摊主一边生火，一边和邻居聊着昨天下午突然来的那场大雨。"
    "我们这次出门，是为了找一家据说开了三十年的旧书店。"
)
TRADITIONAL = (
    "清晨的小鎮還沒有完全醒來，河邊的石板路上只有幾個早起的老人在散步。"
    "賣豆漿的攤主一邊生火，一邊和鄰居聊著昨天下午突然來的那場大雨。"
    "我們這次出門，是為了找一家據說開了三十年的舊書店。"
)
# 𠮷 (U+20BB7), 㐀 (U+3400) and 䶮 (U+4DAE) have no GBK code: four-byte GB18030 only.
GB18030_ONLY = "周末我们在𠮷野家吃了一碗牛肉饭，隔壁桌的学生正在讨论㐀和䶮这两个少见的字怎么读。"

TEXTS = {
    "utf-8": ("旧书店", SIMPLIFIED),
    "gbk": ("旧书店", SIMPLIFIED),
    "gb18030": ("牛肉饭", GB18030_ONLY + SIMPLIFIED),
    "big5": ("舊書店", TRADITIONAL),
}
EXPECTED_CODEC = {"utf-8": "utf-8", "gbk": "gb18030", "gb18030": "gb18030", "big5": "big5hkscs"}
# A plausible but wrong label per encoding (templates copied between sites keep them).
WRONG_META = {"utf-8": "gbk", "gbk": "utf-8", "gb18030": "big5", "big5": "gb2312"}


def article(title: str, body: str, meta: str = "") -> str:
    return f"<html><head>{meta}<title>{title}</title></head><body><p>{body}</p></body></html>"


# --------------------------------------------------------------------------- server


@dataclass
class Hit:
    at: float
    host: str
    path: str
    headers: dict[str, str]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so the crawler's pool reuse is exercised
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site = self.server.site
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        site.record(Hit(time.monotonic(), host, self.path, dict(self.headers.items())))
        route = site.find(host, self.path)
        if route is None:
            self.reply(404, b"not found")
        else:
            route(self)

    def reply(
        self,
        status: int = 200,
        body: bytes | str = b"",
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        raw_headers: list[bytes] | None = None,
    ) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        for line in raw_headers or []:
            self._headers_buffer.append(line + b"\r\n")  # type: ignore[attr-defined]
        if not headers or "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Site:
    """Routes keyed by (virtual host or None, path) and the log of arrivals."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str | None, str], Callable[[Handler], None]] = {}
        self.hits: list[Hit] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()  # wakes slow handlers at teardown
        self.port = 0

    def reset(self) -> None:
        with self.lock:
            self.routes.clear()
            self.hits.clear()

    def record(self, hit: Hit) -> None:
        with self.lock:
            self.hits.append(hit)

    def find(self, host: str, path: str) -> Callable[[Handler], None] | None:
        with self.lock:
            return self.routes.get((host, path)) or self.routes.get((None, path))

    def route(self, path: str, host: str | None = None) -> Callable[[Any], Any]:
        def register(fn: Callable[[Handler], None]) -> Callable[[Handler], None]:
            with self.lock:
                self.routes[(host, path)] = fn
            return fn

        return register

    def page(self, path: str, body: bytes | str, content_type: str | None = "text/html", **kw: Any):
        self.route(path, kw.pop("host", None))(lambda h: h.reply(200, body, content_type, **kw))

    def arrivals(self, path: str, host: str | None = None) -> list[Hit]:
        with self.lock:
            return [h for h in self.hits if h.path == path and (host is None or h.host == host)]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Site) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.site = site

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hang up on purpose (size caps, timeouts): not a test failure


@pytest.fixture(scope="module")
def _server() -> Iterator[Site]:
    site = Site()
    server = LocalServer(site)
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture()
def site(_server: Site) -> Iterator[Site]:
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture(autouse=True)
def net(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connect the crawler makes, and a hard stop for anything not loopback."""
    attempts: list[tuple[str, int]] = []
    real_connect = urllib3.util.connection.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def guarded_connect(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        host = address[0].strip("[]")
        ip = ipaddress.ip_address(host)  # a name here means the crawler skipped its own DNS
        attempts.append((str(ip), address[1]))
        assert ip.is_loopback, f"test tried to connect to {address}"
        return real_connect(address, *args, **kwargs)

    def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name != "localhost":
            try:  # numeric forms (2130706433, 0x7f.1) are parsed locally, no traffic
                real_getaddrinfo(name, port, 0, 0, 0, socket.AI_NUMERICHOST)
            except socket.gaierror:
                raise AssertionError(f"test tried a DNS lookup of {name!r}") from None
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    return attempts


@pytest.fixture()
def make_crawler() -> Iterator[Callable[..., Crawler]]:
    made: list[Crawler] = []

    def make(**overrides: Any) -> Crawler:
        values: dict[str, Any] = {
            "connect_timeout": 0.5,
            "read_timeout": 0.5,
            "total_timeout": 5.0,
            "min_interval": 0.0,
            "retries": 2,
            "backoff_factor": 0.01,
            "allow_private": True,  # the test server is on loopback
        }
        values.update(overrides)
        crawler = Crawler(CrawlerConfig(**values))
        made.append(crawler)
        return crawler

    yield make
    for crawler in made:
        crawler.close()


def fake_dns(mapping: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        if host not in mapping:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return mapping[host]

    return resolve


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- charsets


@pytest.mark.parametrize("encoding", ["utf-8", "gbk", "gb18030", "big5"])
@pytest.mark.parametrize("declaration", ["header", "none", "wrong_header", "wrong_meta"])
def test_charsets_through_server(
    site: Site, make_crawler: Callable[..., Crawler], encoding: str, declaration: str
) -> None:
    title, body = TEXTS[encoding]
    meta = ""
    content_type = "text/html"
    if declaration == "header":
        content_type = f"text/html; charset={encoding}"
    elif declaration == "wrong_header":
        content_type = "text/html; charset=ISO-8859-1"  # a server default, wrong here
    elif declaration == "wrong_meta":
        meta = (
            f'<meta http-equiv="Content-Type" content="text/html; charset={WRONG_META[encoding]}">'
        )
    markup = article(title, body, meta)
    path = f"/cs/{encoding}/{declaration}"
    site.page(path, markup.encode(encoding), content_type)

    page = make_crawler().crawl_page(site.url(path))

    assert page.encoding == EXPECTED_CODEC[encoding]
    assert page.html == markup
    assert body[:20] in page.text
    assert page.title == title


@pytest.mark.parametrize("encoding", ["gbk", "gb18030", "big5", "utf-8"])
def test_decode_short_undeclared_page(encoding: str) -> None:
    title, body = TEXTS[encoding]
    markup = f"<html><body><h1>{title}</h1><p>{body[:80]}</p></body></html>"
    assert 100 <= len(markup) <= 220  # a ~200-character page
    text, codec = decode_html(markup.encode(encoding), None)
    assert (text, codec) == (markup, EXPECTED_CODEC[encoding])


def test_decode_very_short_fragments() -> None:
    for sentence, codec, expected in [
        ("我们出门去找旧书店。", "gbk", "gb18030"),
        ("我們出門去找舊書店。", "big5", "big5hkscs"),
    ]:
        assert decode_html(sentence.encode(codec)) == (sentence, expected)


def test_decode_wrong_labels_and_marks() -> None:
    gbk = article("旧书店", SIMPLIFIED).encode("gbk")
    big5 = article("舊書店", TRADITIONAL).encode("big5")
    # meta says utf-8, header says latin-1: both wrong
    assert decode_html(b'<meta charset="utf-8">' + gbk, "text/html; charset=iso-8859-1")[1] == (
        "gb18030"
    )
    # a Big5 page labelled gb2312 (the labels are siblings and decode each other's bytes)
    assert decode_html(big5, "text/html; charset=gb2312")[1] == "big5hkscs"
    # a GBK page labelled big5
    assert decode_html(gbk, "text/html; charset=big5")[1] == "gb18030"
    # XML declaration
    xml = '<?xml version="1.0" encoding="gbk"?><html><body>旧书店</body></html>'
    assert decode_html(xml.encode("gbk")) == (xml, "gb18030")
    # BOM beats a wrong header
    assert decode_html(b"\xef\xbb\xbf" + SIMPLIFIED.encode(), "text/html; charset=gbk") == (
        SIMPLIFIED,
        "utf-8",
    )
    # a genuinely Western page keeps its single-byte label
    western = "<p>Café déjà vu: naïve résumé, señor Müller.</p>"
    assert decode_html(western.encode("cp1252"), "text/html; charset=windows-1252") == (
        western,
        "cp1252",
    )
    assert decode_html(b"", None) == ("", "utf-8")


def test_decode_nearly_clean_pages() -> None:
    # A UTF-8 page cut inside a character, and a GBK page with a stray byte.
    cut = article("旧书店", SIMPLIFIED).encode("utf-8")[:-20] + "书".encode()[:2]
    text, codec = decode_html(cut, None)
    assert codec == "utf-8" and SIMPLIFIED[:30] in text
    stray = SIMPLIFIED.encode("gbk") + b"\xff" + SIMPLIFIED.encode("gbk")
    text, codec = decode_html(stray, "text/html; charset=gbk")
    assert codec == "gb18030" and text.startswith(SIMPLIFIED)


def test_cjk_ratio_separates_right_and_wrong_decodings() -> None:
    big5 = TRADITIONAL.encode("big5")
    assert cjk_ratio(big5.decode("big5")) > 0.4
    assert cjk_ratio(big5.decode("gb18030", errors="replace")) < 0.1
    assert cjk_ratio("plain ascii") == 0.0


# --------------------------------------------------------------------------- redirects


def test_redirect_chain_reports_final_url(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.route("/r/1")(lambda h: h.reply(302, b"", headers={"Location": "/r/2"}))
    site.route("/r/2")(lambda h: h.reply(301, b"", headers={"Location": site.url("/r/3")}))
    # A Location with raw UTF-8 bytes, as Chinese sites send them.
    site.route("/r/3")(
        lambda h: h.reply(307, b"", raw_headers=[b"Location: /\xe6\x96\x87\xe7\xab\xa0?p=1"])
    )
    site.page("/%E6%96%87%E7%AB%A0?p=1", article("终点", SIMPLIFIED).encode(), "text/html")

    crawler = make_crawler()
    result = crawler.fetch(site.url("/r/1"))
    assert result.status == 200
    assert result.final_url == site.url("/%E6%96%87%E7%AB%A0?p=1")
    assert result.redirects == [site.url("/r/1"), site.url("/r/2"), site.url("/r/3")]
    page = crawler.crawl_page(site.url("/r/1"))
    assert page.url == site.url("/r/1")
    assert page.final_url == result.final_url
    assert page.title == "终点"


def test_too_many_redirects(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.route("/loop")(lambda h: h.reply(302, b"", headers={"Location": "/loop"}))
    with pytest.raises(TooManyRedirects) as info:
        make_crawler(max_redirects=3).fetch(site.url("/loop"))
    assert site.url("/loop") in str(info.value)
    assert len(site.arrivals("/loop")) == 4  # the first request plus three redirects


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
    # The URL rule (tracker.rules.check_url) refuses them before any DNS or connection.
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
    """Every URL tracker.rules.check_url refuses, the crawler refuses with its message."""
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


# --------------------------------------------------------------------------- HTTP errors


def test_404_is_not_retried(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    with pytest.raises(HTTPStatusError) as info:
        make_crawler().fetch(site.url("/missing"))
    assert info.value.status == 404
    assert not info.value.transient
    assert site.url("/missing") in str(info.value) and "404" in str(info.value)
    assert len(site.arrivals("/missing")) == 1


def test_500_is_retried_then_raised(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.route("/boom")(lambda h: h.reply(500, b"oops"))
    with pytest.raises(HTTPStatusError) as info:
        make_crawler(retries=2).fetch(site.url("/boom"))
    assert info.value.status == 500 and info.value.transient
    assert len(site.arrivals("/boom")) == 3


def test_retry_after_is_honoured(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    @site.route("/busy")
    def busy(h: Handler) -> None:
        if len(site.arrivals("/busy")) == 1:
            h.reply(503, b"busy", headers={"Retry-After": "1"})
        else:
            h.reply(200, article("好了", SIMPLIFIED).encode(), "text/html")

    assert make_crawler().fetch(site.url("/busy")).status == 200
    first, second = site.arrivals("/busy")
    assert second.at - first.at >= 0.95


def test_retry_after_beyond_cap_gives_up(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.route("/later")(lambda h: h.reply(429, b"", headers={"Retry-After": "120"}))
    with pytest.raises(HTTPStatusError) as info:
        make_crawler(max_retry_after=5).fetch(site.url("/later"))
    assert info.value.status == 429 and info.value.retry_after == 120
    assert len(site.arrivals("/later")) == 1


def test_read_timeout(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    @site.route("/slow")
    def slow(h: Handler) -> None:
        site.stop.wait(6)
        h.reply(200, b"late")

    started = time.monotonic()
    with pytest.raises(Timeout) as info:
        make_crawler(read_timeout=0.3, retries=0).fetch(site.url("/slow"))
    # Far below the server's 6 s: the timeout, not the response, ended the fetch.
    assert time.monotonic() - started < 4
    assert site.url("/slow") in str(info.value)


def test_timeout_is_retried(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    @site.route("/flaky")
    def flaky(h: Handler) -> None:
        if len(site.arrivals("/flaky")) == 1:
            site.stop.wait(1.0)
        h.reply(200, article("终于", SIMPLIFIED).encode(), "text/html")

    assert make_crawler(read_timeout=0.3, retries=1).fetch(site.url("/flaky")).status == 200
    assert len(site.arrivals("/flaky")) == 2


def test_total_deadline_stops_a_slow_drip(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    @site.route("/drip")
    def drip(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", "100")
        h.end_headers()
        for _ in range(100):  # each byte well within the read timeout
            if site.stop.wait(0.1):
                return
            h.wfile.write(b"x")
            h.wfile.flush()

    started = time.monotonic()
    with pytest.raises(Timeout, match="deadline"):
        make_crawler(read_timeout=0.5, total_timeout=0.6, retries=0).fetch(site.url("/drip"))
    # The drip takes 10 s in all: the total deadline, not the read timeout, ended it.
    assert time.monotonic() - started < 6


def test_connection_refused_is_unreachable(make_crawler: Callable[..., Crawler]) -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    with pytest.raises(Unreachable) as info:
        make_crawler(retries=1, respect_robots=False).fetch(url)
    assert info.value.transient and url in str(info.value)


# --------------------------------------------------------------------------- size caps

CAP = 256 * 1024


def _stream(total: int, chunked: bool) -> Callable[[Handler], None]:
    def handler(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Connection", "close")  # no length: the body ends at close
            h.close_connection = True
        h.end_headers()
        block = b"<p>" + b"x" * 16_000 + b"</p>"
        sent = 0
        try:
            while sent < total and not h.server.site.stop.is_set():
                h.wfile.write(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
                sent += len(block)
            if chunked:
                h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the crawler hung up at the cap, as it should

    return handler


def test_too_large_with_content_length(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.page("/big-cl", b"x" * (CAP + 10), "text/html")
    with pytest.raises(TooLarge, match="Content-Length"):
        make_crawler(max_bytes=CAP).fetch(site.url("/big-cl"))


@pytest.mark.parametrize("chunked", [False, True], ids=["close-delimited", "chunked"])
def test_too_large_without_content_length(
    site: Site, make_crawler: Callable[..., Crawler], chunked: bool
) -> None:
    site.route("/big-stream")(_stream(8 * CAP, chunked))
    with pytest.raises(TooLarge):
        make_crawler(max_bytes=CAP).fetch(site.url("/big-stream"))


def test_lying_content_length_reads_only_what_was_declared(
    site: Site, make_crawler: Callable[..., Crawler]
) -> None:
    site.page("/liar", b"a" * 50 + b"b" * (4 * CAP), "text/html", headers={"Content-Length": "50"})
    result = make_crawler(max_bytes=CAP).fetch(site.url("/liar"))
    assert result.body == b"a" * 50


def test_gzip_bomb_is_capped_on_decoded_bytes(
    site: Site, make_crawler: Callable[..., Crawler]
) -> None:
    bomb = gzip.compress(b"\0" * (40 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < CAP  # small on the wire, 40 MiB decoded
    site.page("/bomb", bomb, "text/html", headers={"Content-Encoding": "gzip"})
    with pytest.raises(TooLarge):
        make_crawler(max_bytes=CAP).fetch(site.url("/bomb"))


@pytest.mark.parametrize("encoding", ["gzip", "deflate-zlib", "deflate-raw"])
def test_compressed_pages_are_decoded(
    site: Site, make_crawler: Callable[..., Crawler], encoding: str
) -> None:
    markup = article("旧书店", SIMPLIFIED).encode("gbk")
    if encoding == "gzip":
        data = gzip.compress(markup)
    elif encoding == "deflate-zlib":
        data = zlib.compress(markup)
    else:
        packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        data = packer.compress(markup) + packer.flush()
    header = encoding.split("-")[0]
    site.page("/z", data, "text/html", headers={"Content-Encoding": header})
    page = make_crawler().crawl_page(site.url("/z"))
    assert page.raw == markup
    assert page.encoding == "gb18030" and SIMPLIFIED[:20] in page.text


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


def test_robots_cache_expires(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain", host="ttl.test")
    site.page("/a", article("页", SIMPLIFIED), host="ttl.test")
    crawler = robots_crawler(make_crawler, robots_ttl=0.2)
    crawler.fetch(site.url("/a", "ttl.test"))
    crawler.fetch(site.url("/a", "ttl.test"))
    assert len(site.arrivals("/robots.txt", "ttl.test")) == 1
    time.sleep(0.3)
    crawler.fetch(site.url("/a", "ttl.test"))
    assert len(site.arrivals("/robots.txt", "ttl.test")) == 2


# --------------------------------------------------------------------------- content types


def test_binary_content_is_refused(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 200
    site.page("/img", png, "image/png")
    site.page("/zip", b"PK\x03\x04" + b"\0" * 200, "application/zip")
    site.page("/untyped", png, None)
    site.page("/octet-text", article("文本", SIMPLIFIED).encode(), "application/octet-stream")
    crawler = make_crawler()
    for path in ("/img", "/zip", "/untyped"):
        with pytest.raises(NotText) as info:
            crawler.fetch(site.url(path))
        assert site.url(path) in str(info.value)
    assert crawler.crawl_page(site.url("/octet-text")).title == "文本"


def test_plain_text_page_is_kept_whole(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    novel = "第一章\n\n" + SIMPLIFIED + "\n" + SIMPLIFIED
    site.page("/novel.txt", novel.encode("gbk"), "text/plain")
    page = make_crawler().crawl_page(site.url("/novel.txt"))
    assert page.encoding == "gb18030"
    assert page.text.startswith("第一章\n" + SIMPLIFIED)


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


# --------------------------------------------------------------------------- extraction

ARTICLE = """<!DOCTYPE html><html><head><meta charset="utf-8">
<title>旧书店的下午 - 某某小说网</title></head><body>
<header><nav><a href="/">首页</a> | <a href="/rank">排行榜</a> | <a href="/login">登录注册</a></nav>
</header>
<div class="sidebar"><ul><li><a href="/x">热门推荐一</a></li>
<li><a href="/y">热门推荐二</a></li></ul></div>
<article><h1>旧书店的下午</h1>
<p>{p1}</p>
<p>{p2}</p>
<p>{p3}</p>
</article>
<footer><p>友情链接：某某网站 | 联系我们 | 版权所有 2024 某某小说网 京ICP备00000000号</p></footer>
</body></html>"""

P1 = "书店在一条窄巷的尽头，门口挂着一块褪了色的木牌，上面的字已经看不太清楚。" * 2
P2 = "店主是个头发花白的老人，他说这些书大多是附近人家搬走时留下的，每一本都有自己的故事。" * 2
P3 = "我在角落里找到一本旧诗集，扉页上写着一行小字，日期是四十多年前的一个春天。" * 2


def test_extract_article_drops_boilerplate() -> None:
    title, text = extract(ARTICLE.format(p1=P1, p2=P2, p3=P3), "http://novel.test/a/1")
    assert "旧书店的下午" in title
    for paragraph in (P1, P2, P3):
        assert paragraph[:30] in text
    for boilerplate in ("排行榜", "登录注册", "友情链接", "京ICP备", "热门推荐"):
        assert boilerplate not in text


@pytest.mark.parametrize(
    "markup",
    [
        "<p>只有一点内容，没有闭合",
        "<html><body><div><p>未闭合的段落<div>另一段<span>嵌套</p></body>",
        "<<<>>> 奇怪的 <b 内容",
        '<?xml version="1.0" encoding="gbk"?><html><body><p>带声明的页面</p></body></html>',
        "<html><head><title>只有标题</title></head><body></body></html>",
        "\x00\x01\x02<p>控制字符</p>",
        "<div>" * 3000 + "深层嵌套" + "</div>" * 10,
        "<html><title>没闭合的标题<body><p>正文被吞掉了",
        "",
        "   ",
    ],
    ids=lambda markup: f"{len(markup)}:{markup[:24]!r}",
)
def test_extract_survives_malformed_html(markup: str) -> None:
    title, text = extract(markup, "http://novel.test/bad")
    assert isinstance(title, str) and isinstance(text, str)
    words = (
        "只有一点内容",
        "未闭合的段落",
        "奇怪的",
        "带声明的页面",
        "控制字符",
        "深层嵌套",
        "正文被吞掉了",
    )
    for word in words:
        if word in markup:
            assert word in text
    if "只有标题" in markup:
        assert title == "只有标题"


def test_malformed_page_through_crawler(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.page(
        "/bad", "<title>坏页面</title><p>正文还在，<div>只是<b>标签乱了</p></i>".encode("gbk")
    )
    page = make_crawler().crawl_page(site.url("/bad"))
    assert "正文还在" in page.text and page.encoding == "gb18030"


# --------------------------------------------------------------------------- records


def test_page_to_suspect() -> None:
    page = Page(
        url="http://Pirate.TEST/a",
        final_url="http://Pirate.TEST/b?x=1",
        status=200,
        headers={"content-type": "text/html; charset=gbk"},
        encoding="gb18030",
        raw=b"raw bytes",
        html="<p>x</p>",
        title="标题",
        text="正文",
        fetched_at=datetime.now(UTC),
    )
    suspect = page.to_suspect()
    assert suspect.id == hashlib.sha1(b"http://Pirate.TEST/b?x=1").hexdigest()
    assert suspect.domain == "pirate.test"
    assert suspect.source == "crawl"
    assert suspect.raw == b"raw bytes"
    assert (suspect.title, suspect.text, suspect.url) == ("标题", "正文", page.final_url)
    assert suspect.metadata["encoding"] == "gb18030"
    assert suspect.metadata["final_url"] == page.final_url
    assert suspect.metadata["status"] == 200
    assert suspect.fetched_at == page.fetched_at
    assert page.to_suspect(id="s-1").id == "s-1"


def test_errors_pickle_for_celery() -> None:
    for err in (
        HTTPStatusError("http://x.test/", "HTTP 503 Service Unavailable", 503, retry_after=7.0),
        Blocked("http://10.0.0.1/", "x resolves to non-public address 10.0.0.1"),
        Unreachable("http://x.test/", "TLS error", transient=False),
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert (back.url, back.status, back.retry_after, back.transient) == (
            err.url,
            err.status,
            err.retry_after,
            err.transient,
        )
        assert isinstance(back, CrawlError)


def test_config_from_settings() -> None:
    assert CrawlerConfig.from_settings(Settings()).allow_private is False
    cfg = CrawlerConfig.from_settings(Settings(allow_private_urls=True), max_redirects=2)
    assert cfg.allow_private is True and cfg.max_redirects == 2
    defaults = CrawlerConfig()
    assert defaults.max_bytes == 5 * 1024 * 1024 and defaults.max_redirects == 5
    assert defaults.user_agent == "YinjiBot/0.1 (+copyright tracking)"
    assert defaults.min_interval == 1.0 and defaults.retries == 2


# --------------------------------------------------------------------------- https


@pytest.fixture()
def tls_site(tmp_path: Path) -> Iterator[tuple[Site, str, list[str]]]:
    """An HTTPS server with a self-signed certificate for yinji.test; records SNI."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "yinji.test")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("yinji.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file = tmp_path / "cert.pem"
    key_file = tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    sni: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda sock, server_name, ctx: sni.append(server_name) and None

    tls = Site()
    server = LocalServer(tls)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    tls.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tls, str(cert_file), sni
    finally:
        tls.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_https_sends_sni_and_host_while_connecting_to_ip(
    tls_site: tuple[Site, str, list[str]],
    make_crawler: Callable[..., Crawler],
    net: list[tuple[str, int]],
) -> None:
    tls, cert_file, sni = tls_site
    tls.page("/secure", article("加密", SIMPLIFIED))
    crawler = make_crawler(
        ca_certs=cert_file,
        respect_robots=False,
        resolver=fake_dns({"yinji.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}),
    )
    page = crawler.crawl_page(f"https://yinji.test:{tls.port}/secure")
    assert page.title == "加密"
    assert "yinji.test" in sni
    assert tls.arrivals("/secure")[0].headers["Host"] == f"yinji.test:{tls.port}"
    assert set(net) == {("127.0.0.1", tls.port)}
    # Same IP, another name: the certificate does not match and TLS refuses.
    with pytest.raises(Unreachable, match="TLS") as info:
        crawler.fetch(f"https://other.test:{tls.port}/secure")
    assert not info.value.transient
