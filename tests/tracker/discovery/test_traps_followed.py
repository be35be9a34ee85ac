"""Traps the way real sites set them, reached from a copy found: a blog with a calendar
(one month lists posts, every other month is empty and links on to the next), a thread
whose "下一页" never ends, a book's chapter list over two pages whose "下一页" goes on
past the end. With the trap rules the crawl takes one step into each and stops; without
them the same budget walks the traps. Also ``Frontier.add_links``, the batch behind it."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from discokit import LocalServer
from textgen import work

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.frontier import Frontier, FrontierItem, Link
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.discovery.urls import TrapDetector
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

TEXT = work(515, 60)
HTML = {"Content-Type": "text/html; charset=utf-8"}


def _html(title: str, body: str, links: list[tuple[str, str]]) -> bytes:
    items = "".join(f'<li><a href="{h}">{a}</a></li>' for h, a in links)
    paras = "".join(f"<p>{p}。</p>" for p in body.split("。") if p)
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<h1>{title}</h1><article>{paras}</article><ul>{items}</ul></body></html>"
    ).encode()


def _route(path_qs: str) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(path_qs)
    path, q = parts.path, parse_qs(parts.query)
    if path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    if path == "/post/1.html":  # the copy, with a calendar widget and a paged thread
        n = int(q.get("page", ["1"])[0])
        links = [("/archive?m=11&y=2026", "2026年11月"), (f"/post/1.html?page={n + 1}", "下一页")]
        return 200, HTML, _html("转载", TEXT[:1500], links)
    if path == "/archive":
        y, m = int(q["y"][0]), int(q["m"][0])
        prev = (y, m - 1) if m > 1 else (y - 1, 12)
        nxt = (y, m + 1) if m < 12 else (y + 1, 1)
        links = [
            (f"/archive?m={prev[1]}&y={prev[0]}", "上个月"),
            (f"/archive?m={nxt[1]}&y={nxt[0]}", "下个月"),
        ]
        if (y, m) == (2026, 11):
            links += [(f"/post/{i}.html", f"文章{i}") for i in (1, 2, 3)]
        return 200, HTML, _html(f"归档 {y}年{m}月", "", links)
    if re.fullmatch(r"/post/\d+\.html", path):
        return 200, HTML, _html("随笔", work(600 + int(path[6:-5]), 8), [("/", "首页")])
    m = re.fullmatch(r"/book/(?:index_(\d+)\.html)?", path)
    if m:  # 40 chapters, 20 a page; "下一页" never ends
        n = int(m.group(1) or 1)
        first = (n - 1) * 20 + 1
        links = [(f"/book/{c}.html", f"第{c}章") for c in range(first, min(first + 20, 41))]
        links.append((f"/book/index_{n + 1}.html", "下一页"))
        return 200, HTML, _html(f"书 第{n}页", "", links)
    m = re.fullmatch(r"/book/(\d+)\.html", path)
    if m and 1 <= int(m.group(1)) <= 40:
        return 200, HTML, _html(f"第{m.group(1)}章", work(700 + int(m.group(1)), 8), [])
    return 404, {}, b"not found"


def _crawl(tmp_path, trap_rules: bool, pages: int) -> tuple[list[str], object]:
    with LocalServer(_route) as web:
        crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0.0, retries=0))
        with Library.open(Settings.from_env(tmp_path / f"data-{trap_rules}")) as lib:
            lib.ingest([Document(id="w", title="原作", text=TEXT)])
            run = DiscoveryRun(
                lib,
                RunOptions(max_pages=pages, interval=0.0, concurrency=2, trap_rules=trap_rules),
                providers=[],
                crawler=crawler,
                keys=DiscoveryKeys(lib.settings.redis_prefix, "traps"),
            )
            run.frontier.clear()
            for url, kind in ((f"{web.base}/post/1.html", "page"), (f"{web.base}/book/", "index")):
                run.frontier.add(FrontierItem(url=url, source="test", priority=0, kind=kind))
            run.crawl()
            report = run.finish()
        return web.paths(), report


@pytest.mark.slow
def test_trap_rules_take_one_step_into_each_trap(tmp_path):
    paths, report = _crawl(tmp_path, True, 200)
    assert report.matched >= 1  # the copy was found, its site explored
    fetched = set(paths)
    # Every chapter of both pages of the book's list, and one empty list page past them.
    assert {f"/book/{c}.html" for c in range(1, 41)} <= fetched
    assert "/book/index_2.html" in fetched and "/book/index_3.html" in fetched
    assert "/book/index_4.html" not in fetched
    # The calendar: the month with posts and its two neighbours, no further.
    months = {p for p in fetched if p.startswith("/archive")}
    assert months == {"/archive?m=11&y=2026", "/archive?m=10&y=2026", "/archive?m=12&y=2026"}
    # The thread's endless "下一页": page 2 (the same copy again), no further.
    assert "/post/1.html?page=2" in fetched and "/post/1.html?page=3" not in fetched
    assert report.traps >= 3
    assert len(paths) == len(fetched)  # nothing fetched twice


@pytest.mark.slow
def test_without_the_trap_rules_the_same_budget_walks_into_them(tmp_path):
    paths, _ = _crawl(tmp_path, False, 80)
    traps = [
        p
        for p in paths
        if re.fullmatch(r"/book/index_([3-9]|\d\d+)\.html", p)
        or (p.startswith("/archive") and "m=11&" not in p)
        or p.startswith("/post/1.html?page=")
    ]
    # The book list's endless "下一页" (priority of a chapter list) took the budget.
    assert len(traps) > 20, paths


def test_add_links_gives_a_verdict_per_link_in_one_batch(redis_client):
    f = Frontier(redis_client, DiscoveryKeys("t"), interval=0.0, traps=TrapDetector(max_chain=1))
    parent = FrontierItem(url="http://x.test/cal?m=1", source="s", chain=1, depth=2)
    f.add(FrontierItem(url="http://x.test/known", source="s"))
    verdicts = f.add_links(
        parent,
        [
            Link("http://x.test/a.html", 3.0),
            Link("http://x.test/known", 3.0),
            Link("http://x.test/a.html?utm_source=z", 3.0),  # the same page as the first
            Link("http://x.test/cal?m=2", 1.0),  # chain 2 > 1: a trap
            Link("mailto:x@y", 1.0),
            Link("http://x.test/b.html", 5.0, kind="index", depth=0),
        ],
    )
    assert verdicts[:3] == ["queued", "seen", "seen"]
    assert verdicts[3].startswith("trap:") and verdicts[4] == "invalid"
    assert verdicts[5] == "queued"
    stats = f.stats()
    assert stats["queued"] == 3 and stats["traps"] == 1 and stats["duplicates"] >= 2
    items = {}
    while (claim := f.claim()).item is not None:
        items[claim.item.url] = claim.item
        f.done(claim.item)
    assert set(items) == {"http://x.test/known", "http://x.test/a.html", "http://x.test/b.html"}
    assert items["http://x.test/a.html"].depth == 3 and items["http://x.test/a.html"].priority == 3
    assert (
        items["http://x.test/b.html"].depth == 0 and items["http://x.test/b.html"].kind == "index"
    )
    assert items["http://x.test/a.html"].parent == parent.url
