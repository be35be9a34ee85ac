"""Screenshots of crawled pages (tracker.crawler.screenshot) and their settings.

The browser tests are slow (a Chromium start each) and skip when Playwright or Chromium
is missing. No network: the page's subresources go through the crawler's guarded
fetcher, and Chromium's own resolver is off.
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from tracker.crawler import Crawler, CrawlerConfig
from tracker.crawler.screenshot import Screenshotter, find_browser
from tracker.evidence import FileBlobStore
from tracker.plumbing.config import SettingError, Settings

from .helpers import Site, fake_dns

PAGE = (
    "<html><head><meta charset='utf-8'><title>截图</title></head>"
    "<body style='margin:0;background:#fff'>"
    "<div style='width:600px;height:2400px;background:#0000ff'>清晨的小镇还没有完全醒来</div>"
    "<img src='/pic.svg'>"
    "<img src='http://intranet.test/secret.png'>"  # resolves to a private address
    "<script>fetch('http://10.1.2.3/x').catch(() => {});"
    "addEventListener('load', () => { location.href = 'http://elsewhere.test/'; });</script>"
    "</body></html>"
)
SVG = (
    "<svg xmlns='http://www.w3.org/2000/svg' width='300' height='200'>"
    "<rect width='300' height='200' fill='#ff0000'/></svg>"
)


def _browser_or_skip() -> None:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("Playwright is not installed")
    if find_browser(CrawlerConfig()) is None:
        pytest.skip("no Chromium on this machine")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_screenshot_of_a_local_page_respects_the_guard(
    site: Site, make_crawler: Callable[..., Crawler], tmp_path: Path
) -> None:
    _browser_or_skip()
    from PIL import Image

    site.page("/page", PAGE, "text/html; charset=utf-8")
    site.page("/pic.svg", SVG, "image/svg+xml")
    crawler = make_crawler(
        screenshots="auto",
        screenshot_timeout=90.0,
        respect_robots=False,
        allow_private=False,  # only the test server itself is allowed
        allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port == site.port,
        resolver=fake_dns({"pirate.test": ["127.0.0.1"], "intranet.test": ["10.0.0.5"]}),
    )
    page = crawler.crawl_page(site.url("/page", host="pirate.test"))
    assert page.screenshot is not None, page.screenshot_none_reason
    assert page.screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    # The page stayed (its script tried to navigate away after loading).
    image = Image.open(io.BytesIO(page.screenshot)).convert("RGB")
    assert image.width >= 1000 and image.height >= 2400  # the full page, not the viewport
    assert image.getpixel((300, 1500)) == (0, 0, 255)  # the blue block far below the fold
    # The page was fetched once, by the crawler; the browser got the captured bytes.
    assert len(site.arrivals("/page")) == 1
    assert len(site.arrivals("/pic.svg")) == 1  # the subresource, through the guard

    shot = Screenshotter(crawler.config).take(page)  # again, to see what was refused
    assert shot.png is not None
    blocked = " ".join(shot.blocked)
    assert "intranet.test" in blocked and "non-public" in blocked
    assert "10.1.2.3" in blocked
    assert site.url("/pic.svg", host="pirate.test") in shot.fetched

    capture = page.to_capture(FileBlobStore(tmp_path))
    assert capture.screenshot is not None and capture.screenshot_none_reason is None
    assert capture.screenshot.media_type == "image/png"


def test_without_a_browser_the_capture_says_why(
    site: Site, make_crawler: Callable[..., Crawler], tmp_path: Path
) -> None:
    site.page("/plain", "<html><body><p>清晨的小镇</p></body></html>", "text/html")
    crawler = make_crawler(screenshots="auto", browser_path=str(tmp_path / "no-chromium"))
    page = crawler.crawl_page(site.url("/plain"))
    assert page.screenshot is None
    assert page.screenshot_none_reason == f"no screenshot: no browser at {tmp_path}/no-chromium"
    capture = page.to_capture(FileBlobStore(tmp_path / "blobs"))
    assert capture.screenshot is None
    assert capture.screenshot_none_reason == page.screenshot_none_reason

    off = make_crawler().crawl_page(site.url("/plain"))
    assert off.screenshot is None and "screenshots are off" in (off.screenshot_none_reason or "")
    skipped = make_crawler(screenshots="auto").crawl_page(site.url("/plain"), screenshot=False)
    assert skipped.screenshot_none_reason == "no screenshot: not asked for this page"
    # "on" means screenshots are required: a crawler without a browser refuses to start.
    with pytest.raises(SettingError, match="YINJI_SCREENSHOTS=on"):
        Crawler(CrawlerConfig(screenshots="on", browser_path=str(tmp_path / "no-chromium")))


def test_screenshot_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    monkeypatch.delenv("YINJI_SCREENSHOTS", raising=False)
    assert CrawlerConfig.from_settings(settings).screenshots == "auto"  # when a browser is there
    monkeypatch.setenv("YINJI_SCREENSHOTS", "Off")
    assert CrawlerConfig.from_settings(settings).screenshots == "off"
    monkeypatch.setenv("YINJI_SCREENSHOTS", "AUTO")
    monkeypatch.setenv("YINJI_SCREENSHOT_TIMEOUT", "12.5")
    monkeypatch.setenv("YINJI_CHROMIUM", "/opt/chromium/chrome")
    config = CrawlerConfig.from_settings(settings)
    assert config.screenshots == "auto" and config.screenshot_timeout == 12.5
    assert config.browser_path == "/opt/chromium/chrome"
    monkeypatch.setenv("YINJI_SCREENSHOTS", "sometimes")
    with pytest.raises(SettingError, match=r"YINJI_SCREENSHOTS.*'sometimes'"):
        CrawlerConfig.from_settings(settings)
    monkeypatch.setenv("YINJI_SCREENSHOTS", "on")
    monkeypatch.setenv("YINJI_SCREENSHOT_TIMEOUT", "0")
    with pytest.raises(SettingError, match="YINJI_SCREENSHOT_TIMEOUT"):
        CrawlerConfig.from_settings(settings)
    with pytest.raises(ValueError, match="screenshots must be one of"):
        CrawlerConfig(screenshots="always")
