"""A page discovery only follows (a site search, a chapter list) is decoded and its
links parsed without extracting its main text; a page to check is read in full."""

from __future__ import annotations

from tracker.crawler.crawler import read_page
from tracker.discovery.run import read_links

INDEX = (
    "<html><head><meta charset='gbk'><title>青石巷记最新章节</title></head><body>"
    "<div id='list'><dl>"
    + "".join(f"<dd><a href='/book/1/{c}.html'>第{c}章 入巷</a></dd>" for c in range(1, 6))
    + "</dl></div><a href='/book/1/index_2.html'>下一页</a></body></html>"
).encode("gbk")


def test_read_links_decodes_and_keeps_the_links_without_extraction():
    url = "http://pirate.test/book/1/"
    ctype = "text/html; charset=gbk"
    light = read_links(INDEX, ctype, "text/html", url)
    full = read_page(INDEX, ctype, "text/html", url, True)
    # The same decoding and the same links as a full read (what following needs) ...
    assert light.html == full.html and "青石巷记" in light.html
    assert light.encoding == full.encoding
    assert light.links == full.links
    assert [link.url for link in light.links][:2] == [
        "http://pirate.test/book/1/1.html",
        "http://pirate.test/book/1/2.html",
    ]
    assert light.links[-1].text == "下一页"
    # ... and no main text or title: nothing on such a page is checked.
    assert (light.title, light.text) == ("", "")
    assert full.title  # a full read extracts them


def test_read_links_of_a_plain_text_page_has_no_links():
    light = read_links(
        "第一章 入巷".encode(), "text/plain; charset=utf-8", "text/plain", "http://x.test/a.txt"
    )
    assert light.links == [] and light.html == "第一章 入巷"
