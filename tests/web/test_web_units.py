"""Pieces of the web app that need no server: highlighting, charts, filters, the message
catalogues, and the ``serve``/``demo``/``user`` commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo import REPO
from werkzeug.datastructures import MultiDict

from web.charts import bar_list, time_chart, verdict_chart
from web.core import parse_match_filters
from web.highlight import segments

WEB = REPO / "web"


# --- highlight ---------------------------------------------------------------------------------
def test_segments_cover_the_text_once() -> None:
    text = "abcdefghijklmnopqrstuvwxyz"
    segs = segments(text, [(2, 5, 1), (4, 9, 2), (20, 22, 3)])
    assert "".join(s.text for s in segs) == text
    assert [(s.text, s.passage) for s in segs if s.passage] == [("cde", 1), ("fghi", 2), ("uv", 3)]


def test_segments_clipped_passage_keeps_its_anchor() -> None:
    segs = segments("0123456789", [(0, 8, 1), (2, 5, 2)])
    assert [s.passage for s in segs if s.passage] == [1, 2]
    assert [s.text for s in segs if s.passage == 2] == [""]


def test_segments_long_text_as_excerpts() -> None:
    text = "x" * 10_000 + "COPIED" + "y" * 10_000
    segs = segments(text, [(10_000, 10_006, 1)], full_limit=1000, context=10)
    assert [s.text for s in segs if s.passage] == ["COPIED"]
    assert segs[0].gap and segs[-1].gap
    assert sum(len(s.text) for s in segs) < 100


def test_segments_out_of_range_offsets() -> None:
    segs = segments("short", [(3, 99, 1), (-5, 1, 2)])
    assert "".join(s.text for s in segs) == "short"


# --- charts ------------------------------------------------------------------------------------
def test_time_chart_fills_missing_days() -> None:
    chart = time_chart([("2024-05-01", 3), ("2024-05-04", 1)])
    assert len(chart.bars) == 14  # at least two weeks on the axis
    assert [b.label for b in chart.bars][-4:] == [
        "2024-05-01",
        "2024-05-02",
        "2024-05-03",
        "2024-05-04",
    ]
    assert [b.value for b in chart.bars][-4:] == [3, 0, 0, 1]
    assert chart.total == 4 and chart.unit == "day"
    tallest = max(chart.bars, key=lambda b: b.h)
    assert tallest.label == "2024-05-01"
    assert [v for _, v in chart.yticks] == [0, 1, 2, 3]
    ticks = [v for _, v in time_chart([("2024-05-01", 37)]).yticks]
    assert ticks == [0, 10, 20, 30, 40]


def test_time_chart_by_month_for_long_ranges() -> None:
    chart = time_chart([("2023-01-15", 2), ("2023-06-01", 5), ("2023-06-20", 1)])
    assert chart.unit == "month" and len(chart.bars) == 6
    assert chart.bars[-1].value == 6
    assert time_chart([]).bars == []


def test_bar_list_and_verdicts() -> None:
    bars = bar_list([("a" * 30, 10, "/x"), ("b", 5, None)])
    assert bars.bars[0].w > bars.bars[1].w
    assert bars.bars[0].label.endswith("…")
    from web.charts import shorten

    assert shorten("旧城区启动加装电梯试点 首批十二个小区", 14) == "旧城区启动加装电梯试点 首…"
    assert shorten("blog.copycat.example", 14) == "blog.copycat.example"
    assert shorten("短标题", 14) == "短标题"
    chart = verdict_chart({"pending": 1, "confirmed": 3, "dismissed": 0})
    assert chart["total"] == 4
    assert [s["value"] for s in chart["segments"]] == [3, 1, 0]
    assert verdict_chart({})["total"] == 0


# --- filters ------------------------------------------------------------------------------------
def test_parse_filters() -> None:
    f = parse_match_filters(
        MultiDict(
            {
                "verdict": "confirmed",
                "min_score": "0.5",
                "work": "w1",
                "domain": "https://www.x.example/a",
                "since": "2024-05-01",
                "until": "2024-05-31",
                "q": " 标题 ",
                "sort": "-created_at",
                "page": "3",
                "per_page": "10",
            }
        )
    )
    q = f.query
    assert (q.verdict, q.min_score, q.mother_id, q.domain, q.search, q.sort) == (
        "confirmed",
        0.5,
        "w1",
        "www.x.example",
        "标题",
        "-created_at",
    )
    assert q.until.isoformat().startswith("2024-06-01")  # the whole last day is included
    assert (q.offset, q.limit, f.page) == (20, 10, 3)
    with pytest.raises(ValueError, match="min_score must not be above"):
        parse_match_filters(MultiDict({"min_score": "0.9", "max_score": "0.1"}))
    with pytest.raises(ValueError, match="since must be before until"):
        parse_match_filters(MultiDict({"since": "2024-05-02", "until": "2024-05-01"}))
    with pytest.raises(ValueError, match="per_page"):
        parse_match_filters(MultiDict({"per_page": "100000"}))


# --- query integers: one parser, clear messages -------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", 7), ("  ", 7), ("0", 0), (" 12 ", 12), ("+3", 3), ("50", 50)],
)
def test_query_int_reads_whole_numbers(raw: str, expected: int) -> None:
    from web.core import query_int

    assert query_int(MultiDict({"limit": raw}), "limit", 7, 0, 50) == expected
    assert query_int(MultiDict(), "limit", 7, 0, 50) == 7


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("abc", "limit must be a whole number, got 'abc'"),
        ("1.5", "limit must be a whole number, got '1.5'"),
        ("1_000", "limit must be a whole number, got '1_000'"),
        ("１２", "limit must be a whole number, got '１２'"),  # full-width digits
        ("9" * 5000, "limit must be a whole number, got '" + "9" * 40 + "…'"),
        ("-1", "limit must be between 0 and 50, got -1"),
        ("51", "limit must be between 0 and 50, got 51"),
    ],
)
def test_query_int_names_the_parameter_and_the_value(raw: str, message: str) -> None:
    from web.core import query_int

    with pytest.raises(ValueError) as caught:
        query_int(MultiDict({"limit": raw}), "limit", 7, 0, 50)
    assert str(caught.value) == message


def test_every_integer_parameter_of_the_api_answers_400_the_same_way() -> None:
    """The works, matches and cases lists parse limit/offset with the one parser."""
    from flask import Flask

    from web.core import ApiError, int_arg

    app = Flask(__name__)
    with app.test_request_context("/api/v1/cases?limit=x&offset=-2"):
        with pytest.raises(ApiError) as caught:
            int_arg("limit", 50, 0, 200)
        assert caught.value.code == 400
        assert caught.value.description == "limit must be a whole number, got 'x'"
        with pytest.raises(ApiError, match="offset must be between 0 and 10"):
            int_arg("offset", 0, 0, 10**12)
    retyped = [
        str(path.relative_to(REPO))
        for path in WEB.rglob("*.py")
        if re.search(r"\bint\((request\.)?args|\bint\(raw\)", path.read_text(encoding="utf-8"))
        and path.name != "core.py"
    ]
    assert retyped == []


# --- catalogues -----------------------------------------------------------------------------------
def _message_ids() -> set[str]:
    pattern = re.compile(r"""\b_\(\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""")
    ids: set[str] = set()
    for path in [*WEB.rglob("*.html"), *WEB.rglob("*.py")]:
        for m in pattern.finditer(path.read_text(encoding="utf-8")):
            ids.add(m.group(1) if m.group(1) is not None else m.group(2))
    return ids


def test_every_message_has_a_chinese_and_an_english_text() -> None:
    zh = json.loads((WEB / "translations" / "zh.json").read_text(encoding="utf-8"))
    en = json.loads((WEB / "translations" / "en.json").read_text(encoding="utf-8"))
    ids = _message_ids()
    assert len(ids) > 100
    assert sorted(i for i in ids if i not in zh) == []
    assert sorted(i for i in ids if i not in en) == []
    assert set(zh) == set(en)
    for key, value in zh.items():  # placeholders survive translation
        assert set(re.findall(r"{(\w+)}", key)) == set(re.findall(r"{(\w+)}", value)), key


def test_translate_outside_a_request() -> None:
    from web.i18n import translate

    assert translate("Library", "zh") == "作品库"
    assert translate("Library", "en") == "Library"
    assert translate("{n} in total", "zh", n=3) == "共 3 条"
    assert translate("no such message {x}", "zh", x="<b>") == "no such message <b>"


# --- commands ------------------------------------------------------------------------
def _run(data_dir: Path, *args: str, input: str | None = None) -> object:
    from tracker.cli import main

    return CliRunner().invoke(
        main, ["--data-dir", str(data_dir), *args], input=input, catch_exceptions=False
    )


def test_user_commands(tmp_path: Path) -> None:
    from tracker.plumbing.config import Settings
    from tracker.store import open_store
    from web import accounts

    data = tmp_path / "data"
    result = _run(data, "user", "add", "root", "--role", "admin", "--password", "pw-123456")
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    assert token.startswith("yj_")
    result = _run(data, "user", "add", "ann", "--role", "viewer", input="pw-abcdefg\npw-abcdefg\n")
    assert result.exit_code == 0, result.output
    result = _run(data, "user", "add", "ann", "--role", "viewer", "--password", "pw-abcdefg")
    assert result.exit_code != 0 and "already exists" in result.output
    # Issue #14: `user add alice < /dev/null` warned (GetPassWarning) and aborted.
    result = _run(data, "user", "add", "alice", "--role", "admin", input="")
    assert result.exit_code == 2 and "use --password" in result.output
    assert "Warning" not in result.output
    result = _run(data, "user", "add", "bob", "--password", "short")
    assert result.exit_code != 0 and "at least 8" in result.output
    listing = _run(data, "user", "list").output
    assert "root\tadmin\ttoken" in listing and "ann\tviewer" in listing
    new = _run(data, "user", "token", "root").output.strip()
    assert new.startswith("yj_") and new != token
    assert _run(data, "user", "token", "ghost").exit_code != 0
    assert _run(data, "user", "password", "ann", "--password", "pw-new-4567").exit_code == 0
    assert _run(data, "user", "delete", "ann").exit_code == 0
    store = open_store(Settings(data_dir=data))
    try:
        assert accounts.user_for_token(store, new).username == "root"
        assert accounts.user_for_token(store, token) is None
        assert accounts.authenticate(store, "root", "pw-123456") is not None
        assert store.get_user("ann") is None
    finally:
        store.close()


def test_demo_loads_matches(tmp_path: Path) -> None:
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    data = tmp_path / "demo"
    result = _run(data, "demo", "--no-serve")
    assert result.exit_code == 0, result.output
    assert "demo" in result.output and "yinji-demo" in result.output
    lib = Library.open(Settings(data_dir=data))
    try:
        store = lib.store
        assert store.count_mothers() == 6
        assert store.count_suspects() == 6
        from tracker.store import MatchQuery

        matches = store.query_matches(MatchQuery(limit=100))
        assert {m.mother_id for m in matches} >= {
            "lighthouse",
            "tea-hills",
            "elevator-news",
            "starriver-1",
            "watchmaker",
        }
        assert {m.verdict for m in matches} == {"pending", "confirmed", "dismissed"}
        days = {m.created_at.date() for m in matches}
        assert len(days) >= 4  # spread over time, for the analytics page
        assert not [m for m in matches if m.suspect_id == "demo-s5"]  # the unrelated page
        assert store.get_user("demo").role == "admin"
        _assert_honest_times(lib, matches)
    finally:
        lib.close()
    assert _run(data, "demo", "--no-serve").exit_code == 0  # idempotent
    lib = Library.open(Settings(data_dir=data))
    try:
        _assert_honest_times(lib, lib.store.query_matches(MatchQuery(limit=100)))
    finally:
        lib.close()
    from tracker.cases import CaseService, open_case_store

    svc = CaseService(open_case_store(Settings(data_dir=data)))
    try:
        # The confirmed page went through the case workflow: one case, once.
        [case] = svc.list_cases()
        assert (case.work, case.domain, case.state) == (
            "starriver-1",
            "www.free-novel-site.example",
            "open",
        )
        assert [e.kind for e in svc.history(case.id)] == ["created", "url_added"]
        assert svc.profile().missing() == []  # the notice can be previewed in the demo
    finally:
        svc.store.close()


def _assert_honest_times(lib: object, matches: list) -> None:
    """Issue 15: imported < received < checked < verdict for every match of the demo,
    as the evidence report reads them, with no contradiction flagged."""
    from tracker.reports.data import report_data

    for m in matches:
        data = report_data(lib, m.id)  # type: ignore[arg-type]
        assert data["timeline_problems"] == [], (m.id, data["timeline"])
        at = {e["event"]: e["at"] for e in data["timeline"]}
        assert "fetched" not in at  # the demo's texts were never fetched
        assert at["imported"] < at["submitted"] < at["checked"], at
        if m.verdict != "pending":
            assert at["checked"] < at["verdict"], at


def test_demo_texts_are_original_and_short() -> None:
    for name in ("mothers.jsonl", "suspects.jsonl"):
        lines = (WEB / "demo" / name).read_text(encoding="utf-8").splitlines()
        assert lines
        for line in lines:
            item = json.loads(line)
            assert 100 < len(item["text"]) < 1000


def test_blueprints_do_not_import_each_other() -> None:
    """Shared pieces live in web/core, serializers, uploads, evidence: a blueprint that
    imports another drags its routes' module state along and hides a dependency."""
    import ast

    handlers = REPO / "web" / "handlers"
    names = {p.stem for p in handlers.glob("*.py")} - {"__init__"}
    offenders = {}
    for path in sorted(handlers.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                siblings = (
                    {module.split(".")[0]}
                    if node.level == 1 and module
                    else {a.name for a in node.names}
                    if node.level == 1
                    else {module.removeprefix("web.handlers.")}
                    if module.startswith("web.handlers.")
                    else set()
                )
                if siblings & names:
                    offenders.setdefault(path.stem, set()).update(siblings & names)
    assert offenders == {}


def test_safe_next_keeps_only_paths_on_this_site() -> None:
    from web.core import safe_next

    for good in ("/matches", "/matches?q=作品&verdict=pending", "/library/%2F%2Fx"):
        assert safe_next(good, "/home") == good
    for bad in (
        None,
        "",
        "matches",
        "//evil.example/",
        "/\t/evil.example/",
        "/\n/evil.example/",
        "/\r\nSet-Cookie: a=b",
        "/\\evil.example",
        "\\\\evil.example",
        " /matches",
        "/\x7f/evil.example",
        "https://evil.example/",
        "javascript:alert(1)",
    ):
        assert safe_next(bad, "/home") == "/home", bad


def test_the_web_shows_times_for_people_one_way() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from web.charts import fmt_time

    t = datetime(2026, 11, 25, 17, 26, 15, 794_000, tzinfo=timezone(timedelta(hours=8)))
    assert fmt_time(t) == "2026-11-25 09:26:15 UTC"
    assert fmt_time(t, False) == "2026-11-25"
    assert fmt_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02 03:04:05 UTC"  # naive: UTC
    assert fmt_time(datetime(2026, 1, 2, tzinfo=UTC), False) == "2026-01-02"
    assert fmt_time(None) == "—"
