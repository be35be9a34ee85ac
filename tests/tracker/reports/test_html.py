"""The HTML report (tracker.reports.html)."""

from __future__ import annotations

import fnmatch
import tomllib
from importlib import resources

from repo import REPO

from tracker.library import Library
from tracker.reports import REPORT_CSS, build_report, render_html, report_data, safe_http_url
from tracker.reports.html import template_source

from .helpers import MOTHER


def test_html_report_is_escaped_and_bilingual(library: Library, match_id: str) -> None:
    html = build_report(library, match_id, "html").decode("utf-8")
    assert html.startswith("<!doctype html>")
    for heading in (
        "侵权证据报告",
        "Copyright evidence report",
        "原创作品",
        "Original work",
        "疑似侵权页面",
        "Suspect page",
        "抄袭段落对照",
        "side by side",
        "抓取时间 Fetched at",
        "检测时间 Checked at",
        "已确认侵权 / Confirmed",
    ):
        assert heading in html, heading
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert MOTHER[150:170] in html


def test_template_ships_as_package_data() -> None:
    # The template is read through importlib.resources, as from an installed wheel...
    folder = resources.files("tracker.reports").joinpath("templates")
    source = folder.joinpath("report.html").read_text(encoding="utf-8")
    assert source == template_source()
    assert source.startswith("<!doctype html>") and "{{ d.work.title }}" in source
    assert "|safe" not in source  # every value may come from a pirate page
    # ...and pyproject's package data for `tracker` puts every template file in the wheel.
    root = REPO
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["tracker"]
    templates = root / "tracker" / "reports" / "templates"
    files = [
        p.relative_to(root / "tracker").as_posix() for p in templates.rglob("*") if p.is_file()
    ]
    assert files, "no template files found"
    for name in files:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in globs), name


def test_render_html_uses_the_template(library: Library, match_id: str) -> None:
    data = report_data(library, match_id)
    html = render_html(data)
    # the stylesheet the web app's CSP allows by hash is inlined verbatim (not escaped)
    assert f"<style>{REPORT_CSS}</style>" in html
    assert data["match_id"].replace("\x1f", " / ") in html
    assert safe_http_url("javascript:alert(1)") is None
    assert safe_http_url(" HTTPS://pirate.example/1 ") == "HTTPS://pirate.example/1"


def test_report_of_a_chapter_names_book_and_chapter(library: Library, match_id: str) -> None:
    """A chapter work (the books contract's metadata): the report names the book and
    the chapter as the notices do, in Chinese and English."""
    store = library.store
    before = dict(store.get_mother("novel-1").metadata or {})
    book = {
        "book_id": "xyj",
        "book_title": "西游记",
        "author": "吴承恩",
        "chapter": "第四十一回 心猿遭火败 木母被魔擒",
        "chapter_index": 41,
    }
    store.update_mother_metadata("novel-1", {**before, **book})
    try:
        work = report_data(library, match_id)["work"]
        assert (work["book_id"], work["chapter_index"]) == ("xyj", 41)
        assert work["chapter_zh"] == "《西游记》第四十一回 心猿遭火败 木母被魔擒"
        assert work["chapter_en"] == '"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)'
        html = build_report(library, match_id, "html").decode("utf-8")
        assert "书与章节 Book and chapter" in html and "吴承恩" in html
        assert "《西游记》第四十一回 心猿遭火败 木母被魔擒" in html
        assert "&#34;西游记&#34;, chapter 41" in html or '"西游记", chapter 41' in html
    finally:
        store.update_mother_metadata("novel-1", before)
    assert report_data(library, match_id)["work"]["book_id"] is None
