"""Issue #37's leftovers in the web app, on a real system (Flask test client, in-process
worker, embedded Redis): the evidence view's 抓取时间 is the capture's stored time (to
the millisecond) as in the reports, a state reads the same as on the command line, a
re-opened case shows no removal date as its state, and the English UI shows a
platform's English name."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from textgen import work
from webkit import WebSystem, web_system

from tracker.cases.model import state_label
from tracker.common.records import match_id
from tracker.crawler.results import Page
from tracker.documents.readers import Document
from web.ids import encode_id

system = web_system()

TEXT = work(3701, 30)
CAPTURED = datetime(2026, 11, 28, 6, 17, 53, 862000, tzinfo=UTC)
CHECKED = datetime(2026, 11, 28, 6, 17, 55, 140000, tzinfo=UTC)


def _svc(system: WebSystem):  # type: ignore[no-untyped-def]
    from web.casework import cases

    with system.app.app_context():
        return cases()


def _fact(html: str, dd_id: str) -> str:
    found = re.search(rf'<dd id="{dd_id}">(.*?)</dd>', html, re.S)
    assert found, f"no {dd_id} on the page"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


@pytest.mark.slow
def test_the_evidence_view_shows_the_capture_time(system: WebSystem) -> None:
    """The suspect record is dated later than the capture (a check that stores it
    after fetching, as a watched book's run does): the view and the reports show the
    capture's 06:17:53.862, not the record's 06:17:55."""
    lib = system.library
    lib.ingest([Document(id="w-time", title="雾港夜话", text=TEXT)])
    copied = TEXT[: len(TEXT) // 2]
    url = "https://pirate.example/book/1.html"
    html = f"<html><body><p>{copied}</p></body></html>"
    page = Page(
        url=url,
        final_url=url,
        status=200,
        headers={"content-type": "text/html; charset=utf-8"},
        encoding="utf-8",
        raw=html.encode("utf-8"),
        html=html,
        title="雾港夜话 第一章",
        text=copied,
        fetched_at=CAPTURED,
    )
    suspect = page.to_suspect()
    suspect.fetched_at = CHECKED
    result = lib.check_crawled(suspect, [page])
    assert any(m.mother_id == "w-time" for m in result.matches)
    mid = encode_id(match_id(suspect.id, "w-time"))
    viewer = system.client("viewer")
    for lang in ("zh", "en"):
        view = viewer.get(f"/matches/{mid}?lang={lang}").get_data(as_text=True)
        assert "2026-11-28 06:17:53.862 UTC" in view
        assert "06:17:55" not in view
    assert "抓取时间" in viewer.get(f"/matches/{mid}?lang=zh").get_data(as_text=True)
    report = viewer.get(f"/exports/reports/{mid}.html").get_data(as_text=True)
    assert "2026-11-28T06:17:53.862Z" in report and "06:17:55" not in report


@pytest.mark.slow
def test_states_read_as_on_the_command_line_and_a_reopened_case(system: WebSystem) -> None:
    svc = _svc(system)
    opened = svc.open_case(work="w-state", domain="reopen.example", who="test")
    analyst = system.client("analyst")
    for lang in ("zh", "en"):
        board = analyst.get(f"/cases?lang={lang}").get_data(as_text=True)
        assert state_label("open", lang) in board
        page = analyst.get(f"/cases/{opened.id}?lang={lang}").get_data(as_text=True)
        badge = re.search(r'<span id="case-state">(.*?)</span>\s*</span>', page, re.S)
        assert badge and state_label("open", lang) in badge.group(1)
    assert (
        "线索"
        not in analyst.get(f"/cases/{opened.id}?lang=zh")
        .get_data(as_text=True)
        .split('id="case-flow"')[0]
    )
    days = {datetime.now(UTC).strftime("%Y-%m-%d")}  # the day on both sides of midnight
    svc.transition(opened.id, "removed", who="test")
    removed = analyst.get(f"/cases/{opened.id}?lang=en").get_data(as_text=True)
    days.add(datetime.now(UTC).strftime("%Y-%m-%d"))
    assert _fact(removed, "case-removed")[:10] in days
    svc.transition(opened.id, "open", who="test", note="the page came back")
    back = analyst.get(f"/cases/{opened.id}?lang=en").get_data(as_text=True)
    shown = _fact(back, "case-removed")
    assert shown.startswith("—") and "then back online" in shown
    zh = analyst.get(f"/cases/{opened.id}?lang=zh").get_data(as_text=True)
    assert _fact(zh, "case-removed").startswith("—")
    row = analyst.get("/cases?domain=reopen.example&lang=en").get_data(as_text=True)
    cells = row.split("<tbody>")[1].split("</tbody>")[0].split("reopen.example")[1][:400]
    assert not any(day in cells for day in days)


@pytest.mark.slow
def test_english_shows_the_platforms_english_name(system: WebSystem) -> None:
    svc = _svc(system)
    opened = svc.open_case(work="w-plat", domain="weibo.com", who="test")
    analyst = system.client("analyst")
    en = analyst.get(f"/cases/{opened.id}?lang=en").get_data(as_text=True)
    assert _fact(en, "platform-name") == "Sina Weibo" and "新浪微博" not in en
    zh = analyst.get(f"/cases/{opened.id}?lang=zh").get_data(as_text=True)
    assert _fact(zh, "platform-name") == "新浪微博"
