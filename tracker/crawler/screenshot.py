"""A full-page PNG of a crawled page, rendered by headless Chromium through Playwright.

The screenshot shows the bytes the capture recorded, and the browser reaches nothing the
SSRF guard would refuse:

- The main document is not fetched again: the browser is handed the page's status,
  headers and body exactly as the crawler received them, at the final URL the guard
  allowed. A later navigation of the page (a script, a meta refresh) is cancelled,
  so the browser stays on the captured page.
- Every subresource (stylesheet, image, script, frame) goes through the crawler's own
  guarded fetcher (``tracker.crawler.fetch``): the URL rule, DNS resolved once and
  refused when any address is non-public (unless ``allow_private`` /
  ``YINJI_ALLOW_PRIVATE_URLS=1`` or ``allow_address``), the connection to the validated
  IP, size caps. Other methods than GET, other schemes and WebSockets are refused, and
  Chromium's own DNS resolver is switched off (``--host-resolver-rules``), so nothing
  can slip past the interception.
- A budget: ``screenshot_timeout`` for everything (browser start included) and at most
  ``screenshot_max_requests`` subresources; one screenshot at a time per crawler. A
  page whose script never yields would hold Playwright's calls for ever: the browser is
  killed ``KILL_GRACE`` seconds past the budget (``_Watchdog``).

Without Playwright or Chromium (or when anything fails) there is no PNG and a reason
(``"no screenshot: ..."``); the crawl itself never fails because of a screenshot.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tracker.crawler.config import CrawlerConfig
from tracker.crawler.errors import Blocked, CrawlError, InvalidURL

if TYPE_CHECKING:
    from playwright.sync_api import Page as Tab

    from tracker.crawler.results import Page

log = logging.getLogger(__name__)

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # The browser resolves no name itself: every request is answered by our handler.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # WebRTC (issue #25): a crawled page's RTCPeerConnection would send STUN/TURN over
    # UDP to any address it names, past the route handler. No proxy is configured, so
    # "disable_non_proxied_udp" means no UDP at all; the init script below also removes
    # the API, and WebTransport (QUIC) is off with --disable-quic.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--enforce-webrtc-ip-permission-check",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
)
# Run in every frame before the page's own scripts: the APIs that open connections the
# route handler cannot see (peer-to-peer UDP, QUIC) are gone.
NO_WEBRTC_SCRIPT = """
(() => {
  for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel",
                      "RTCIceCandidate", "RTCSessionDescription", "WebTransport"]) {
    try { Object.defineProperty(globalThis, name, {value: undefined, configurable: false}); }
    catch (e) {}
  }
})();
"""
VIEWPORT = {"width": 1280, "height": 900}
LOAD_WAIT = 10.0  # seconds at most for the load event after the document arrived
MAX_HEIGHT = 16000  # pixels; Chromium cannot paint a taller full-page image in one piece
# Response headers not handed to the browser: the body is already decoded and whole.
_DROP_HEADERS = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)


@dataclass
class Screenshot:
    """The outcome: ``png`` or a ``reason`` there is none; what the page asked for."""

    png: bytes | None = None
    reason: str | None = None
    fetched: list[str] = field(default_factory=list)  # subresources fetched through the guard
    blocked: list[str] = field(default_factory=list)  # refused: "<url> (<why>)"


def find_browser(config: CrawlerConfig) -> str | None:
    """The Chromium executable to use, or None (then Playwright's own build is tried)."""
    if config.browser_path:
        return config.browser_path if Path(config.browser_path).is_file() else None
    for name in CHROMIUM_CANDIDATES:
        found = name if Path(name).is_file() else shutil.which(name)
        if found:
            return found
    return None


def unavailable(config: CrawlerConfig) -> str | None:
    """Why no screenshot can be taken here (None when one can be tried)."""
    if config.screenshots == "off":
        return "no screenshot: screenshots are off (YINJI_SCREENSHOTS=off)"
    if importlib.util.find_spec("playwright") is None:
        return "no screenshot: Playwright is not installed on this worker"
    if config.browser_path and not Path(config.browser_path).is_file():
        return f"no screenshot: no browser at {config.browser_path}"
    return None


def _headers(pairs: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        key = str(name).lower()
        if key in _DROP_HEADERS:
            continue
        out[key] = f"{out[key]}\n{value}" if key == "set-cookie" and key in out else str(value)
    return out


class Screenshotter:
    """Takes screenshots for one ``Crawler`` (one at a time)."""

    def __init__(self, config: CrawlerConfig) -> None:
        self.config = config
        self._lock = threading.Lock()

    def take(self, page: Page) -> Screenshot:
        """A full-page PNG of ``page`` (never raises)."""
        reason = unavailable(self.config)
        if reason is not None:
            return Screenshot(reason=reason)
        with self._lock:
            try:
                return self._take(page)
            except Exception as exc:  # a screenshot never fails the crawl
                log.warning("screenshot of %s failed: %s", page.final_url, exc)
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                return Screenshot(reason=f"no screenshot: {type(exc).__name__}: {text[:200]}")

    def _take(self, page: Page) -> Screenshot:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        result = Screenshot()
        with guarded_tab(self.config, page, result) as (tab, left):
            final_url = page.final_url or page.url
            # Then the load event, for at most LOAD_WAIT s (a third of what is left): a
            # page that never finishes loading (a hung image, a script navigating
            # away during the load) is still photographed as it is rendered by then.
            wait = min(LOAD_WAIT, left() / 3)
            try:
                tab.wait_for_load_state("load", timeout=max(1000.0, wait * 1000))
            except PlaywrightTimeout:
                log.info("screenshot of %s: the page did not finish loading", final_url)
            height = int(tab.evaluate("document.documentElement.scrollHeight") or 0)
            clip = None
            if height > MAX_HEIGHT:
                clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": MAX_HEIGHT}
            result.png = tab.screenshot(
                full_page=True,
                type="png",
                clip=clip,  # type: ignore[arg-type]
                animations="disabled",
                timeout=max(1000.0, left() * 1000),
            )
        return result


KILL_GRACE = 5.0  # seconds past the budget before a hung browser is killed


class _Watchdog:
    """Kills the browser started with ``profile`` when it outlives ``seconds``.

    Playwright's calls into the page (reading the DOM, a screenshot) have no time limit
    of their own, and a page's script that never yields (``while (true) {}``) would hold
    them for ever. The browser's processes are the ones whose command line names this
    run's own, fresh profile folder; killing them makes the pending call fail at once.
    Linux (``/proc``); elsewhere nothing is killed."""

    def __init__(self, profile: str, seconds: float) -> None:
        self.marker = f"--user-data-dir={profile}"
        self.timer = threading.Timer(seconds, self.kill)
        self.timer.daemon = True
        self.killed = 0

    def kill(self) -> None:
        import os
        import signal

        proc = Path("/proc")
        if not proc.is_dir():
            return
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(arg.decode(errors="replace") == self.marker for arg in cmdline):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                    self.killed += 1
                except OSError:
                    pass
        if self.killed:
            log.warning("browser killed after its time limit (%s processes)", self.killed)

    def __enter__(self) -> _Watchdog:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()


@contextmanager
def guarded_tab(
    cfg: CrawlerConfig, page: Page, result: Screenshot, budget: float | None = None
) -> Iterator[tuple[Tab, Callable[[], float]]]:
    """A headless Chromium tab showing ``page`` as captured (the module docstring: the
    document from the capture, every subresource through the guarded fetcher, no
    navigation away, no name resolution, WebRTC and WebSockets refused), and a function
    giving the seconds left of ``budget`` (``cfg.screenshot_timeout`` by default, browser
    start included). ``result`` collects what was fetched and refused. The browser is
    closed when the block ends."""
    from playwright.sync_api import sync_playwright

    from tracker.crawler.fetch import Fetcher
    from tracker.crawler.ratelimit import Deadline, HostRateLimiter

    started = time.monotonic()
    total = cfg.screenshot_timeout if budget is None else budget

    def left() -> float:
        return total - (time.monotonic() - started)

    # Subresources: the guarded fetcher, no retries, no robots.txt (a browser loads
    # a page's images whatever robots.txt says of them), no pacing between them.
    sub_config = replace(cfg, retries=0, respect_robots=False, min_interval=0.0)
    fetcher = Fetcher(sub_config, HostRateLimiter(0.0))
    final_url = page.final_url or page.url
    state = {"document_served": False, "requests": 0}

    def handle(route: Any, request: Any) -> None:
        url = request.url
        main_frame = request.frame.parent_frame is None if request.frame else False
        if request.is_navigation_request() and main_frame:
            if state["document_served"]:
                # ERR_ABORTED: the browser stays on the captured page (another error
                # would replace it with an error page).
                result.blocked.append(f"{url} (navigation away from the captured page)")
                route.abort("aborted")
                return
            state["document_served"] = True
            route.fulfill(
                status=page.status,
                headers=_headers(page.header_pairs or page.headers.items()),
                body=page.raw,
            )
            return
        scheme = urlsplit(url).scheme.lower()
        if request.method != "GET" or scheme not in ("http", "https"):
            result.blocked.append(f"{url} ({request.method} {scheme}: not fetched)")
            route.abort("blockedbyclient")
            return
        state["requests"] += 1
        if state["requests"] > cfg.screenshot_max_requests or left() < 1.0:
            result.blocked.append(f"{url} (screenshot budget spent)")
            route.abort("blockedbyclient")
            return
        try:
            _, response, _ = fetcher.fetch(
                url,
                Deadline(max(0.5, min(cfg.total_timeout, left() - 0.5))),
                robots=None,
                text_only=False,
                max_bytes=cfg.max_bytes,
                truncate=False,
            )
        except (Blocked, InvalidURL) as exc:
            result.blocked.append(f"{url} ({exc.reason})")
            route.abort("blockedbyclient")
            return
        except CrawlError as exc:
            result.blocked.append(f"{url} ({exc.reason})")
            route.abort("failed")
            return
        result.fetched.append(url)
        route.fulfill(
            status=response.status,
            headers=_headers(response.header_pairs or response.headers.items()),
            body=response.body,
        )

    def refuse_socket(ws: Any) -> None:
        result.blocked.append(f"{ws.url} (WebSocket)")
        ws.close()

    try:
        with (
            tempfile.TemporaryDirectory(prefix="yinji-browser-") as profile,
            _Watchdog(profile, total + KILL_GRACE),
            sync_playwright() as pw,
        ):
            context = pw.chromium.launch_persistent_context(
                profile,  # a new, empty profile each time
                executable_path=find_browser(cfg),
                headless=True,
                args=list(CHROMIUM_ARGS),
                viewport=VIEWPORT,  # type: ignore[arg-type]
                user_agent=cfg.user_agent,
                locale="zh-CN",
                service_workers="block",
                accept_downloads=False,
                timeout=max(1000.0, left() * 1000),
            )
            try:
                context.add_init_script(NO_WEBRTC_SCRIPT)
                context.route("**/*", handle)
                context.route_web_socket("**/*", refuse_socket)
                tab = context.new_page()
                tab.goto(final_url, wait_until="commit", timeout=max(1000.0, left() * 1000))
                yield tab, left
            finally:
                context.close()
    finally:
        fetcher.close()
