"""Queries from the library's statistics, and site profiles and search forms."""

from __future__ import annotations

import json

import pytest
from textgen import work

from tracker.discovery.queries import LibraryStats, candidates, split_sentences, work_queries
from tracker.discovery.sites import (
    Site,
    SiteError,
    SiteProfile,
    _forms,
    load_profiles,
    result_links,
    search_url,
)

FORMULA = "话说那日众人正在堂上说笑之间忽听外面一阵喧哗"  # in every work: a formula


def _library() -> list[str]:
    return [work(900 + i, 30) + FORMULA + "。" for i in range(12)]


def test_distinctive_sentences_win_and_formulas_dates_repeats_are_skipped():
    texts = _library()
    stats = LibraryStats(texts)
    target = (
        texts[0]
        + "二〇二四年三月五日他在县城车站等了很久很久才上车。"
        + "这句话在本书里说了两次呀呀。" * 2
    )
    queries = work_queries("w0", "寒江夜渡", target, stats, limit=6, author="某人")
    assert queries[0].text == '"寒江夜渡" 某人' and queries[0].kind == "title"
    phrases = [q.text.strip('"') for q in queries[1:]]
    assert len(phrases) == 5
    for p in phrases:
        assert FORMULA not in p  # shared by every work: low score, never chosen
        assert "等了很久很久才上车" not in p  # the sentence holds a date
        assert "这句话在本书里说了两次" not in p
        assert p in target  # a real phrase of the work, as written
        assert 12 <= len(p) <= 38
    # The formula scores below every chosen phrase: the statistics, not the position.
    assert all(stats.score(FORMULA) < stats.score(p) for p in phrases)
    # Spread over the work: the chosen phrases do not all come from its first half.
    half = len(target) // 2
    assert any(target.index(p) > half for p in phrases)


def test_long_sentences_are_cut_at_clauses():
    s = (
        "一二三四五六七八九十甲乙，丙丁戊己庚辛壬癸子丑寅卯，"
        "辰巳午未申酉戌亥天地玄黄宇宙洪荒日月盈昃"
    )
    parts = candidates(s, 30)
    assert parts and all(len(p) <= 30 for p in parts)
    assert parts[0] == "一二三四五六七八九十甲乙，丙丁戊己庚辛壬癸子丑寅卯"
    assert split_sentences("甲。乙！丙？\n丁") == ["甲", "乙", "丙", "丁"]


def test_builtin_profiles_and_a_broken_user_profile(tmp_path):
    profiles = load_profiles()
    assert {"jieqi", "ptcms", "biquge"} <= set(profiles)
    assert profiles["jieqi"].encoding == "gbk"
    (tmp_path / "jieqi.json").write_text(
        json.dumps({"name": "jieqi", "search_path": "/so.php?k={q}", "encoding": "utf-8"})
    )
    assert load_profiles(tmp_path)["jieqi"].search_path == "/so.php?k={q}"  # the user's wins
    (tmp_path / "bad.json").write_text(
        '{"name": "bad", "search_path": "/s?q={q}", "book_link": "("}'
    )
    with pytest.raises(SiteError, match="bad regular expression"):
        load_profiles(tmp_path)
    problems: list[str] = []  # as runs and registrations read them: it costs only itself
    kept = load_profiles(tmp_path, problems)
    assert kept["jieqi"].search_path == "/so.php?k={q}" and "bad" not in kept
    assert len(problems) == 1 and "bad.json" in problems[0]
    (tmp_path / "bad.json").write_text("not json")
    with pytest.raises(SiteError, match=r"bad\.json"):
        SiteProfile.from_file(tmp_path / "bad.json")


def test_search_form_query_encoding_and_result_links():
    html = (
        '<form action="/modules/article/search.php" method="post">'
        '<input type="hidden" name="searchtype" value="articlename">'
        '<input type="text" name="searchkey"><select name="t"><option value="1">书名</option>'
        "</select></form>"
    )
    ((action, field, hidden),) = _forms(html, "http://x.test/")
    assert action == "http://x.test/modules/article/search.php" and field == "searchkey"
    assert hidden == {"searchtype": "articlename", "t": "1"}
    site = Site(url="http://x.test/", search_url="http://x.test/s.php?q={q}", encoding="gbk")
    assert search_url(site, "青石巷记") == "http://x.test/s.php?q=%C7%E0%CA%AF%CF%EF%BC%C7"
    utf = Site(url="http://x.test/", search_url="http://x.test/s?q={q}")
    assert search_url(utf, "青") == "http://x.test/s?q=%E9%9D%92"
    results = (
        '<a href="/book/7/">青石巷记</a><a href="/book/8/">青石巷记外传·续</a>'
        '<a href="http://other.test/book/1/">青石巷记</a><a href="/top">排行榜</a>'
    )
    links = result_links(results, "http://x.test/s?q=1", "青石巷记")
    assert links == ["http://x.test/book/7/", "http://x.test/book/8/"]


@pytest.mark.slow
def test_a_site_without_a_search_is_refused_with_the_way_out():
    from discokit import LocalServer

    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.discovery.sites import find_search

    def route(path: str):
        if path == "/":
            return 200, {"Content-Type": "text/html"}, "<p>没有搜索框</p>".encode()
        return 404, {}, b"not found"

    with LocalServer(route) as srv:
        crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0, retries=0))
        with pytest.raises(SiteError) as err:
            find_search(crawler, srv.base + "/", load_profiles())
    message = str(err.value)
    assert srv.base in message and "--search-url" in message
    assert "jieqi" in message  # the layouts it tried are named


def test_register_site_refuses_bad_input_before_any_fetch(data_dir):
    from tracker.discovery.service import register_site
    from tracker.discovery.sites import SiteRegistry
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    with Library.open(Settings.from_env(data_dir)) as lib:
        with pytest.raises(SiteError, match=r"ftp://x\.test/"):
            register_site(lib, "ftp://x.test/")
        with pytest.raises(SiteError, match=r"has no \{q\}"):
            register_site(lib, "http://x.test/", search_url="http://x.test/search?kw=")
        site = register_site(lib, "http://X.test/", search_url="http://x.test/so?kw={q}")
        assert site.profile == "given" and site.host == "x.test"
        assert [s.host for s in SiteRegistry(lib.store).list()] == ["x.test"]
