"""Issue #25: the screenshot browser sends nothing a crawled page asks for outside the
guarded fetcher: a page's RTCPeerConnection with a STUN server on 127.0.0.1 makes the
capture browser send no UDP (a local UDP socket receives nothing), while the same
Chromium without Yinji's settings does send it (so the test can fail)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import pytest

from tracker.crawler import Crawler, CrawlerConfig
from tracker.crawler.screenshot import Screenshotter, find_browser

from .helpers import Site
from .test_screenshot import _browser_or_skip


def _stun_page(port: int) -> str:
    return (
        "<html><head><meta charset='utf-8'><title>webrtc</title></head><body>"
        "<p>清晨的小镇还没有完全醒来</p><script>"
        "try {"
        f"  const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{port}'}}]}});"
        "  pc.createDataChannel('x');"
        "  pc.createOffer().then(o => pc.setLocalDescription(o));"
        "  document.title = 'webrtc-started';"
        "} catch (e) { document.title = 'webrtc-refused: ' + e; }"
        "</script></body></html>"
    )


@pytest.fixture()
def udp() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    try:
        yield sock
    finally:
        sock.close()


def _received(sock: socket.socket, seconds: float, *, first: bool = False) -> list[bytes]:
    """What arrives within ``seconds`` (``first``: stop at the first packet)."""
    got: list[bytes] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (first and got):
        try:
            got.append(sock.recv(2048))
        except TimeoutError:
            continue
    return got


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_crawled_page_cannot_send_webrtc_udp(
    site: Site, make_crawler: Callable[..., Crawler], udp: socket.socket
) -> None:
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    port = udp.getsockname()[1]
    html = _stun_page(port)

    # Control: the same Chromium, launched plainly, sends a STUN binding request.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=find_browser(CrawlerConfig()), args=["--no-sandbox"]
        )
        try:
            tab = browser.new_page()
            tab.set_content(html)
            assert tab.title() == "webrtc-started"
            control = _received(udp, 60.0, first=True)  # 8 s could pass on a loaded machine
        finally:
            browser.close()
    assert control, "plain Chromium sent no STUN packet: this test could not fail"

    # The capture browser: the page is crawled and photographed; no UDP leaves it.
    site.page("/stun.html", html, "text/html; charset=utf-8")
    crawler = make_crawler(screenshots="auto", screenshot_timeout=60.0, respect_robots=False)
    page = crawler.crawl_page(site.url("/stun.html"))
    assert page.screenshot is not None, page.screenshot_none_reason
    shot = Screenshotter(crawler.config).take(page)  # a second render, to be sure
    assert shot.png is not None
    assert _received(udp, 4.0) == []
