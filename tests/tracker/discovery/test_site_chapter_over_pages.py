"""A registered JieQi-style site (``yinji discover site add``, not Legado) that serves a
chapter over two pages (``2.html`` with a 下一页 link to ``2_2.html``): the crawl reads
the two pages as one chapter, checks them as one suspect with a capture per page, never
checks ``2_2.html`` on its own, and confirming the match files both pages into the
book's case, numbered, in chapter order."""

from __future__ import annotations

from pathlib import Path

import pytest
from discokit import FakePirateSite
from textgen import work

from tracker.cases import CaseService
from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.pages import is_next_page
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.discovery.sites import SiteRegistry, find_search, load_profiles
from tracker.documents.readers import Document
from tracker.evidence import EvidenceLog
from tracker.library import Library
from tracker.plumbing.config import Settings

TITLE = "寒江夜渡"


def _chapters(n: int = 3) -> list[str]:
    sentences = [s + "。" for s in work(31, 30 * n).split("。") if s]
    return ["".join(sentences[i * 30 : (i + 1) * 30]) for i in range(n)]


def test_a_next_page_is_the_same_chapter_one_page_on() -> None:
    base = "http://a.test/book/1"
    assert is_next_page(f"{base}/2.html", f"{base}/2_2.html")
    assert is_next_page(f"{base}/2_2.html", f"{base}/2_3.html")
    assert is_next_page(f"{base}/2.html", f"{base}/2-2.html")
    assert is_next_page("http://a.test/c.php?id=2", "http://a.test/c.php?id=2&page=2")
    assert not is_next_page(f"{base}/2.html", f"{base}/3.html")  # the next chapter
    assert not is_next_page(f"{base}/2.html", f"{base}/2_3.html")  # a page skipped
    assert not is_next_page(f"{base}/2.html", "http://b.test/book/1/2_2.html")
    assert not is_next_page(f"{base}/123_456.html", f"{base}/123_457.html")  # ids, no pages


@pytest.mark.slow
def test_a_chapter_over_two_pages_is_read_checked_and_filed_page_by_page(
    tmp_path: Path,
) -> None:
    chapters = _chapters()
    docs = [
        Document(
            id=f"hj-{i:04d}",
            title=f"《{TITLE}》第{i}章",
            text=text,
            metadata={"book_id": "hj", "book_title": TITLE, "chapter_index": i},
        )
        for i, text in enumerate(chapters, 1)
    ]
    with FakePirateSite({TITLE: chapters}, split=(2,)) as pirate:
        crawler = Crawler(
            CrawlerConfig(
                allow_address=lambda ip, port: (
                    str(ip) == "127.0.0.1" and port == pirate.server.port
                ),
                min_interval=0.0,
                retries=0,
            )
        )
        settings = Settings.from_env(tmp_path / "data")
        with Library.open(settings) as lib:
            lib.ingest(docs)
            SiteRegistry(lib.store).add(find_search(crawler, pirate.base + "/", load_profiles()))
            options = RunOptions(interval=0.0, max_pages=30, read_processes=0, search=False)
            report = DiscoveryRun(lib, options, providers=[], crawler=crawler).run()
            served = pirate.server.paths()
            by_work = {m["mother_id"]: m for m in report.matches}
            assert set(by_work) == {"hj-0001", "hj-0002", "hj-0003"}, report.summary_lines()
            two = by_work["hj-0002"]
            pages = [f"{pirate.base}/book/1/2.html", f"{pirate.base}/book/1/2_2.html"]
            assert two["pages"] == pages and two["url"] == pages[0]
            assert "pages" not in by_work["hj-0001"]
            # 2_2.html fetched once, as chapter 2's second page, never checked alone.
            assert sum(p.endswith("/2_2.html") for p in served) == 1
            assert not any(m["url"].endswith("2_2.html") for m in report.matches)
            suspect = lib.store.get_suspect(two["suspect_id"])
            assert suspect.metadata["pages"] == pages
            assert chapters[1][:20] in suspect.text and chapters[1][-21:-1] in suspect.text
            with EvidenceLog.from_settings(settings) as log:
                captured = [
                    e.payload.get("final_url") or e.payload.get("url")
                    for e in log.entries(suspect_id=two["suspect_id"])
                    if e.kind == "capture"
                ]
            assert sorted(captured) == sorted(pages)

            svc = CaseService(lib.open_case_store(), settings)
            try:
                for m in report.matches:
                    svc.apply_verdict(
                        lib.store, m["suspect_id"], m["mother_id"], "confirmed", who="alice"
                    )
                (case,) = svc.list_cases()
            finally:
                svc.close()
    assert case.work == "hj" and case.work_title == TITLE
    assert [(u.url.rsplit("/", 1)[1], u.chapter_index, u.page) for u in case.urls] == [
        ("1.html", 1, 0),
        ("2.html", 2, 1),
        ("2_2.html", 2, 2),
        ("3.html", 3, 0),
    ]
