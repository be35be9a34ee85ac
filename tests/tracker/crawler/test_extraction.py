"""Main-text extraction (tracker.crawler.extraction).

No network: see conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tracker.crawler import Crawler, extract

from .helpers import Site

pytestmark = pytest.mark.timeout(60)


# --------------------------------------------------------------------------- extraction

ARTICLE = """<!DOCTYPE html><html><head><meta charset="utf-8">
<title>旧书店的下午 - 某某小说网</title></head><body>
<header><nav><a href="/">首页</a> | <a href="/rank">排行榜</a> | <a href="/login">登录注册</a></nav>
</header>
<div class="sidebar"><ul><li><a href="/x">热门推荐一</a></li>
<li><a href="/y">热门推荐二</a></li></ul></div>
<article><h1>旧书店的下午</h1>
<p>{p1}</p>
<p>{p2}</p>
<p>{p3}</p>
</article>
<footer><p>友情链接：某某网站 | 联系我们 | 版权所有 2024 某某小说网 京ICP备00000000号</p></footer>
</body></html>"""

P1 = "书店在一条窄巷的尽头，门口挂着一块褪了色的木牌，上面的字已经看不太清楚。" * 2
P2 = "店主是个头发花白的老人，他说这些书大多是附近人家搬走时留下的，每一本都有自己的故事。" * 2
P3 = "我在角落里找到一本旧诗集，扉页上写着一行小字，日期是四十多年前的一个春天。" * 2


def test_extract_article_drops_boilerplate() -> None:
    title, text = extract(ARTICLE.format(p1=P1, p2=P2, p3=P3), "http://novel.test/a/1")
    assert "旧书店的下午" in title
    for paragraph in (P1, P2, P3):
        assert paragraph[:30] in text
    for boilerplate in ("排行榜", "登录注册", "友情链接", "京ICP备", "热门推荐"):
        assert boilerplate not in text


@pytest.mark.parametrize(
    "markup",
    [
        "<p>只有一点内容，没有闭合",
        "<html><body><div><p>未闭合的段落<div>另一段<span>嵌套</p></body>",
        "<<<>>> 奇怪的 <b 内容",
        '<?xml version="1.0" encoding="gbk"?><html><body><p>带声明的页面</p></body></html>',
        "<html><head><title>只有标题</title></head><body></body></html>",
        "\x00\x01\x02<p>控制字符</p>",
        "<div>" * 3000 + "深层嵌套" + "</div>" * 10,
        "<html><title>没闭合的标题<body><p>正文被吞掉了",
        "",
        "   ",
    ],
    ids=lambda markup: f"{len(markup)}:{markup[:24]!r}",
)
def test_extract_survives_malformed_html(markup: str) -> None:
    title, text = extract(markup, "http://novel.test/bad")
    assert isinstance(title, str) and isinstance(text, str)
    words = (
        "只有一点内容",
        "未闭合的段落",
        "奇怪的",
        "带声明的页面",
        "控制字符",
        "深层嵌套",
        "正文被吞掉了",
    )
    for word in words:
        if word in markup:
            assert word in text
    if "只有标题" in markup:
        assert title == "只有标题"


def test_malformed_page_through_crawler(site: Site, make_crawler: Callable[..., Crawler]) -> None:
    site.page(
        "/bad", "<title>坏页面</title><p>正文还在，<div>只是<b>标签乱了</p></i>".encode("gbk")
    )
    page = make_crawler().crawl_page(site.url("/bad"))
    assert "正文还在" in page.text and page.encoding == "gb18030"
