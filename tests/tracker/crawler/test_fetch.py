"""Fetching (tracker.crawler.fetch): redirects, HTTP errors and retries, size caps,
content types, https.

No network: see conftest.py.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable

import pytest

from tracker.crawler import (
    Crawler,
    HTTPStatusError,
    NotText,
    Timeout,
    TooLarge,
    TooManyRedirects,
    Unreachable,
)

from .helpers import SIMPLIFIED, Handler, Site, article, closed_port, fake_dns

pytestmark = pytest.mark.timeout(60)


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
        site.stop.wait(30)
        h.reply(200, b"late")

    started = time.monotonic()
    with pytest.raises(Timeout) as info:
        make_crawler(read_timeout=0.3, retries=0).fetch(site.url("/slow"))
    # Far below the server's 30 s: the timeout, not the response, ended the fetch.
    assert time.monotonic() - started < 15
    assert site.url("/slow") in str(info.value)


def test_timeout_is_retried(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    retried = threading.Event()

    @site.route("/flaky")
    def flaky(h: Handler) -> None:
        if len(site.arrivals("/flaky")) == 1:
            # Silent until the crawler gave up on it and asked again (or 30 s).
            retried.wait(30)
        else:
            retried.set()
        h.reply(200, article("终于", SIMPLIFIED).encode(), "text/html")

    # The timeout long enough for the second answer on a loaded machine
    assert make_crawler(read_timeout=2.0, retries=1).fetch(site.url("/flaky")).status == 200
    assert len(site.arrivals("/flaky")) == 2


def test_total_deadline_stops_a_slow_drip(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    @site.route("/drip")
    def drip(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", "300")
        h.end_headers()
        for _ in range(300):  # each byte well within the read timeout
            if site.stop.wait(0.1):
                return
            h.wfile.write(b"x")
            h.wfile.flush()

    started = time.monotonic()
    with pytest.raises(Timeout, match="deadline"):
        make_crawler(read_timeout=5.0, total_timeout=1.0, retries=0).fetch(site.url("/drip"))
    # The drip takes 30 s in all: the total deadline, not the read timeout, ended it.
    assert time.monotonic() - started < 15


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


# --------------------------------------------------------------------------- https


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
