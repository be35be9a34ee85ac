"""The input rules of ``tracker.common.rules``: one answer for the web forms, the REST API,
the job API, the tasks and the stores."""

from __future__ import annotations

import re

import pytest

from tracker.common.records import SORTS, VERDICTS
from tracker.common.rules import (
    MAX_NOTE_LENGTH,
    MAX_URL_LENGTH,
    check_document_item,
    check_note,
    check_sort,
    check_text_item,
    check_url,
    check_verdict,
    default_title,
    domain_of,
    normalize_domain,
    url_problem,
)
from tracker.documents.readers import Document, read_bytes


def test_check_url_strips_and_keeps_good_urls() -> None:
    assert check_url("  https://Pirate.example/书/1?q=字  ") == "https://Pirate.example/书/1?q=字"
    assert check_url("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080/x"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "non-empty URL"),
        (None, "non-empty URL"),
        (42, "non-empty URL"),
        ("javascript:alert(1)", "not an http(s) URL"),
        ("file:///etc/passwd", "not an http(s) URL"),
        ("https://", "not an http(s) URL"),
        ("ftp://x.example/", "not an http(s) URL"),
        ("http://x.example:99999/", "not a valid URL"),
        ("http://[::1/", "not a valid URL"),
        ("http://user:pw@x.example/", "credentials"),
        ("http://x.example/\t/y", "control characters"),
        ("http://x.example/a\r\nSet-Cookie: a=b", "control characters"),
        ("https://x.example/" + "a" * MAX_URL_LENGTH, f"longer than {MAX_URL_LENGTH}"),
    ],
)
def test_check_url_refuses_with_a_reason(url: object, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        check_url(url)
    assert reason in (url_problem(url) or "")


def test_check_url_names_where() -> None:
    with pytest.raises(ValueError, match=r"^urls\[3\]: not an http"):
        check_url("mailto:a@b.example", "urls[3]")
    assert url_problem("https://ok.example/") is None


def test_domains() -> None:
    assert domain_of("https://WWW.Example.COM.:443/x") == "www.example.com"
    assert domain_of("http://[::1/") == ""
    assert domain_of("not a url") == ""
    assert normalize_domain("  .Example.com. ") == "example.com"
    assert normalize_domain("https://Sub.Example.com/path") == "sub.example.com"
    assert normalize_domain("") == ""


def test_default_title_is_the_first_line_shortened_to_80() -> None:
    assert default_title("\n\n  第一章 风起  \n正文") == "第一章 风起"
    assert default_title("字" * 200) == "字" * 79 + "…"
    assert default_title("   \n  ") == ""


def test_the_readers_use_the_same_default_title() -> None:
    text = "\n  第一章 风起云涌" + "字" * 100 + "\n正文。"
    (doc,) = read_bytes(text.encode("utf-8"), "chapter.txt")
    assert isinstance(doc, Document) and doc.title == default_title(text, "chapter")
    (line,) = read_bytes(('{"id": "a", "text": "%s"}' % ("字" * 90)).encode(), "a.jsonl")
    assert isinstance(line, Document) and line.title == "字" * 79 + "…"


def test_verdict_note_and_sort() -> None:
    for verdict in VERDICTS:
        assert check_verdict(verdict) == verdict
    with pytest.raises(ValueError, match="verdict must be one of pending"):
        check_verdict("maybe")
    with pytest.raises(ValueError, match="verdict must be one of"):
        check_verdict(None)
    assert check_note(None) is None and check_note("律师函") == "律师函"
    with pytest.raises(ValueError, match="note must be a string"):
        check_note(5)
    with pytest.raises(ValueError, match=f"longer than {MAX_NOTE_LENGTH}"):
        check_note("x" * (MAX_NOTE_LENGTH + 1))
    assert [check_sort(s) for s in SORTS] == list(SORTS)
    with pytest.raises(ValueError, match="sort must be one of -score"):
        check_sort("id")


def test_text_items() -> None:
    assert check_text_item(
        {"text": "正文", "id": 7, "title": "", "url": " https://x.example/ "}
    ) == {
        "text": "正文",
        "id": "7",
        "url": "https://x.example/",
    }
    cases = [
        ("nope", "expected an object"),
        ({"title": "t"}, "missing 'text'"),
        ({"text": "   "}, "missing 'text'"),
        ({"text": "a", "title": ["x"]}, "'title' must be a string"),
        ({"text": "a", "id": True}, "'id' must be a string or a number"),
        ({"text": "a", "id": {"x": 1}}, "'id' must be a string or a number"),
        ({"text": "a", "id": "x" * 257}, "'id' longer than 256"),
        ({"text": "a", "id": "  "}, "'id' must not be blank"),
        ({"text": "a", "url": "file:///etc/passwd"}, r"texts\[2\]\.url: not an http"),
    ]
    for item, reason in cases:
        with pytest.raises(ValueError, match=reason):
            check_text_item(item, "texts[2]")


def test_document_items() -> None:
    item = {"id": 12, "text": "\n第一章\n正文", "metadata": {"a": 1}, "author": "某"}
    assert check_document_item(item, "documents[0]", source="api") == {
        "id": "12",
        "title": "第一章",
        "text": "\n第一章\n正文",
        "source": "api",
        "metadata": {"a": 1, "author": "某"},
    }
    # Without a source given, the position names it.
    assert check_document_item({"id": "x", "text": "t"}, "documents[4]")["source"] == "documents[4]"
    cases = [
        ([], "expected an object"),
        ({"text": "t"}, "missing 'id'"),
        ({"id": " ", "text": "t"}, "'id' must not be blank"),
        ({"id": False, "text": "t"}, "'id' must be a string or a number, got bool"),
        ({"id": [1], "text": "t"}, "'id' must be a string or a number, got list"),
        ({"id": "x", "text": "t", "n": float("nan")}, "NaN and Infinity"),
        ({"id": "x", "text": "t", "metadata": {"b": 2**64}}, "integer out of the 64-bit"),
        ({"id": "x"}, "missing 'text'"),
        ({"id": "x", "text": "t", "title": 3}, "'title' must be a string"),
        ({"id": "x", "text": "t", "metadata": [1]}, "'metadata' must be an object"),
        ({"id": "x", "text": "t", "source": 1}, "'source' must be a string"),
    ]
    for bad, reason in cases:
        with pytest.raises(ValueError, match=rf"^documents\[1\]: {reason}"):
            check_document_item(bad, "documents[1]")


def test_titles_of_files_are_headlines_or_the_file_name() -> None:
    # Issue #14: .txt titles were the first line cut at 80 characters mid-sentence.
    from tracker.common.rules import default_title, shorten
    from tracker.documents.readers import read_bytes

    body = "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。" * 6
    headline = "第一回　宴桃园豪杰三结义"
    assert default_title(headline + "\n" + body, "sgyy-001") == headline
    assert default_title(body + "\n" + body, "春晓") == "春晓"  # a sentence is no title
    assert default_title(body, "春晓") == "春晓"  # one line: text, not a title
    long_line = "话说" + "天下大势分久必合合久必分" * 8 + "\n" + body
    assert default_title(long_line, "chapter") == "chapter"
    (doc,) = read_bytes(body.encode("utf-8"), "novels/水浒传 第一回.txt")
    assert doc.title == "水浒传 第一回" and doc.id
    # Without a file name (pasted text) the first line, shortened where a word ends, with "…".
    pasted = default_title("He walked along the river bank " * 5)
    assert pasted.endswith("…") and len(pasted) <= 80
    assert pasted[:-1].endswith(("bank", "river", "walked", "along", "the", "He"))
    assert shorten("短标题") == "短标题"
