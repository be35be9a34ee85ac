"""Legado ``webView`` sources read through headless Chromium (issue #38): a local site whose
search results and chapter text are written into the page by the page's own JavaScript
(asking the site's API), a source saying ``"webView": true``; with Debian's chromium the
source is imported and discovery finds the planted chapter, every request of the page's
scripts going through the SSRF guard (a request to another local port is refused and
never reaches it); with the browser path pointing to nothing the import line says
the source needs a browser and what to install, and discovery spends nothing on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from discokit import env_for
from legadokit import _Server
from textgen import work

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.legado.importer import import_path
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.discovery.sites import SiteRegistry
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

CHROMIUM = "/usr/bin/chromium"
TITLE, AUTHOR = "夜航船记", "沈舟"
CHAPTER = "".join(s + "。" for s in work(77, 40).split("。") if s)[:900]


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium (as tests/e2e/test_browser.py gets it): installed with apt when
    missing and we are root; the test is skipped only when none can be found."""
    pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists() and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], env=env, check=False, timeout=1200
        )
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed and could not be installed with apt-get")
    return CHROMIUM


class Internal(_Server):
    """A service the crawler must never reach (another port than the site's)."""

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        return 200, "text/plain", b"secret"


class ScriptSite(_Server):
    """Search results and chapter text are not in the HTML the server sends: the page's
    own script asks the site's JSON API and writes them in."""

    def __init__(self, internal_url: str) -> None:
        super().__init__()
        self.internal_url = internal_url

    def _page(self, script: str, body: str) -> tuple[int, str, bytes]:
        html = (
            "<!doctype html><html><head><meta charset='utf-8'><title>夜读</title></head>"
            f"<body>{body}<script>{script}</script></body></html>"
        )
        return 200, "text/html; charset=utf-8", html.encode()

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        url = urlsplit(path)
        query = parse_qs(url.query)
        if url.path == "/search":
            script = (
                f"fetch({json.dumps(self.internal_url)}).catch(() => null);"
                "fetch('/api/search' + location.search).then(r => r.json()).then(list => {"
                "  document.getElementById('results').innerHTML = list.map(b =>"
                '    `<li class="book"><a href="${b.url}">${b.name}</a>'
                "     <span class=\"author\">${b.author}</span></li>`).join('');"
                "});"
            )
            return self._page(script, "<ul id='results'></ul>")
        if url.path == "/api/search":
            words = query.get("q", [""])[0]
            found = [{"name": TITLE, "author": AUTHOR, "url": "/book/7/"}] if words in TITLE else []
            return 200, "application/json", json.dumps(found, ensure_ascii=False).encode()
        if url.path == "/book/7/":
            links = "".join(f"<dd><a href='/book/7/{i}.html'>第{i}章</a></dd>" for i in (1,))
            return self._page("", f"<h1>{TITLE}</h1><dl id='list'>{links}</dl>")
        if url.path == "/book/7/1.html":
            script = (
                "fetch('/api/chapter?id=1').then(r => r.json()).then(c => {"
                "  document.getElementById('content').textContent = c.text; });"
            )
            return self._page(script, "<h1>第1章</h1><div id='content'>加载中……</div>")
        if url.path == "/api/chapter":
            return 200, "application/json", json.dumps({"text": CHAPTER}).encode()
        return 404, "text/plain", b"not found"


def webview_source(base: str) -> dict[str, Any]:
    return {
        "bookSourceName": "要浏览器的站",
        "bookSourceUrl": base,
        "bookSourceType": 0,
        "searchUrl": '/search?q={{key}},{"webView": true}',
        "ruleSearch": {
            "bookList": "#results .book",
            "name": "a@text",
            "author": ".author@text",
            "bookUrl": "a@href",
        },
        "ruleToc": {
            "chapterList": "#list dd a",
            "chapterName": "text",
            "chapterUrl": 'href##$##,{"webView":true}',
        },
        "ruleContent": {"content": "#content@text"},
    }


def _doc() -> Document:
    return Document(
        id="w-0001",
        title=f"《{TITLE}》第1章",
        text=CHAPTER,
        metadata={"book_id": "w", "book_title": TITLE, "author": AUTHOR, "chapter_index": 1},
    )


def _crawler(ports: set[int], browser: str) -> Crawler:
    return Crawler(
        CrawlerConfig(
            allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port in ports,
            min_interval=0.0,
            retries=0,
            respect_robots=False,
            browser_path=browser,
        )
    )


@pytest.mark.slow
def test_a_webview_source_is_read_through_the_headless_browser(tmp_path, chromium):
    assert len(CHAPTER) > 200
    with Internal() as internal, ScriptSite(f"{internal.base}/secret") as site:
        crawler = _crawler({site.port}, chromium)
        path = tmp_path / "sources.json"
        path.write_text(json.dumps([webview_source(site.base)], ensure_ascii=False), "utf-8")
        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            lib.ingest([_doc()])
            (verdict,) = import_path(lib, str(path), crawler)
            run = DiscoveryRun(
                lib,
                RunOptions(interval=0.0, max_pages=20, read_processes=0, search=False),
                providers=[],
                crawler=crawler,
            )
            report = run.run()
    assert verdict.status == "imported", verdict.reasons
    assert "webView read through the headless browser" in verdict.reasons
    found = {m["mother_id"] for m in report.matches}
    assert found == {"w-0001"}, report.summary_lines()
    paths = [p for _, p, _ in site.requests]
    # The search page was fetched once by the crawler, its results by the page's script.
    assert paths.count(f"/search?q={_quoted(TITLE)}") == 1
    assert any(p.startswith("/api/search?q=") for p in paths)
    assert "/api/chapter?id=1" in paths  # the chapter's text came from its own script
    # The script's request to another local port was refused by the guard: never reached.
    assert internal.requests == []


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


@pytest.mark.slow
def test_without_a_browser_the_import_says_what_to_install(tmp_path):
    with ScriptSite("http://127.0.0.1:9/") as site:
        path = tmp_path / "sources.json"
        path.write_text(json.dumps([webview_source(site.base)], ensure_ascii=False), "utf-8")
        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            lib.ingest([_doc()])
        env = env_for(tmp_path / "data", YINJI_CHROMIUM=str(tmp_path / "no-browser"))
        done = subprocess.run(
            [sys.executable, "-m", "tracker.cli", "discover", "site", "import", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        line = done.stdout.splitlines()[0]
        assert line.startswith("partial\t要浏览器的站\t"), done.stdout
        assert "needs a browser (webView): Chromium/Playwright not installed" in line
        assert "no-browser" in line  # names the path that holds no browser
        # Discovery does not search it (no page spent), the run goes on.
        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            crawler = _crawler({site.port}, str(tmp_path / "no-browser"))
            report = DiscoveryRun(
                lib,
                RunOptions(interval=0.0, max_pages=20, read_processes=0, search=False),
                providers=[],
                crawler=crawler,
            ).run()
            (listed,) = SiteRegistry(lib.store).list()
    assert listed.status == "partial"
    assert site.requests == [] and report.fetched == 0


@pytest.mark.slow
def test_a_page_whose_script_never_yields_costs_only_its_time_limit(chromium):
    """``while (true) {}`` holds the page's thread: the browser is killed past the time
    limit and the page is one error naming the limit (the walk goes on)."""
    from datetime import UTC, datetime

    from tracker.crawler import CrawlError
    from tracker.crawler.browser import render
    from tracker.crawler.results import Page

    body = b"<html><body><div>x</div><script>setTimeout(() => { while (true) {} }, 10)</script>"
    url = "http://127.0.0.1:9/hang"
    page = Page(
        url=url,
        final_url=url,
        status=200,
        headers={"content-type": "text/html"},
        encoding="utf-8",
        raw=body,
        html=body.decode(),
        title="",
        text="",
        fetched_at=datetime.now(UTC),
        header_pairs=(("Content-Type", "text/html; charset=utf-8"),),
    )
    with pytest.raises(CrawlError, match="time limit of 4 s"):
        render(page, CrawlerConfig(screenshot_timeout=4.0, browser_path=chromium))


def test_the_verdict_follows_whether_a_browser_is_there():
    from tracker.discovery.legado.sources import NO_BROWSER, BookSource, judge

    raw = webview_source("http://spa.example")
    with_browser = judge(raw, None)
    assert with_browser.status == "imported", with_browser.reasons
    assert with_browser.reasons == ["webView read through the headless browser"]
    without = judge(raw, NO_BROWSER)
    assert without.status == "partial" and without.name == "要浏览器的站"
    assert without.reasons == [
        "search needs a browser (webView): Chromium/Playwright not installed",
        "contents need a browser (webView) (ruleToc.chapterUrl): Chromium/Playwright not installed",
    ]
    source = BookSource.from_raw(raw)
    assert source.request(source.search_template, key="书").webview
    assert not source.request("/book/1/").webview
    assert source.request('/c/1.html,{"webView": "true"}').webview
    # A plain source says nothing of a browser.
    plain = {**raw, "searchUrl": "/search?q={{key}}", "ruleToc": {"chapterList": "#list a"}}
    assert judge(plain, None).reasons == []
