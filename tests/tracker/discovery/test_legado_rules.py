"""Legado's rule language on real rule shapes (``tracker.discovery.legado.rules``) and the
sources' files, verdicts and requests (``legado.sources``)."""

from __future__ import annotations

import json
import time

import pytest

from tracker.discovery.legado.rules import (
    RuleContext,
    RuleError,
    get_elements,
    get_string,
    get_strings,
    html_to_text,
    needs_js,
    parse_content,
    replace_regex,
)
from tracker.discovery.legado.sources import BookSource, SourceError, judge, load_sources

HTML = """<html><body>
<div class="bookbox"><h4 class="bookname"><a href="/b/1/">寒江夜渡</a></h4>
  <div class="author">作者：林远</div><span>连载</span></div>
<div class="bookbox"><h4 class="bookname"><a href="/b/2/">青石巷记</a></h4>
  <div class="author">作者：苏晴</div></div>
<div class="bookbox"><h4 class="bookname"><a href="/b/3/">第三本</a></h4></div>
<div id="list"><dl><dd><a href="1.html">第一章</a></dd><dd><a href="2.html">第二章</a></dd>
<dd><a href="3.html">第三章</a></dd></dl></div>
<div id="content">第一段<br>第二段<script>ad()</script><p>本站广告 请收藏</p></div>
<a href="/next">下一页</a>
<meta property="og:novel:book_name" content="寒江夜渡">
</body></html>"""


@pytest.fixture
def page():
    return parse_content(HTML).root


def test_default_rules_with_indexes_exclusions_and_getters(page):
    assert len(get_elements(page, "class.bookbox")) == 3
    assert get_string(page, "class.bookbox.0@tag.a@text") == "寒江夜渡"
    assert get_strings(page, "class.bookbox!0@tag.a@text") == ["青石巷记", "第三本"]
    assert get_strings(page, "class.bookbox[-1]@tag.a@text") == ["第三本"]
    assert get_strings(page, "class.bookbox[0:1]@tag.a@text") == ["寒江夜渡", "青石巷记"]
    assert get_strings(page, "class.bookbox[!1]@tag.a@text") == ["寒江夜渡", "第三本"]
    assert get_strings(page, "id.list@tag.a.-1@href") == ["3.html"]
    assert get_strings(page, "tag.dd.0:2@tag.a@text") == ["第一章", "第三章"]
    assert get_string(page, "text.下一页@href") == "/next"
    assert get_string(page, "id.content@textNodes") == "第一段\n第二段"


def test_bare_css_css_prefix_xpath_and_combinators(page):
    assert get_strings(page, ".bookbox a.1@href") == ["/b/2/"]  # the index of all selected
    assert get_strings(page, ".bookname a@href")[:2] == ["/b/1/", "/b/2/"]
    assert get_string(page, "#list dd a.1@text") == "第二章"
    assert get_string(page, "@css:.bookbox:nth-child(2) a@text") == "青石巷记"
    assert get_strings(page, "//div[@id='list']//a/@href") == ["1.html", "2.html", "3.html"]
    assert get_string(page, "@XPath://h4/a/text()").startswith("寒江夜渡")
    assert get_strings(page, "[property$=book_name]@content") == ["寒江夜渡"]
    assert get_string(page, "class.nothing@text||.bookname a.0@text") == "寒江夜渡"
    assert get_strings(page, "#list a.0@text&&#list a.1@text") == ["第一章", "第二章"]
    assert get_strings(page, "#list a.0:1@text%%.bookname a.0:1@text") == [
        "第一章",
        "寒江夜渡",
        "第二章",
        "青石巷记",
    ]


def test_regex_replacement_put_get_and_templates(page):
    assert get_string(page, ".author.0@text##作者：") == "林远"
    assert get_string(page, ".author.0@text##作者：(.*)##$1先生") == "林远先生"
    assert get_string(page, "#list a@text##第(.)章##$1###") == "一\n第二章\n第三章"
    ctx = RuleContext()
    assert get_string(page, '@put:{n:".bookname a.0@text"}.author.0@text', ctx) == "作者：林远"
    assert ctx.vars == {"n": "寒江夜渡"}
    assert get_string(page, "@get:{n}", ctx) == "寒江夜渡"
    assert get_string(page, "书名：{{@@.bookname a.0@text}}") == "书名：寒江夜渡"
    text = html_to_text(get_string(page, "#content@html##本站广告.*"))
    assert text == "第一段\n第二段"


def test_jsonpath_on_a_json_api():
    data = parse_content(
        json.dumps(
            {
                "data": {
                    "list": [{"book_name": "甲", "id": 7, "tags": ["a", "b"]}, {"book_name": "乙"}]
                }
            }
        )
    )
    assert data.is_json
    items = get_elements(data.root, "$.data.list[*]")
    assert len(items) == 2
    assert get_string(items[0], "$.book_name") == "甲"
    assert get_string(items[0], "book_name") == "甲"  # a bare key on JSON
    assert get_string(items[0], "@Json:$.id") == "7"
    assert get_string(items[0], "/api/toc?id={{$.id}}") == "/api/toc?id=7"
    assert get_strings(data.root, "$..book_name") == ["甲", "乙"]
    assert get_string(items[0], "$.tags") == "a\nb"
    assert get_elements(data.root, "-$.data.list[*]")[0] == {"book_name": "乙"}


def test_javascript_is_named_never_run(page):
    for rule in ("<js>result</js>", "@js:result.trim()", "{{java.ajax('x')}}", "{{1+1}}"):
        assert needs_js(rule)
        with pytest.raises(RuleError, match="JavaScript"):
            get_string(page, rule)
    for rule in (
        "{{key}}",
        "{{page}}",
        "{{$.id}}",
        "{{@@class.a@text}}",
        "{{//a/@href}}",
        "a@href",
    ):
        assert not needs_js(rule)


def test_bad_rules_are_one_clear_error_each(page):
    with pytest.raises(RuleError, match="bad regular expression"):
        get_string(page, "text##([a")
    with pytest.raises(RuleError, match="CSS selector"):
        get_string(page, "@css:a[[[@text")
    with pytest.raises(RuleError, match="XPath"):
        get_string(page, "//a[")
    started = time.monotonic()
    with pytest.raises(RuleError, match="took longer"):
        replace_regex("a" * 60 + "!", r"(a|aa)+$", "")
    assert time.monotonic() - started < 5
    many = "<div>" + "<a href='x'>x</a>" * 100_000 + "</div>"
    assert len(get_elements(parse_content(many).root, "a")) == 5000  # bounded


def test_files_are_read_tolerantly_and_each_source_judged():
    text = (
        '\ufeff// shared\n[{"bookSourceName": "甲", "bookSourceUrl": "http://a.test",'
        ' "searchUrl": "/s?q={{key}}", /* c */ "ruleSearch": {"bookList": ".b", "name": "a@text",'
        ' "bookUrl": "a@href"}, "ruleToc": {"chapterList": "#l a"},'
        ' "ruleContent": {"content": "#c@html"},},'
        ' {"bookSourceName": "乙", "bookSourceUrl": "ftp://x"}, 5,'
        ' {"bookSourceName": "丙", "bookSourceUrl": "http://c.test", "bookSourceType": 2},'
        ' {"bookSourceName": "丁", "bookSourceUrl": "http://d.test", "searchUrl": "/s?q={{key}}",'
        ' "ruleSearch": {"bookList": "<js>x</js>", "name": "a"}},]'
    )
    verdicts = [judge(raw) for raw in load_sources(text, "f.json")]
    assert [v.status for v in verdicts] == ["imported", "refused", "refused", "refused", "partial"]
    assert "not an http(s) URL" in verdicts[1].reasons[0]
    assert "JSON object" in verdicts[2].reasons[0]
    assert "bookSourceType 2" in verdicts[3].reasons[0]
    assert verdicts[4].reasons[0] == "search needs JavaScript (ruleSearch.bookList)"
    with pytest.raises(SourceError, match=r"f\.json"):
        load_sources("not json at all", "f.json")


def test_requests_from_url_templates():
    src = BookSource.from_raw(
        {
            "bookSourceUrl": "http://gbk.test/#note",
            "searchUrl": '/modules/search.php,{"method":"POST",'
            '"body":"searchkey={{key}}&p={{page}}",'
            '"charset":"gbk","headers":{"Referer":"http://gbk.test/"}}',
            "header": '{"User-Agent": "Mobile"}',
        }
    )
    req = src.request(src.search_template, key="寒江")
    assert req.url == "http://gbk.test/modules/search.php"
    assert req.method == "POST" and req.body == b"searchkey=%BA%AE%BD%AD&p=1"
    assert dict(req.headers)["Referer"] == "http://gbk.test/"
    assert dict(req.headers)["User-Agent"] == "Mobile"
    assert dict(req.headers)["Content-Type"] == "application/x-www-form-urlencoded"
    get = src.request("/s?q={{key}}&page={{page}}", key="寒 江")
    assert get.url == "http://gbk.test/s?q=%E5%AF%92%20%E6%B1%9F&page=1" and get.method == "GET"
    body = src.request('/api,{"method":"POST","body":{"kw":"{{key}}"}}', key="寒")
    assert json.loads(body.body or b"") == {"kw": "寒"}
    bad = {
        "bookSourceUrl": "http://x.test",
        "searchUrl": '/s,{"charset":"klingon"}',
        "ruleSearch": {"bookList": "a", "name": "a"},
    }
    verdict = judge(bad)
    assert verdict.status == "refused" and "unknown charset 'klingon'" in verdict.reasons[0]
