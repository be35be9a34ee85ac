"""Discovery by book (#36): a site is searched for the book's title, never for an id or
a chapter's title; a site search that finds no book says so in the run's summary."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from discokit import FakePirateSite

from tracker.common.records import Mother
from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.books import book_of, book_targets
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.discovery.sites import Site, SiteRegistry, find_search, load_profiles
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings


def _mother(id: str, title: str, **meta: object) -> Mother:
    return Mother(id=id, text="正文" * 10, title=title, metadata=dict(meta))


def test_the_title_searched_is_the_books_never_an_id_or_a_chapter():
    chapters = [
        _mother("sg-0001", "《三国演义》宴桃园豪杰三结义", book_id="sg", book_title="三国演义"),
        _mother("sg-0002", "《三国演义》张翼德怒鞭督邮", book_id="sg", book_title="三国演义"),
        _mother("x-1", "《三国演义》宴桃园豪杰三结义"),  # no metadata: the 《》 of its title
        _mother("sh-1", "第一回 张天师祈禳瘟疫", work="shuihu", work_title="水浒传"),
        _mother("sh-2", "第二回 王教头私走延安府", work="shuihu"),  # the id groups, never searched
        _mother("hl-4", "红楼梦 第四回 薄命女偏逢薄命郎"),
        _mother("lone", "第九章 无名"),  # a chapter heading only: nothing to search for
        _mother("lx-1", "“皇汉医学”", collection="三闲集"),  # a legacy name: the book's title
        _mother("sg-x", "第一回", book="sanguo"),  # an id alone: not a title
    ]
    books = book_targets(chapters)
    titles = {b.key: (b.title, b.work_ids) for b in books}
    assert titles["sg"] == ("三国演义", ["sg-0001", "sg-0002"])
    assert titles["shuihu"] == ("水浒传", ["sh-1", "sh-2"])
    assert titles["title:红楼梦"] == ("红楼梦", ["hl-4"])
    assert "title:三国演义" in titles
    searched = {b.title for b in books}
    assert not any("宴桃园" in t or t == "shuihu" or t.startswith("第") for t in searched)
    assert titles["三闲集"] == ("三闲集", ["lx-1"])
    assert book_of(chapters[-1]) is None and book_of(chapters[-3]) is None
    assert book_of(_mother("a", "《书》甲", author="某人")).author == "某人"


@pytest.mark.slow
def test_a_run_searches_each_site_once_per_book_and_names_the_books_not_found(tmp_path):
    chapter = "山高水长，天地悠悠。" * 40
    with FakePirateSite({"三国演义": [chapter, chapter]}) as pirate:
        config = CrawlerConfig(
            allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port == pirate.server.port,
            min_interval=0.0,
            retries=0,
        )
        crawler = Crawler(config)
        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            docs = [
                Document(
                    id=f"sg-{i:04d}",
                    title=f"《三国演义》{heading}",
                    text=chapter + heading * 5,
                    metadata={"book_id": "sg", "book_title": "三国演义", "chapter_index": i},
                )
                for i, heading in enumerate(["宴桃园豪杰三结义", "张翼德怒鞭督邮"], 1)
            ] + [
                Document(
                    id="shuihu-1",
                    title="第一回 张天师祈禳瘟疫",
                    text="洪太尉误走妖魔。" * 30,
                    metadata={"work": "shuihu", "work_title": "水浒传"},
                )
            ]
            lib.ingest(docs)
            SiteRegistry(lib.store).add(find_search(crawler, pirate.base + "/", load_profiles()))
            site: Site = SiteRegistry(lib.store).list()[0]
            run = DiscoveryRun(
                lib,
                RunOptions(interval=0.0, max_pages=20, read_processes=0),
                providers=[],
                crawler=crawler,
            )
            report = run.run()
    searched = [p for p in pirate.server.paths() if "search" in p.lower()]
    assert len(searched) == 2  # one search per book
    wanted = {quote("三国演义".encode(site.encoding)), quote("水浒传".encode(site.encoding))}
    assert all(any(w in p for w in wanted) for p in searched), searched
    assert not any(quote("宴桃园".encode(site.encoding)) in p or "shuihu" in p for p in searched)
    assert report.books == 2
    summary = "\n".join(report.summary_lines())
    assert "no book 《水浒传》 in its search results" in summary
    assert not any("三国演义" in line for line in report.not_found)


def test_a_search_url_to_a_private_address_is_refused_when_given(tmp_path):
    from tracker.discovery.service import register_site
    from tracker.discovery.sites import SiteError

    with Library.open(Settings.from_env(tmp_path / "data")) as lib:
        crawler = Crawler(CrawlerConfig())  # the guard as shipped: no private addresses
        for search_url in ("http://169.254.169.254/s?q={q}", "http://10.0.0.7/s?q={q}"):
            with pytest.raises(SiteError, match=search_url.split("/")[2]):
                register_site(lib, "http://a.test/", search_url=search_url, crawler=crawler)
        with pytest.raises(SiteError, match="klingon"):
            register_site(
                lib, "http://a.test/", search_url="http://a.test/?q={q}", encoding="klingon"
            )
        assert SiteRegistry(lib.store).list() == []
