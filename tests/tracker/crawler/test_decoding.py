"""Charset decoding (tracker.crawler.decoding): declared, undeclared and wrong labels.

No network: see conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tracker.crawler import Crawler, cjk_ratio, decode_html

from .helpers import EXPECTED_CODEC, SIMPLIFIED, TEXTS, TRADITIONAL, WRONG_META, Site, article

pytestmark = pytest.mark.timeout(60)


# --------------------------------------------------------------------------- charsets


@pytest.mark.parametrize("encoding", ["utf-8", "gbk", "gb18030", "big5"])
@pytest.mark.parametrize("declaration", ["header", "none", "wrong_header", "wrong_meta"])
def test_charsets_through_server(
    site: Site, make_crawler: Callable[..., Crawler], encoding: str, declaration: str
) -> None:
    title, body = TEXTS[encoding]
    meta = ""
    content_type = "text/html"
    if declaration == "header":
        content_type = f"text/html; charset={encoding}"
    elif declaration == "wrong_header":
        content_type = "text/html; charset=ISO-8859-1"  # a server default, wrong here
    elif declaration == "wrong_meta":
        meta = (
            f'<meta http-equiv="Content-Type" content="text/html; charset={WRONG_META[encoding]}">'
        )
    markup = article(title, body, meta)
    path = f"/cs/{encoding}/{declaration}"
    site.page(path, markup.encode(encoding), content_type)

    page = make_crawler().crawl_page(site.url(path))

    assert page.encoding == EXPECTED_CODEC[encoding]
    assert page.html == markup
    assert body[:20] in page.text
    assert page.title == title


@pytest.mark.parametrize("encoding", ["gbk", "gb18030", "big5", "utf-8"])
def test_decode_short_undeclared_page(encoding: str) -> None:
    title, body = TEXTS[encoding]
    markup = f"<html><body><h1>{title}</h1><p>{body[:80]}</p></body></html>"
    assert 100 <= len(markup) <= 220  # a ~200-character page
    text, codec = decode_html(markup.encode(encoding), None)
    assert (text, codec) == (markup, EXPECTED_CODEC[encoding])


def test_decode_very_short_fragments() -> None:
    for sentence, codec, expected in [
        ("我们出门去找旧书店。", "gbk", "gb18030"),
        ("我們出門去找舊書店。", "big5", "big5hkscs"),
    ]:
        assert decode_html(sentence.encode(codec)) == (sentence, expected)


def test_decode_wrong_labels_and_marks() -> None:
    gbk = article("旧书店", SIMPLIFIED).encode("gbk")
    big5 = article("舊書店", TRADITIONAL).encode("big5")
    # meta says utf-8, header says latin-1: both wrong
    assert decode_html(b'<meta charset="utf-8">' + gbk, "text/html; charset=iso-8859-1")[1] == (
        "gb18030"
    )
    # a Big5 page labelled gb2312 (the labels are siblings and decode each other's bytes)
    assert decode_html(big5, "text/html; charset=gb2312")[1] == "big5hkscs"
    # a GBK page labelled big5
    assert decode_html(gbk, "text/html; charset=big5")[1] == "gb18030"
    # XML declaration
    xml = '<?xml version="1.0" encoding="gbk"?><html><body>旧书店</body></html>'
    assert decode_html(xml.encode("gbk")) == (xml, "gb18030")
    # BOM beats a wrong header
    assert decode_html(b"\xef\xbb\xbf" + SIMPLIFIED.encode(), "text/html; charset=gbk") == (
        SIMPLIFIED,
        "utf-8",
    )
    # a genuinely Western page keeps its single-byte label
    western = "<p>Café déjà vu: naïve résumé, señor Müller.</p>"
    assert decode_html(western.encode("cp1252"), "text/html; charset=windows-1252") == (
        western,
        "cp1252",
    )
    assert decode_html(b"", None) == ("", "utf-8")


def test_decode_nearly_clean_pages() -> None:
    # A UTF-8 page cut inside a character, and a GBK page with a stray byte.
    cut = article("旧书店", SIMPLIFIED).encode("utf-8")[:-20] + "书".encode()[:2]
    text, codec = decode_html(cut, None)
    assert codec == "utf-8" and SIMPLIFIED[:30] in text
    stray = SIMPLIFIED.encode("gbk") + b"\xff" + SIMPLIFIED.encode("gbk")
    text, codec = decode_html(stray, "text/html; charset=gbk")
    assert codec == "gb18030" and text.startswith(SIMPLIFIED)


def test_cjk_ratio_separates_right_and_wrong_decodings() -> None:
    big5 = TRADITIONAL.encode("big5")
    assert cjk_ratio(big5.decode("big5")) > 0.4
    assert cjk_ratio(big5.decode("gb18030", errors="replace")) < 0.1
    assert cjk_ratio("plain ascii") == 0.0
