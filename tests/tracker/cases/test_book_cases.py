"""Issue 36, cases by book: a local pirate site on 127.0.0.1 holds three chapters of
《水浒传》, chapter 2 over two pages (``2.html`` + ``2_2.html``). Confirming the pages
gives one case for the book on that site (host and port) holding four URLs in chapter
order, however the pages arrived (verdicts on pages checked one by one as discovery
checks them, or `yinji case book`); the zh and en notices name the book once and each
page under its chapter with that page's own figures; the re-check stays
``still_online`` while one page of the split chapter still copies and is ``removed``
once every page is gone; a submitted text's URL is ``unverified``, never counted as
removed until a fetch saw the copy there."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import PageServer, html
from textgen import work

from tracker.cases import CaseService
from tracker.cases.books import monitor_book
from tracker.cases.notices import build_notice
from tracker.cases.recheck import recheck_case
from tracker.cases.service import PageCopy
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Suspect, match_id
from tracker.crawler import Crawler, CrawlerConfig
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import SqliteStore

HEADINGS = {
    1: "第一回 张天师祈禳瘟疫 洪太尉误走妖魔",
    2: "第二回 王教头私走延安府 九纹龙大闹史家村",
    3: "第三回 史大郎夜走华阴县 鲁提辖拳打镇关西",
}
TEXT = {n: work(3600 + n, 40) for n in HEADINGS}
HALF = len(TEXT[2]) // 2
HOLDER = {"name": "梁山出版社", "address": "山东省济宁市梁山县", "email": "legal@ls.example"}
PATHS = ["/book/88/1.html", "/book/88/2.html", "/book/88/2_2.html", "/book/88/3.html"]
CHAPTER_OF = {PATHS[0]: 1, PATHS[1]: 2, PATHS[2]: 2, PATHS[3]: 3}


def _book_docs() -> list[Document]:
    """The book as the books contract stores it: one mother per chapter."""
    return [
        Document(
            id=f"shuihu-{n:04d}",
            text=TEXT[n],
            title=f"《水浒传》{HEADINGS[n]}",
            metadata={
                "book_id": "shuihu",
                "book_title": "水浒传",
                "author": "施耐庵",
                "chapter": HEADINGS[n],
                "chapter_index": n,
            },
        )
        for n in HEADINGS
    ]


def _link(href: str, text: str) -> str:
    return f'<a href="{href}">{text}</a>'


def _pirate_pages() -> dict[str, tuple[int, bytes, str]]:
    index = html(
        "水浒传 全文阅读",
        "目录",
        extra="".join(f"<li>{_link(f'{n}.html', HEADINGS[n])}</li>" for n in HEADINGS),
    )
    ctype = "text/html; charset=utf-8"
    return {
        "/book/88/index.html": (200, index, ctype),
        PATHS[0]: (200, html(HEADINGS[1], TEXT[1]), ctype),
        PATHS[1]: (
            200,
            html(HEADINGS[2], TEXT[2][:HALF], extra=_link("2_2.html", "下一页")),
            ctype,
        ),
        PATHS[2]: (
            200,
            html(HEADINGS[2], TEXT[2][HALF:], extra=_link("3.html", "下一章")),
            ctype,
        ),
        PATHS[3]: (200, html(HEADINGS[3], TEXT[3]), ctype),
    }


@pytest.fixture()
def site(tmp_path: Path, redis_client: object) -> Iterator[tuple]:
    settings = Settings(data_dir=tmp_path / "data")
    lib = Library(settings, SqliteStore(tmp_path / "data" / "yinji.sqlite3"), redis_client)
    lib.ingest(_book_docs())
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    svc.set_profile(**HOLDER)
    crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0, retries=0))
    with PageServer() as server:
        server.pages.update(_pirate_pages())
        yield lib, svc, crawler, server
    crawler.close()
    svc.store.close()
    lib.store.close()


def _confirm_page(lib: Library, svc: CaseService, crawler: Crawler, url: str):
    """Check one page as discovery and `yinji check URL` do, confirm its match."""
    mother = f"shuihu-{CHAPTER_OF['/' + url.split('/', 3)[3]]:04d}"
    result = lib.check_url(url, crawler=crawler, save=True)
    assert mother in [m.mother_id for m in result.matches]
    return svc.apply_verdict(lib.store, result.suspect.id, mother, "confirmed", who="alice")


def _section(text: str, start: str, end: str) -> list[str]:
    body = text.split(start, 1)[1].split(end, 1)[0]
    return [line for line in body.splitlines() if line.strip()]


def _evidence_line(text: str, url: str, sep: str) -> str:
    (line,) = [x for x in text.splitlines() if x.startswith(f"- {url}{sep}")]
    return line


def test_confirmed_pages_make_one_case_per_book_with_pages_in_chapter_order(site) -> None:
    lib, svc, crawler, server = site
    urls = [server.url(p) for p in PATHS]
    for url in random.Random(36).sample(urls, len(urls)):  # confirmed in any order
        result = _confirm_page(lib, svc, crawler, url)
        assert result.case is not None
    (c,) = svc.list_cases()
    assert (c.work, c.work_title, c.kind) == ("shuihu", "水浒传", "book")
    assert c.domain == f"127.0.0.1:{server.port}"  # the site: host and port
    assert c.metadata["author"] == "施耐庵"
    assert [u.url for u in c.urls] == urls  # chapter order, then page order
    assert [u.chapter_index for u in c.urls] == [1, 2, 2, 3]
    assert [u.chapter for u in c.urls] == [HEADINGS[1], HEADINGS[2], HEADINGS[2], HEADINGS[3]]
    assert len({u.suspect_id for u in c.urls}) == 4  # each page its own suspect and capture
    assert all(u.status == "online" for u in c.urls)

    # The notices: the book once, each page under its chapter, each page's own figures.
    zh = build_notice(svc, [c.id], "zh", matches=lib.store)
    en = build_notice(svc, [c.id], "en", matches=lib.store)
    assert zh.text.count("作品名称") == 1 and "1 部作品" in zh.subject
    assert "作品名称：《水浒传》（作者：施耐庵）" in zh.text
    assert _section(zh.text, "## 二、", "## 三、")[2:] == [
        f"《水浒传》{HEADINGS[1]}",
        f"- {urls[0]}",
        f"《水浒传》{HEADINGS[2]}",
        f"- {urls[1]}",
        f"- {urls[2]}",
        f"《水浒传》{HEADINGS[3]}",
        f"- {urls[3]}",
    ]
    assert _section(en.text, "## 2.", "## 3.")[2:] == [
        f'"水浒传", chapter 1 ({HEADINGS[1]})',
        f"- {urls[0]}",
        f'"水浒传", chapter 2 ({HEADINGS[2]})',
        f"- {urls[1]}",
        f"- {urls[2]}",
        f'"水浒传", chapter 3 ({HEADINGS[3]})',
        f"- {urls[3]}",
    ]
    assert '- "水浒传" by 施耐庵' in en.text and "1 work," in en.subject
    assert zh.urls == urls and en.urls == urls
    for u, path in zip(c.urls, PATHS, strict=True):
        match = lib.store.get_match(f"{u.suspect_id}\x1f{u.mother_id}")
        page_sha = hashlib.sha256(server.pages[path][1]).hexdigest()
        n = CHAPTER_OF[path]
        line = _evidence_line(zh.text, u.url, "：")
        assert line.startswith(f"- {u.url}：复制自《水浒传》{HEADINGS[n]}；"), line
        assert f"页面文字中复制部分占 {match.coverage:.0%}" in line
        assert page_sha in line  # this page's bytes, not the other page's
        assert not any(
            hashlib.sha256(server.pages[p][1]).hexdigest() in line for p in PATHS if p != path
        )
        line = _evidence_line(en.text, u.url, ": ")
        assert line.startswith(f'- {u.url}: copies "水浒传", chapter {n} ({HEADINGS[n]});')
        assert f"{match.coverage:.0%} of the page's text is copied" in line and page_sha in line

    # Re-check: one page of the split chapter gone, the other still copies.
    svc.mark_sent(c.id, who="alice", matches=lib.store)
    server.pages[PATHS[1]] = (404, b"gone", "text/html")
    result = recheck_case(svc, c.id, crawler=crawler, library=lib)
    assert [x.outcome for x in result.checks] == ["matching", "gone", "matching", "matching"]
    assert result.after == "still_online"
    for path in (PATHS[0], PATHS[3]):
        server.pages[path] = (404, b"gone", "text/html")
    result = recheck_case(svc, c.id, crawler=crawler, library=lib)
    assert [x.outcome for x in result.checks] == ["gone", "gone", "matching", "gone"]
    assert result.after == "still_online"  # 2_2.html still serves the copy
    assert [u.status for u in svc.get(c.id).urls] == ["removed", "removed", "online", "removed"]
    server.pages[PATHS[2]] = (200, html("公告", "本站已删除该章节。" * 20), "text/html")
    result = recheck_case(svc, c.id, crawler=crawler, library=lib)
    assert result.after == "removed"
    assert [u.status for u in svc.get(c.id).urls] == ["removed"] * 4


def test_a_book_run_files_each_page_with_its_number(site) -> None:
    """`yinji case book` (monitor_book): every page its own URL with its page number;
    the notice says which page of the chapter each URL is."""
    lib, svc, crawler, server = site
    report = monitor_book(server.url("/book/88/index.html"), crawler=crawler, library=lib, svc=svc)
    c = report.case
    assert c is not None and [u.url for u in c.urls] == [server.url(p) for p in PATHS]
    assert [(u.chapter_index, u.page) for u in c.urls] == [(1, 1), (2, 1), (2, 2), (3, 1)]
    for u in c.urls:  # the pages' matches confirmed (a book run files them pending)
        svc.apply_verdict(lib.store, u.suspect_id, u.mother_id, "confirmed", who="alice")
    assert [x.id for x in svc.list_cases()] == [c.id]
    zh = build_notice(svc, [c.id], "zh", matches=lib.store).text
    en = build_notice(svc, [c.id], "en", matches=lib.store).text
    assert (
        f"- {server.url(PATHS[1])}（第 1 页）" in zh
        and f"- {server.url(PATHS[2])}（第 2 页）" in zh
    )
    assert f"- {server.url(PATHS[2])} (page 2)" in en
    line = _evidence_line(zh, server.url(PATHS[2]), "：")
    assert line.startswith(f"- {server.url(PATHS[2])}：复制自《水浒传》{HEADINGS[2]}，第 2 页；")
    line = _evidence_line(en, server.url(PATHS[2]), ": ")
    assert f'copies "水浒传", chapter 2 ({HEADINGS[2]}), page 2;' in line

    # Another port of the same host is another site: its own case for the book.
    with PageServer() as other:
        other.pages.update(_pirate_pages())
        second = monitor_book(
            other.url("/book/88/index.html"), crawler=crawler, library=lib, svc=svc
        )
    assert second.case is not None and second.case.id != c.id
    assert second.case.domain == f"127.0.0.1:{other.port}" and second.case.work == "shuihu"
    # One URL, one open case.
    held = [u.url for x in svc.list_cases() if x.state != "closed" for u in x.urls]
    assert len(held) == len(set(held)) == 8


def test_discovery_files_pages_as_urls(site) -> None:
    """The call discovery makes: one PageCopy per page it fetched and checked."""
    lib, svc, crawler, server = site
    pages = []
    for path in reversed(PATHS):
        result = lib.check_url(server.url(path), crawler=crawler, save=True)
        (m,) = result.matches
        pages.append(
            PageCopy(
                url=server.url(path),
                suspect_id=result.suspect.id,
                mother_id=m.mother_id,
                score=m.score,
                coverage=m.coverage,
                page=2 if path.endswith("_2.html") else 1,
                label=result.suspect.title,
            )
        )
    (c,) = svc.file_pages(pages, who="system:discovery", matches=lib.store)
    assert [u.url for u in c.urls] == [server.url(p) for p in PATHS]
    assert [u.page for u in c.urls] == [1, 1, 2, 1] and c.work_title == "水浒传"
    assert svc.file_pages(pages, who="system:discovery", matches=lib.store)[0].id == c.id
    assert len(svc.get(c.id).urls) == 4  # filed again: nothing doubled


def test_a_submitted_urls_page_is_unverified_until_fetched(site) -> None:
    lib, svc, crawler, server = site
    pasted = server.url("/paste/1.html")
    res = lib.check_submitted(Suspect(id="paste-1", text=TEXT[1], url=pasted, source="text"))
    assert [m.mother_id for m in res.matches] == ["shuihu-0001"]
    svc.apply_verdict(lib.store, "paste-1", "shuihu-0001", "confirmed", who="alice")
    _confirm_page(lib, svc, crawler, server.url(PATHS[3]))
    (c,) = svc.list_cases()
    assert [(u.url, u.status) for u in c.urls] == [
        (pasted, "unverified"),
        (server.url(PATHS[3]), "online"),
    ]
    zh = build_notice(svc, [c.id], "zh", matches=lib.store).text
    assert "提交的文本，未抓取" in _evidence_line(zh, pasted, "：")
    svc.mark_sent(c.id, who="alice", matches=lib.store)

    # The pasted URL was never online as far as Yinji saw: a 404 there removes nothing.
    server.pages[PATHS[3]] = (404, b"gone", "text/html")
    result = recheck_case(svc, c.id, crawler=crawler, library=lib)
    assert [(x.outcome, x.unverified) for x in result.checks] == [("gone", True), ("gone", False)]
    assert "not counted as removed" in result.checks[0].reason
    assert result.after == "notice_sent"
    assert [u.status for u in svc.get(c.id).urls] == ["unverified", "removed"]

    # Fetched and found copying: verified (online); once gone, it counts.
    server.pages["/paste/1.html"] = (200, html(HEADINGS[1], TEXT[1]), "text/html; charset=utf-8")
    result = recheck_case(svc, c.id, crawler=crawler, library=lib)
    assert result.checks[0].outcome == "matching" and result.after == "still_online"
    assert svc.get(c.id).urls[0].status == "online"
    server.pages["/paste/1.html"] = (404, b"gone", "text/html")
    assert recheck_case(svc, c.id, crawler=crawler, library=lib).after == "removed"


def test_a_chapter_filed_as_one_url_over_two_pages_is_rechecked_over_both(site) -> None:
    """A case filed before pages were URLs holds chapter 2 as one URL whose text was
    joined from 2.html + 2_2.html: after 2.html went 404 the case is still online while
    2_2.html serves the copy, and removed once both are gone."""
    lib, svc, crawler, server = site
    first, second = server.url(PATHS[1]), server.url(PATHS[2])
    joined = Suspect(
        id="legacy-2",
        text=TEXT[2],
        title=HEADINGS[2],
        url=first,
        source="book",
        raw=server.pages[PATHS[1]][1],
        metadata={"pages": [first, second]},
    )
    lib.check_suspect(joined)
    # Confirmed and filed as a case stored then held it: one URL (a verdict now files
    # each page, tests/tracker/cases/test_pages_of_one_check.py).
    lib.store.set_verdict(match_id("legacy-2", "shuihu-0002"), "confirmed", None)
    legacy = PageCopy(url=first, suspect_id="legacy-2", mother_id="shuihu-0002", score=1.0)
    (case,) = svc.file_pages([legacy], who="alice", matches=lib.store)
    assert [u.url for u in case.urls] == [first]
    cid = case.id
    zh = build_notice(svc, [cid], "zh", matches=lib.store).text
    line = _evidence_line(zh, first, "：")
    assert f"第 1–2 页合计（{first}、{second}）的文字中复制部分占" in line
    svc.mark_sent(cid, who="alice", matches=lib.store)

    server.pages[PATHS[1]] = (404, b"gone", "text/html")
    (check,) = recheck_case(svc, cid, crawler=crawler, library=lib).checks
    assert check.outcome == "matching" and check.pages == [first, second]
    assert svc.get(cid).state == "still_online"  # 2_2.html still serves the copy
    server.pages[PATHS[2]] = (404, b"gone", "text/html")
    res = recheck_case(svc, cid, crawler=crawler, library=lib)
    assert res.checks[0].outcome == "gone" and "every page gone" in res.checks[0].reason
    assert res.after == "removed"
