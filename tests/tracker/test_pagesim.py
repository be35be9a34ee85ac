"""tracker.crawler.pagesim: URL and page-structure similarity, near-duplicate filter."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tracker.crawler.pagesim import (
    STRUCTURE_SAME_TEMPLATE,
    URL_NEAR_DUPLICATE,
    URL_SAME_TEMPLATE,
    NearDuplicateFilter,
    canonical_url,
    structure_features,
    structure_simhash,
    structure_similarity,
    url_features,
    url_simhash,
    url_similarity,
)

SIBLINGS = [  # same site, same template, next page
    ("http://a.com/1/2/3/4.php?a=1&b=2", "http://a.com/1/2/3/5.php?a=1"),
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/book/123/457.html"),
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/book/123/9871.html"),
    ("http://www.xbiquge.la/15/15409/8163818.html", "http://www.xbiquge.la/15/15409/8163819.html"),
    (
        "https://m.qidian-copy.net/read.php?bid=998&cid=10021",
        "https://m.qidian-copy.net/read.php?bid=998&cid=10022",
    ),
    ("https://www.69shu.com/txt/36120/26345001", "https://www.69shu.com/txt/36120/26345050"),
    (
        "https://www.piratenovel.cn/html/5/5123/index_2.html",
        "https://www.piratenovel.cn/html/5/5123/index_3.html",
    ),
    (
        "https://book.example.com.cn/novel/sanguo/chapter-12.html",
        "https://book.example.com.cn/novel/sanguo/chapter-13.html",
    ),
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/book/123/456_2.html"),
    ("https://bbs.tieba-copy.com/p/7712345?pn=2", "https://bbs.tieba-copy.com/p/7712345?pn=3"),
]
SAME_HOST = [
    *SIBLINGS,  # plus other pages of the same site
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/book/999/111.html"),
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/"),
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/search.php?q=三国"),
    ("https://www.biquge.com/book/123/456.html", "https://www.biquge.com/top/allvisit_1.html"),
    ("http://www.xbiquge.la/15/15409/8163818.html", "http://www.xbiquge.la/xiaoshuodaquan/"),
    ("https://www.69shu.com/txt/36120/26345001", "https://www.69shu.com/36120/"),
    ("http://a.com/1/2/3/4.php?a=1&b=2", "http://a.com/x/y"),
]
OTHER_HOST = [
    ("https://www.biquge.com/book/123/456.html", "https://www.other.com/book/123/456.html"),
    ("https://www.biquge.com/book/123/456.html", "https://other.com/book/123/457.html"),
    ("http://a.com/1/2/3/4.php?a=1&b=2", "http://b.com/1/2/3/4.php?a=1&b=2"),
    ("http://www.xbiquge.la/15/15409/8163818.html", "http://www.xbiquge.cc/15/15409/8163818.html"),
    ("https://www.69shu.com/txt/36120/26345001", "https://www.69shuba.com/txt/36120/26345001"),
    (
        "https://m.qidian-copy.net/read.php?bid=998&cid=10021",
        "https://m.qidian-mirror.net/read.php?bid=998&cid=10021",
    ),
    (
        "https://book.example.com.cn/novel/sanguo/chapter-12.html",
        "https://book.sample.com.cn/novel/sanguo/chapter-12.html",
    ),
]


def test_url_examples_from_the_spec() -> None:
    close = url_similarity("http://a.com/1/2/3/4.php?a=1&b=2", "http://a.com/1/2/3/5.php?a=1")
    assert close >= URL_SAME_TEMPLATE
    far = url_similarity("http://a.com/1/2/3/4.php?a=1&b=2", "http://b.com/1/2/3/4.php?a=1&b=2")
    assert far < 70 < close
    chapter = url_similarity(
        "https://www.biquge.com/book/123/456.html", "https://www.biquge.com/book/123/457.html"
    )
    mirror = url_similarity(
        "https://www.biquge.com/book/123/456.html", "https://other.com/book/123/456.html"
    )
    assert chapter >= URL_SAME_TEMPLATE > mirror


def test_other_hosts_rank_below_every_same_host_pair() -> None:
    same = [url_similarity(a, b) for a, b in SAME_HOST]
    other = [url_similarity(a, b) for a, b in OTHER_HOST]
    assert max(other) < min(same)
    assert max(other) <= 70 and min(same) >= 70
    # siblings: the same template
    assert all(url_similarity(a, b) >= URL_SAME_TEMPLATE for a, b in SIBLINGS)


def test_url_features_weights() -> None:
    f = url_features("https://www.a.com/book/12/34.html?x=1&y=2#top")
    total = sum(f.values())
    assert total == pytest.approx(4 + 3 + 2 + 0.5 + 0.5)
    assert sum(w for k, w in f.items() if k.startswith(("h:", "d:", "hl:"))) == pytest.approx(4)
    assert sum(w for k, w in f.items() if k.startswith("p")) == pytest.approx(3)
    assert sum(w for k, w in f.items() if k.startswith("q")) == pytest.approx(2)
    assert f["f:top"] == 0.5 and f["s:http"] == 0.5
    # each path segment gets 3 / len(segments)
    assert f["p1:12"] + f["ps1:0"] == pytest.approx(1.0)
    # sub-domains share part of the host weight
    sub = url_features("https://m.a.com/x")
    assert sub["hl:m"] == pytest.approx(0.5) and "d:a.com" in sub


def test_url_respellings_are_identical() -> None:
    u = "https://www.biquge.com/book/123/456.html?cid=9&bid=1"
    for v in [
        "http://biquge.com/book/123/456.html?bid=1&cid=9",
        "HTTPS://WWW.BIQUGE.COM/book/123/456.html?cid=9&bid=1&utm_source=weibo",
        "https://www.biquge.com/book/123/456.html/?cid=9&bid=1&from=list",
    ]:
        assert canonical_url(u) == canonical_url(v)
    assert url_simhash(u) == url_simhash("http://biquge.com/book/123/456.html?bid=1&cid=9")
    # a fragment only weighs 0.5: still the same template
    assert url_similarity(u, u + "#comments") >= URL_SAME_TEMPLATE
    assert canonical_url(u) != canonical_url(u.replace("456", "457"))


PHRASES = [
    "天下大势",
    "分久必合",
    "合久必分",
    "英雄豪杰",
    "桃园结义",
    "刘备",
    "关羽",
    "张飞",
    "曹操",
    "孙权",
    "诸葛亮",
    "赤壁之战",
    "夜色深沉",
    "风起云涌",
    "他微微一笑",
    "说道",
]


CHARS = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]


def _para(rng: random.Random) -> str:
    """A paragraph: stock phrases and random characters (chapters must differ in text as
    real ones do; SimHash puts texts drawn from one small phrase list close together)."""
    return (
        "".join(
            rng.choice(PHRASES) + "".join(rng.choices(CHARS, k=6))
            for _ in range(rng.randint(3, 10))
        )
        + "。"
    )


def chapter_page(rng: random.Random, ch: int, paragraphs: int) -> str:
    """A biquge-style chapter page."""
    body = "".join(f"&nbsp;&nbsp;{_para(rng)}<br /><br />" for _ in range(paragraphs))
    nav = (
        f'<a href="/book/1/{ch - 1}.html">上一章</a><a href="/book/1/">目录</a>'
        f'<a href="/book/1/{ch + 1}.html">下一章</a>'
    )
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>第{ch}章 - 笔趣阁</title>
<link rel="stylesheet" href="/css/style.css"><script src="/js/common.js"></script></head>
<body><div id="wrapper"><div class="header"><div class="logo"><a href="/">笔趣阁</a></div>
<div class="search"><form action="/search.php"><input name="q" class="input">
<button class="btn">搜索</button></form></div></div>
<div class="nav"><ul><li><a href="/">首页</a></li><li><a href="/xuanhuan/">玄幻</a></li></ul></div>
<div class="content_read"><div class="box_con"><div class="con_top"><a href="/">笔趣阁</a></div>
<div class="bookname"><h1>第{ch}章</h1><div class="bottem1">{nav}</div></div>
<div id="content">{body}</div><div class="bottem2">{nav}</div></div></div>
<div class="footer"><p class="copyright">Copyright chapter-{ch}</p></div></div>
<script>tj();</script></body></html>"""


def modern_page(rng: random.Random, ch: int, paragraphs: int) -> str:
    """Another site's template."""
    body = "".join(f"<p class='txt-p p{i}'>{_para(rng)}</p>" for i in range(paragraphs))
    return f"""<html lang="zh"><head><title>{ch}</title><meta name="viewport"></head>
<body class="page-read"><header class="top-bar"><nav><a class="brand">小说网</a>
<span class="user-{ch}">登录</span></nav></header><main><article class="chapter">
<section class="chapter-title"><h2>第{ch}章</h2><time>2024-01-01</time></section>
<section class="chapter-body">{body}</section><aside class="ad-box"><iframe src="/ad"></iframe>
</aside></article><table class="pager"><tr><td><a>上一页</a></td><td><a>下一页</a></td></tr>
</table></main><footer><small>© 小说网</small></footer></body></html>"""


def blog_page(rng: random.Random, post: int, paragraphs: int) -> str:
    body = "".join(f"<p>{_para(rng)}</p>" for _ in range(paragraphs))
    return f"""<html><head><title>x</title></head><body class="single postid-{post}">
<div id="page" class="site"><header class="site-header"><p class="site-title"><a>Blog</a></p>
</header><div class="site-content"><main class="site-main"><article class="post-{post} post">
<h1 class="entry-title">t</h1><div class="entry-content">{body}</div>
<footer class="entry-footer"><span class="cat-links"><a>c</a></span></footer></article></main>
<aside class="widget-area"><section class="widget"><ul><li><a>a</a></li></ul></section></aside>
</div></div></body></html>"""


def test_same_template_scores_high_other_templates_low() -> None:
    rng = random.Random(1)
    same, cross = [], []
    for make in (chapter_page, modern_page, blog_page):
        for _ in range(4):
            a = make(rng, rng.randint(2, 900), rng.randint(10, 60))
            b = make(rng, rng.randint(2, 900), rng.randint(10, 60))
            same.append(structure_similarity(a, b))
    pages = [make(rng, 7, 30) for make in (chapter_page, modern_page, blog_page)]
    for i in range(3):
        for j in range(i + 1, 3):
            cross.append(structure_similarity(pages[i], pages[j]))
    assert min(same) >= STRUCTURE_SAME_TEMPLATE
    assert max(cross) < STRUCTURE_SAME_TEMPLATE - 10
    assert min(same) - max(cross) >= 20


def test_structure_ignores_text_and_normalizes_classes() -> None:
    a = '<html><body><div class="post-12 main"><p>一段文字</p></div></body></html>'
    b = (
        '<html><body><div class="Main post-9876"><p>完全不同的另一段文字，很长很长</p>'
        "</div></body></html>"
    )
    assert structure_simhash(a) == structure_simhash(b)
    feats = structure_features(a)
    assert "html/body/div.main.post-0/p" in feats
    assert feats["html"] > feats["html/body"] > feats["html/body/div.main.post-0/p"]


def test_structure_robust_to_malformed_html() -> None:
    rng = random.Random(2)
    page = chapter_page(rng, 5, 30)
    truncated = page[: len(page) // 2]
    assert structure_similarity(page, truncated) > 60
    assert structure_simhash("") == 0
    assert structure_simhash("<<<>>>") != 1  # parses without raising
    broken = "<div><p>unclosed <b>bold<p>x</div><table><td>cell</div>"
    assert structure_simhash(broken) == structure_simhash(broken)
    assert structure_simhash(b"<html><body><p>bytes</p></body></html>") != 0
    # a fragment is wrapped in html/body; an XML declaration in a str is accepted
    assert structure_simhash("<p>x</p>") == structure_simhash("<html><body><p>y</p></body></html>")
    xml = '<?xml version="1.0" encoding="utf-8"?><html><body><p>x</p></body></html>'
    assert structure_simhash(xml) == structure_simhash("<p>z</p>")


def test_near_duplicate_filter_memory() -> None:
    rng = random.Random(3)
    f = NearDuplicateFilter()
    text_rng = random.Random(10)
    page = chapter_page(text_rng, 5, 30)
    url = "https://www.biquge.com/book/123/5.html"
    assert not f.check_and_add(url, page)
    assert len(f) == 1
    # the same URL respelled: duplicate even without HTML
    assert f.is_near_duplicate("http://biquge.com/book/123/5.html?utm_source=x")
    # the same chapter on a mirror path of the same site: same text, same template
    assert f.is_near_duplicate("https://www.biquge.com/book/123/5_1.html", page)
    # the next chapter: same template, other text -> not a duplicate
    nxt = chapter_page(rng, 6, 30)
    assert not f.is_near_duplicate("https://www.biquge.com/book/123/6.html", nxt)
    assert not f.is_near_duplicate("https://www.biquge.com/book/123/6.html")
    # the same page on another site is what the crawler looks for: never skipped
    assert not f.is_near_duplicate("https://other.com/book/123/5.html", page)
    # optional URL-only rule
    loose = NearDuplicateFilter(url_only_threshold=URL_NEAR_DUPLICATE)
    loose.add(url)
    variants = [
        url + "?p=2",
        url.replace("5.html", "6.html"),
        url.replace("123", "124"),
        url.replace("/5.html", "/5/"),
    ]
    looser = NearDuplicateFilter(url_only_threshold=85.0)
    looser.add(url)
    outcomes = []
    for variant in variants:
        sim = url_similarity(url, variant)
        assert loose.is_near_duplicate(variant) == (sim >= URL_NEAR_DUPLICATE)
        assert looser.is_near_duplicate(variant) == (sim >= 85.0)
        assert not f.is_near_duplicate(variant)  # default: no URL-only similarity rule
        outcomes.append(sim >= 85.0)
    # at 85 even the next chapter would be skipped: why the default has no URL-only rule
    assert all(outcomes)
    f.clear()
    assert len(f) == 0 and not f.is_near_duplicate(url, page)


def test_near_duplicate_filter_shared_in_redis(redis_client: Any) -> None:
    page = chapter_page(random.Random(4), 8, 20)
    a = NearDuplicateFilter(redis=redis_client, prefix="yinji", name="crawl")
    b = NearDuplicateFilter(redis=redis_client, prefix="yinji", name="crawl")
    a.add("https://x.com/b/1/8.html", page)
    assert b.is_near_duplicate("https://x.com/b/1/8.html#top")
    assert b.is_near_duplicate("https://x.com/b/1/8_2.html", page)
    assert not b.check_and_add("https://x.com/b/1/9.html", chapter_page(random.Random(5), 9, 20))
    assert len(a) == 2
    assert [k.decode() for k in redis_client.scan_iter(match="*")] == ["yinji:neardup:crawl"]
    a.clear()
    assert redis_client.exists("yinji:neardup:crawl") == 0
