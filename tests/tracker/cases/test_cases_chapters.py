"""Chapter order: the number a title or link text states (第N章/第N回, Chinese or Arabic
numerals), page order breaking ties, unnumbered items last."""

from __future__ import annotations

import pytest

from tracker.cases.books import chapter_links
from tracker.cases.chapters import chapter_number, chinese_number, in_chapter_order


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("十", 10),
        ("十二", 12),
        ("二十", 20),
        ("一百零五", 105),
        ("三千零七", 3007),
        ("一万二千", 12000),
        ("一二三", 123),
        ("两百", 200),
        ("１２", 12),
        ("305", 305),
        ("abc", None),
        ("", None),
    ],
)
def test_chinese_numerals(text: str, number: int | None) -> None:
    assert chinese_number(text) == number


@pytest.mark.parametrize(
    ("title", "number"),
    [
        ("《雾城旧梦》第三章 夜雨", 3),
        ("第 12 章", 12),
        ("第一百零一回 大结局", 101),
        ("第十节", 10),
        ("Chapter 7: Rain", 7),
        ("3. 夜雨", 3),
        ("最新章节", None),
        ("番外", None),
    ],
)
def test_chapter_number(title: str, number: int | None) -> None:
    assert chapter_number(title) == number


def test_chapter_order_with_page_order_as_tie_breaker() -> None:
    items = ["第三章 c", "番外", "第一章 a", "第二回 b", "第一章 a (重复)", "后记"]
    assert in_chapter_order(items, lambda t: t) == [
        "第一章 a",
        "第一章 a (重复)",
        "第二回 b",
        "第三章 c",
        "番外",
        "后记",
    ]


def test_index_listing_newest_chapter_first_reads_in_chapter_order() -> None:
    html = (
        "<html><body><a href='/book/9/3.html'>最新章节：第三章 夜雨</a><ul>"
        "<li><a href='/book/9/1.html'>第一章</a></li>"
        "<li><a href='/book/9/2.html'>第二章</a></li>"
        "<li><a href='/book/9/3.html'>第三章 夜雨</a></li></ul></body></html>"
    )
    got = chapter_links(html, "http://pirate.example/book/9/index.html")
    assert got == [f"http://pirate.example/book/9/{n}.html" for n in (1, 2, 3)]
