"""A crawled page rendered by headless Chromium: its HTML after the page's own scripts ran.

Used for Legado sources whose URL options say ``"webView": true`` (the page is written by
its own JavaScript). The page itself is fetched by the crawler like every other page
(SSRF guard, robots.txt, the per-host rate, size limits); the browser is then handed
those bytes and runs the page's scripts under the same rules as a screenshot
(``screenshot.guarded_tab``): every request the scripts make goes through the crawler's
guarded fetcher (an address the guard refuses is never reached), GET only, no
navigation away, no name resolution of the browser's own, WebRTC and WebSockets
refused, at most ``screenshot_max_requests`` requests. A time limit
(``YINJI_SCREENSHOT_TIMEOUT``, browser start included) bounds the whole rendering; the
HTML is taken as it stands when the page has loaded and its requests are done; a page
whose script never yields has its browser killed shortly after the limit (an error
naming the limit). One page is rendered at a time per process (a browser is large).

``unavailable`` says why a page cannot be rendered here (no Playwright, no Chromium).
"""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.crawler.config import CrawlerConfig
from tracker.crawler.errors import CrawlError
from tracker.crawler.screenshot import LOAD_WAIT, Screenshot, find_browser, guarded_tab

if TYPE_CHECKING:
    from tracker.crawler.results import Page

__all__ = ["BrowserMissing", "Rendered", "render", "unavailable"]

log = logging.getLogger(__name__)

MISSING = "Chromium/Playwright not installed"
SETTLE_WAIT = 5.0  # seconds at most for the page's own requests after the load event
_one_at_a_time = threading.Lock()


class BrowserMissing(CrawlError):
    """No headless browser on this machine (the message says what to install)."""


@dataclass
class Rendered:
    """The page's HTML once rendered, and what its scripts fetched or were refused."""

    html: str
    fetched: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)


def _playwright_build() -> bool:
    """Whether Playwright's own Chromium build is installed (``playwright install``)."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path.home() / ".cache/ms-playwright")
    return bool(glob.glob(os.path.join(root, "chromium*-*")))


def unavailable(config: CrawlerConfig) -> str | None:
    """Why no page can be rendered here, or None when a browser can be started.
    The reason starts with ``Chromium/Playwright not installed`` and names the part."""
    if importlib.util.find_spec("playwright") is None:
        return f"{MISSING} (no Playwright: pip install playwright)"
    if config.browser_path and not Path(config.browser_path).is_file():
        return f"{MISSING} (no browser at YINJI_CHROMIUM={config.browser_path})"
    if find_browser(config) is None and (config.browser_path or not _playwright_build()):
        return f"{MISSING} (no Chromium: apt-get install chromium, or set YINJI_CHROMIUM)"
    return None


def render(page: Page, config: CrawlerConfig) -> Rendered:
    """``page`` (as the crawler fetched it) rendered by headless Chromium: its HTML after
    its own scripts ran (see the module docstring). ``BrowserMissing`` when there is no
    browser; ``CrawlError`` naming the page when rendering fails."""
    why = unavailable(config)
    if why is not None:
        raise BrowserMissing(page.final_url or page.url, f"needs a browser (webView): {why}")
    url = page.final_url or page.url
    with _one_at_a_time:
        started = time.monotonic()
        try:
            return _render(page, config)
        except CrawlError:
            raise
        except Exception as exc:
            if time.monotonic() - started >= config.screenshot_timeout:
                raise CrawlError(
                    url,
                    "the browser did not finish within its time limit of "
                    f"{config.screenshot_timeout:g} s (YINJI_SCREENSHOT_TIMEOUT)",
                ) from None
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise CrawlError(
                url, f"the browser could not render it: {type(exc).__name__}: {text[:200]}"
            ) from None


def _render(page: Page, config: CrawlerConfig) -> Rendered:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    seen = Screenshot()
    with guarded_tab(config, page, seen) as (tab, left):
        try:
            tab.wait_for_load_state("load", timeout=max(1000.0, min(LOAD_WAIT, left()) * 1000))
        except PlaywrightTimeout:
            log.info("webView %s: the page did not finish loading", page.final_url)
        # The page's own requests (a script asking its API for the results), then the DOM.
        try:
            wait = min(SETTLE_WAIT, max(0.0, left() - 1.0))
            tab.wait_for_load_state("networkidle", timeout=max(500.0, wait * 1000))
        except PlaywrightTimeout:
            log.info("webView %s: the page's requests did not settle", page.final_url)
        html = str(tab.content())
    return Rendered(html, seen.fetched, seen.blocked)
