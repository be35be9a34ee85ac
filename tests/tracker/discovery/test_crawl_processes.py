"""A run's crawl in two processes (``RunOptions.crawl_processes``): both claim from the
one frontier and take from one page budget, the helper's pages come back to the run's
``on_page`` and its counts into the run's report; no page is fetched twice."""

from __future__ import annotations

import functools
import re
import time

import pytest
from discokit import LocalServer
from textgen import work

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.frontier import FrontierItem
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.run import DiscoveryRun, PageResult, RunOptions
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

CHAPTERS = 40
HTML = {"Content-Type": "text/html; charset=utf-8"}


def _chapter(c: int) -> str:
    return work(900 + c, 8)


def _route(path: str) -> tuple[int, dict[str, str], bytes]:
    if path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    if path == "/tiny.html":  # a page with next to no text: fetched, not checked
        return 200, HTML, "<html><body><p>本站公告</p></body></html>".encode()
    if path == "/book/":
        items = "".join(f'<li><a href="/book/{c}.html">第{c}章</a></li>' for c in range(1, 41))
        return 200, HTML, f"<html><body><h1>书</h1><ul>{items}</ul></body></html>".encode()
    m = re.fullmatch(r"/book/(\d+)\.html", path)
    if m and 1 <= int(m.group(1)) <= CHAPTERS:
        c = int(m.group(1))
        paras = "".join(f"<p>{p}。</p>" for p in _chapter(c).split("。") if p)
        page = f"<html><head><title>第{c}章</title></head><body><article>{paras}</article>"
        return 200, HTML, (page + "</body></html>").encode()
    return 404, {}, b"not found"


@pytest.mark.slow
def test_two_crawl_processes_share_the_frontier_and_the_budget(tmp_path):
    budget = 30  # fewer than the 42 pages there are: the budget is what ends the crawl
    config = CrawlerConfig(allow_private=True, min_interval=0.0, retries=0)
    results: list[PageResult] = []

    def on_page(result: PageResult) -> None:
        # The first page waits for the second process to fetch (its robots.txt comes
        # first): however slowly it starts on a loaded machine, it takes its share.
        results.append(result)
        deadline = time.monotonic() + 60
        while len(results) == 1 and web.paths().count("/robots.txt") < 2:
            assert time.monotonic() < deadline, "the second crawl process never fetched"
            time.sleep(0.05)

    with LocalServer(_route) as web, Library.open(Settings.from_env(tmp_path / "d")) as lib:
        lib.ingest([Document(id=f"c{c}", title=f"第{c}章", text=_chapter(c)) for c in range(1, 41)])
        run = DiscoveryRun(
            lib,
            RunOptions(max_pages=budget, interval=0.02, concurrency=2, crawl_processes=2),
            providers=[],
            crawler=Crawler(config),
            crawler_factory=functools.partial(Crawler, config),
            keys=DiscoveryKeys(lib.settings.redis_prefix, "procs"),
            on_page=on_page,
        )
        run.frontier.clear()
        run.frontier.add(
            FrontierItem(url=f"{web.base}/book/", source="test", priority=0, kind="index")
        )
        run.frontier.add(FrontierItem(url=f"{web.base}/tiny.html", source="test", priority=0))
        run.crawl()
        report = run.finish()
        paths = web.paths()
    pages = [p for p in paths if p != "/robots.txt"]
    # Each process's crawler asked for robots.txt once: both crawled.
    assert paths.count("/robots.txt") == 2, paths
    # One budget for both, nothing fetched twice.
    assert len(pages) == budget and len(set(pages)) == budget
    # Every page came back to on_page once, the helper's included, and was counted.
    assert sorted(r.url.removeprefix(web.base) for r in results) == sorted(pages)
    assert report.fetched == budget
    chapters = [p for p in pages if p not in ("/book/", "/tiny.html")]
    # The page with next to no text: fetched, not checked, and the run says why.
    (tiny,) = [r for r in results if r.url.endswith("/tiny.html")]
    assert not tiny.checked and "fewer than 50" in tiny.skipped
    assert report.skipped == 1 and "1 too short to check" in report.summary_lines()[0]
    assert report.checked == len(chapters) == report.source("test").checked
    # Each chapter found as a copy of its own work, whichever process checked it.
    found = {
        r.url.removeprefix(web.base): {m["mother_id"] for m in r.matches}
        for r in results
        if r.checked
    }
    assert found == {p: {f"c{p.split('/')[-1].split('.')[0]}"} for p in chapters}
    assert report.matched == len(chapters) and not report.errors
