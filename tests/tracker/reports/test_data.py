"""The report's data (tracker.reports.data) and build_report."""

from __future__ import annotations

import json

import pytest
from textgen import work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.reports import (
    PassageData,
    ReportData,
    SuspectInfo,
    WorkInfo,
    build_report,
    report_data,
)
from tracker.store import NotFound, Suspect

from .helpers import MOTHER


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


def test_report_data_is_what_its_type_says(library: Library, match_id: str) -> None:
    data = report_data(library, match_id)
    assert set(data) == ReportData.__required_keys__
    assert set(data["work"]) == WorkInfo.__required_keys__
    assert set(data["suspect"]) == SuspectInfo.__required_keys__
    assert data["passages"]
    for passage in data["passages"]:
        assert set(passage) == PassageData.__required_keys__
    assert [p["n"] for p in data["passages"]] == list(range(1, len(data["passages"]) + 1))
    # the JSON report is exactly this data
    assert json.loads(build_report(library, match_id, "json")).keys() == data.keys()
