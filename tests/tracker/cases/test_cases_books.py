"""Book monitoring against a local pirate site the test serves: a GBK index with a
chapter list, chapters split over "下一页" pages, robots.txt, navigation links and a
mirror host (two host names on one server via the Host header, resolved to 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import PageServer, html
from click.testing import CliRunner
from textgen import work

from tracker.cases import CaseService
from tracker.cases.books import BookError, chapter_links, monitor_book, next_page_link
from tracker.cases.cli import case
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.crawler import Crawler, CrawlerConfig
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import SqliteStore

CH1, CH3, FOREIGN, UNRELATED = work(11, 40), work(13, 40), work(500, 30), work(99, 40)
BOOK_META = {"work": "chunshan", "work_title": "春山记"}
GBK = "text/html"  # no charset in the header: the page's <meta> and the bytes say GBK


def _link(href: str, text: str) -> str:
    return f'<a href="{href}">{text}</a>'


def _site(port: int, *, mirror: bool = False) -> dict[str, tuple[int, bytes, str]]:
    nav = _link("/", "首页") + _link("/top/", "排行榜")
    chapters = "".join(
        f"<li>{_link(f'/book/7/{n}.html', f'第{c}章')}</li>"
        for n, c in [(1, "一"), (2, "二"), (3, "三"), (4, "四")]
    )
    other_host = "book.example" if mirror else "mirror.example"
    chapters += f"<li>{_link(f'http://{other_host}:{port}/book/7/5.html', '第五章')}</li>"
    index = html(
        "春山记最新章节", "春山记 全文阅读", encoding="gbk", extra=nav + f"<ul>{chapters}</ul>"
    )
    half1, half3 = len(CH1) // 2, len(CH3) // 2
    pages = {
        "/robots.txt": (200, b"User-agent: *\nDisallow: /book/7/4.html\n", "text/plain"),
        "/book/7/": (200, index, GBK),
        "/book/7/1.html": (
            200,
            html(
                "第一章 春山",
                CH1[:half1],
                encoding="gbk",
                extra=_link("/book/7/1_2.html", "下一页") + _link("/book/7/2.html", "下一章"),
            ),
            GBK,
        ),
        "/book/7/1_2.html": (
            200,
            html(
                "第一章 春山", CH1[half1:], encoding="gbk", extra=_link("/book/7/2.html", "下一章")
            ),
            GBK,
        ),
        "/book/7/2.html": (200, html("第二章 别处", FOREIGN, encoding="gbk"), GBK),
        "/book/7/3.html": (
            200,
            html("第三章 夜雨", CH3[:half3], encoding="gbk", extra=_link("3_2.html", "下一页")),
            GBK,
        ),
        "/book/7/3_2.html": (
            200,
            # The last page's "下一页" leads to the next chapter: not a page of this one.
            html("第三章 夜雨", CH3[half3:], encoding="gbk", extra=_link("4.html", "下一页")),
            GBK,
        ),
        "/book/7/4.html": (200, html("第四章", CH3, encoding="gbk"), GBK),
    }
    if mirror:  # the mirror copies chapter 1 only, on one page
        pages["/book/7/1.html"] = (200, html("第一章 春山", CH1, encoding="gbk"), GBK)
        pages.pop("/book/7/1_2.html")
    return pages


@pytest.fixture()
def site(tmp_path: Path, redis_client: object) -> Iterator[tuple]:
    settings = Settings(data_dir=tmp_path / "data")
    lib = Library(settings, SqliteStore(tmp_path / "data" / "yinji.sqlite3"), redis_client)
    lib.ingest(
        [
            Document(id="cs-1", text=CH1, title="春山记 第一章", metadata=BOOK_META),
            Document(id="cs-3", text=CH3, title="春山记 第三章", metadata=BOOK_META),
            Document(id="other", text=UNRELATED, title="别的书"),
        ]
    )
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    crawler = Crawler(
        CrawlerConfig(
            allow_private=True, min_interval=0, retries=0, resolver=lambda h, p: ["127.0.0.1"]
        )
    )
    with PageServer() as server:
        server.hosts["book.example"] = _site(server.port)
        server.hosts["mirror.example"] = _site(server.port, mirror=True)
        yield lib, svc, crawler, server
    crawler.close()
    svc.store.close()
    lib.store.close()


def test_book_is_followed_checked_and_filed_as_one_case(site) -> None:
    lib, svc, crawler, server = site
    index = server.url("/book/7/", "book.example")
    report = monitor_book(index, crawler=crawler, library=lib, svc=svc)
    base = server.url("/book/7/", "book.example")
    assert [c.url for c in report.chapters] == [f"{base}{n}.html" for n in (1, 2, 3, 4)]
    ch1, ch2, ch3, ch4 = report.chapters
    assert ch1.pages == [f"{base}1.html", f"{base}1_2.html"]  # "下一页" followed
    assert ch3.pages == [f"{base}3.html", f"{base}3_2.html"]  # not into chapter 4
    assert [m["mother_id"] for m in ch1.matches] == ["cs-1"]
    assert [m["mother_id"] for m in ch3.matches] == ["cs-3"]
    assert ch2.matches == [] and ch2.error == ""
    assert "robots.txt" in ch4.error and ch4.pages == []
    assert ch1.title.startswith("第一章") and ch1.chars > len(CH1) * 0.9  # GBK decoded, joined
    requested = [(h, p) for h, p in server.requests]
    assert ("book.example", "/book/7/4.html") not in requested  # robots.txt honoured
    assert not any(h == "mirror.example" for h, _ in requested)  # one host only
    assert not any(p in ("/", "/top/") for _, p in requested)  # navigation not followed
    assert report.pages_fetched == 6 and not report.truncated
    c = report.case
    site = f"book.example:{server.port}"  # host and port
    assert c is not None and c.kind == "book" and c.domain == site
    assert (c.work, c.work_title) == ("chunshan", "春山记")
    # Every page is its own URL, in chapter order, then page order.
    assert [u.url for u in c.urls] == [*ch1.pages, *ch3.pages]
    assert [(u.chapter_index, u.page) for u in c.urls] == [(1, 1), (1, 2), (3, 1), (3, 2)]
    assert [u.chapter for u in c.urls] == ["第一章", "第一章", "第三章", "第三章"]
    assert [u.label for u in c.urls] == [ch1.title] * 2 + [ch3.title] * 2
    assert set(c.mother_ids) == {"cs-1", "cs-3"}
    chapters = c.metadata["book"]["chapters"]
    assert [len(ch["matches"]) for ch in chapters] == [1, 0, 1, 0]
    # Each page is a suspect of the library, with its own matches (the web shows them).
    for u in c.urls:
        suspect = lib.store.get_suspect(u.suspect_id)
        assert suspect.url == u.url and suspect.metadata["pages"] == [u.url]
        assert suspect.metadata["page"] == u.page
        assert lib.store.get_match(f"{u.suspect_id}\x1f{u.mother_id}").score > 0.5
    assert len({u.suspect_id for u in c.urls}) == 4
    assert ch1.suspect_id == c.urls[0].suspect_id

    # The daily run again: the same case, nothing doubled.
    again = monitor_book(index, crawler=crawler, library=lib, svc=svc)
    assert again.case is not None and again.case.id == c.id and len(again.case.urls) == 4
    kinds = [e.kind for e in svc.history(c.id)]
    assert kinds == ["created", *["url_added"] * 4, "book", "book"]

    # The mirror is its own site: its own case.
    mirror = monitor_book(
        server.url("/book/7/", "mirror.example"), crawler=crawler, library=lib, svc=svc
    )
    assert mirror.case is not None and mirror.case.domain == f"mirror.example:{server.port}"
    assert mirror.case.id != c.id and mirror.case.work == "chunshan"
    assert [len(ch.pages) for ch in mirror.chapters][:1] == [1]


def test_one_url_one_open_case(site) -> None:
    """A verdict first, then the book, a re-run, and a re-run after the works gained
    other metadata: chapter 1's URL stays in one open case, and no case is added."""
    lib, svc, crawler, server = site
    base = server.url("/book/7/", "book.example")
    page = lib.check_url(f"{base}1.html", crawler=crawler, save=True)
    svc.apply_verdict(lib.store, page.suspect.id, "cs-1", "confirmed", who="alice")
    (first,) = svc.list_cases()
    assert [u.url for u in first.urls] == [f"{base}1.html"]

    report = monitor_book(base, crawler=crawler, library=lib, svc=svc)
    assert report.case is not None and report.case.id == first.id  # found, not a twin
    pages = [f"{base}{p}.html" for p in ("1", "1_2", "3", "3_2")]
    assert [u.url for u in report.case.urls] == pages
    lib.ingest(
        [
            Document(id=f"cs-{n}", text=text, title=f"春山记 第{n}章", metadata={"work": "cs2"})
            for n, text in ((1, CH1), (3, CH3))
        ]
    )
    for _ in range(2):  # the book's key is cs2 now: the same case follows it
        again = monitor_book(base, crawler=crawler, library=lib, svc=svc)
        assert again.case is not None and again.case.id == first.id
        assert again.case.work == "cs2"
    # The verdict again (a re-run of the web's 确认): still the same case.
    svc.apply_verdict(lib.store, page.suspect.id, "cs-1", "confirmed", who="bob")
    (only,) = svc.list_cases()
    urls = [u.url for u in only.urls]
    assert urls == pages
    assert svc.sync(lib.store) == 0


def test_budget_and_refusals(site) -> None:
    lib, svc, crawler, server = site
    index = server.url("/book/7/", "book.example")
    report = monitor_book(index, crawler=crawler, library=lib, svc=svc, max_pages=3)
    assert report.truncated and report.pages_fetched == 3
    assert [len(c.pages) for c in report.chapters] == [2]
    with pytest.raises(BookError, match="cannot read the book's index"):
        monitor_book(server.url("/nothing/", "book.example"), crawler=crawler, library=lib)
    server.hosts["book.example"]["/empty/"] = (200, html("空", "没有章节"), "text/html")
    with pytest.raises(BookError, match="no chapter links"):
        monitor_book(server.url("/empty/", "book.example"), crawler=crawler, library=lib)
    with pytest.raises(BookError, match="not an http"):
        monitor_book("ftp://x/", crawler=crawler, library=lib)


def test_link_rules() -> None:
    page = (
        '<base href="http://b.example/book/1/">'
        + _link("1.html", "第1章 开始")
        + _link("/book/1/2.html#top", "第2章")
        + _link("/book/1/1.html", "第1章 again")
        + _link("/", "首页")
        + _link("javascript:void(0)", "第3章")
        + _link("http://b.example:81/book/1/3.html", "第3章")
    )
    assert chapter_links(page, "http://b.example/book/1/") == [
        "http://b.example/book/1/1.html",
        "http://b.example/book/1/2.html",
    ]
    # No folder structure: links whose text reads like a chapter.
    flat = (
        _link("/read?id=1", "第一章") + _link("/read?id=2", "Chapter 2") + _link("/about", "关于")
    )
    assert chapter_links(flat, "http://b.example/info?book=1") == [
        "http://b.example/read?id=1",
        "http://b.example/read?id=2",
    ]
    nxt = _link("p2.html", "下一页") + _link("n.html", "下一章")
    assert next_page_link(nxt, "http://b.example/c/p1.html", set()) == "http://b.example/c/p2.html"
    assert next_page_link(nxt, "http://b.example/c/p1.html", {"http://b.example/c/p2.html"}) is None


@pytest.mark.slow
def test_cli_book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    with Library.open(Settings(data_dir=data)) as lib:
        lib.ingest([Document(id="cs-1", text=CH1, title="春山记 第一章", metadata=BOOK_META)])
    monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
    monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
    with PageServer() as server:
        server.pages.update(_site(server.port))
        r = CliRunner().invoke(
            case,
            ["book", server.url("/book/7/"), "--json"],
            obj={"data_dir": data},
            catch_exceptions=False,
        )
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["matched_chapters"] == 1 and report["case_state"] == "open"
    listed = json.loads(CliRunner().invoke(case, ["list", "--json"], obj={"data_dir": data}).stdout)
    assert [c["id"] for c in listed] == [report["case_id"]]
    assert listed[0]["urls"] == [server.url("/book/7/1.html"), server.url("/book/7/1_2.html")]
