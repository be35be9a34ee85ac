"""Evidence reports (JSON, HTML, PDF) of a real match, and the list exports."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator

import pytest
from textgen import work

from tracker.config import Settings
from tracker.documents import Document
from tracker.library import Library
from tracker.reports import build_report, render_match_list
from tracker.store import MatchQuery, NotFound, Suspect

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
MOTHER = work(7001, 30)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    # One library for the module: opening and closing the embedded Redis costs seconds.
    lib = Library.open(Settings(data_dir=tmp_path_factory.mktemp("reports") / "data"))
    try:
        lib.ingest(
            [Document(id="novel-1", title="长篇小说 第一章", text=MOTHER, source="novel.txt")]
        )
        yield lib
    finally:
        lib.close()


@pytest.fixture(scope="module")
def match_id(library: Library) -> str:
    text = "广告" * 20 + MOTHER[100:900] + HOSTILE + "本站收集整理" * 10
    result = library.check_suspect(
        Suspect(
            id="pirate-1",
            text=text,
            title=f"盗版{HOSTILE}",
            url="http://pirate.example/1.html",
            raw=b"<html>raw page</html>",
        )
    )
    assert result.matches
    mid = result.matches[0].id
    library.store.set_verdict(mid, "confirmed", f"已通知平台 {HOSTILE}")
    return mid


def test_json_report(library: Library, match_id: str) -> None:
    data = json.loads(build_report(library, match_id, "json"))
    assert data["match_id"] == match_id
    assert data["work"]["id"] == "novel-1" and data["work"]["title"] == "长篇小说 第一章"
    assert data["suspect"]["url"] == "http://pirate.example/1.html"
    assert data["suspect"]["fetched_at"].endswith("Z") and data["suspect"]["checked_at"]
    assert len(data["suspect"]["sha256"]) == 64 and len(data["suspect"]["raw_sha256"]) == 64
    assert data["verdict"] == "confirmed" and data["note"].startswith("已通知平台")
    assert 0 < data["score"] <= 1 and 0 < data["coverage"] <= 1
    assert data["passages"]
    for p in data["passages"]:
        assert p["suspect_text"] and p["mother_text"]
        assert p["mother_text"] == MOTHER[p["mother_start"] : p["mother_end"]]
        assert 0 <= p["similarity"] <= 1
    assert data["warnings"] == []


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


def test_pdf_report(library: Library, match_id: str) -> None:
    pdf = build_report(library, match_id, "pdf")
    assert pdf.startswith(b"%PDF")
    assert len(pdf) > 3000
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) >= 1
    text = "".join(page.extract_text() for page in reader.pages)
    compact = re.sub(r"\s+", "", text)
    for needle in (
        "侵权证据报告",
        "Copyrightevidencereport",
        "长篇小说第一章",
        "pirate.example",
        "已确认侵权",
        "<script>alert(1)</script>",
    ):
        assert needle in compact, needle
    assert re.sub(r"\s+", "", MOTHER[200:230]) in compact  # the passage text layer


def test_pdf_long_passage_spans_pages(library: Library) -> None:
    long_work = work(7002, 400)  # ~14,000 characters copied whole
    library.ingest([Document(id="long", title="长文", text=long_work)])
    res = library.check_suspect(Suspect(id="copy", text=long_work, title="全文照抄"))
    match = next(m for m in res.matches if m.mother_id == "long")
    pdf = build_report(library, match.id, "pdf")
    pypdf = pytest.importorskip("pypdf")
    assert len(pypdf.PdfReader(io.BytesIO(pdf)).pages) >= 5


def test_report_of_replaced_work_and_unknown_match(library: Library, match_id: str) -> None:
    with pytest.raises(ValueError, match="report format"):
        build_report(library, match_id, "docx")
    with pytest.raises(NotFound):
        build_report(library, "no\x1fsuch", "json")
    # a re-imported work: the report warns that offsets may have moved
    other = work(7003, 30)
    library.ingest([Document(id="novel-2", title="第二部", text=other)])
    res = library.check_suspect(Suspect(id="pirate-2", text=other[:800]))
    mid = next(m.id for m in res.matches if m.mother_id == "novel-2")
    assert json.loads(build_report(library, mid, "json"))["warnings"] == []
    library.ingest([Document(id="novel-2", title="第二部", text=other + "新增")])
    data = json.loads(build_report(library, mid, "json"))
    assert any("re-imported" in w for w in data["warnings"])
    assert build_report(library, mid, "pdf").startswith(b"%PDF")


def test_report_survives_control_characters(library: Library) -> None:
    from tracker.reports import render_html, render_pdf, report_data

    text = MOTHER[:700] + "\x00\x07\x1b" + "尾"
    res = library.check_suspect(Suspect(id="ctrl", text=text, title="控制\x0b字符"))
    assert res.matches
    assert build_report(library, res.matches[0].id, "pdf").startswith(b"%PDF")
    data = report_data(library, res.matches[0].id)
    data["note"] = "lone surrogate \ud83d here"  # as hostile JSON could carry
    assert render_pdf(data).startswith(b"%PDF")
    assert "lone surrogate" in render_html(data)


def test_match_list_csv_and_json(library: Library, match_id: str) -> None:
    library.check_suspect(
        Suspect(
            id="formula", text=MOTHER[:800], title="=cmd|' /C calc'!A0", url="http://f.example/"
        )
    )
    matches = [
        m
        for m in library.store.query_matches(MatchQuery(limit=100))
        if m.suspect_id in ("pirate-1", "formula")
    ]
    body = render_match_list(matches, "csv")
    assert body.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    assert {r["suspect_id"] for r in rows} == {"pirate-1", "formula"}
    formula = next(r for r in rows if r["suspect_id"] == "formula")
    assert formula["suspect_title"].startswith("'=")
    hostile = next(r for r in rows if r["suspect_id"] == "pirate-1")
    assert hostile["verdict"] == "confirmed" and hostile["suspect_title"] == f"盗版{HOSTILE}"
    data = json.loads(render_match_list(matches, "json"))
    assert data["count"] == len(matches) and data["matches"][0]["match_id"]
    with pytest.raises(ValueError):
        render_match_list(matches, "xml")
