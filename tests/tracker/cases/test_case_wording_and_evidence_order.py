"""Issue #37's case leftovers on the tracker side: one wording of each state for the web
and the command line (zh and en), a platform's English name in English, and evidence
files numbered in chapter order whatever order the URLs joined the case."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from casekit import add_match, library_store
from click.testing import CliRunner

from tracker.cases import CaseService
from tracker.cases.cli import case
from tracker.cases.model import STATE_LABELS, STATES, CaseEvent, CaseURL, state_label
from tracker.cases.notices import collect_evidence
from tracker.cases.platforms import SHIPPED, load_platforms
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.plumbing.config import Settings

HOLDER = {"name": "青简文化", "address": "北京市海淀区", "email": "legal@qingjian.example"}


@pytest.fixture()
def setup(tmp_path: Path) -> Iterator[tuple[CaseService, object, Path]]:
    data = tmp_path / "data"
    store = library_store(data)
    svc = CaseService(
        SqliteCaseStore(data / "cases.sqlite3", blob_dir=data / "cases" / "blobs"),
        Settings(data_dir=data),
    )  # where the CLI opens the cases of ``data``
    svc.set_profile(**HOLDER)
    yield svc, store, data
    svc.store.close()
    store.close()  # type: ignore[attr-defined]


def test_every_state_has_one_wording_in_each_language() -> None:
    assert set(STATE_LABELS) == set(STATES)
    assert state_label("open", "zh") == "待处理" and state_label("open", "en") == "Open"
    assert state_label("removed", "zh") == "已删除"
    zh = [state_label(s, "zh") for s in STATES]
    en = [state_label(s, "en") for s in STATES]
    assert len(set(zh)) == len(zh) and len(set(en)) == len(en)  # no two states read alike


def test_the_cli_says_the_states_as_the_web_does(setup) -> None:
    from web.casework import case_state_labels

    svc, store, data = setup
    add_match(store, "s1", "w1", "https://weibo.com/1/2", title="春山记")
    svc.apply_verdict(store, "s1", "w1", "confirmed", who="alice")
    (c,) = svc.list_cases()
    obj = {"data_dir": data}
    shown = CliRunner().invoke(case, ["show", c.id], obj=obj)
    assert shown.exit_code == 0, shown.output
    web_zh, web_en = case_state_labels("zh")["open"], case_state_labels("en")["open"]
    assert f"open ({web_zh} / {web_en})" in shown.output
    assert "线索" not in shown.output
    listed = CliRunner().invoke(case, ["list", "--no-sync"], obj=obj)
    assert "open (待处理 / Open)" in listed.output
    moved = CliRunner().invoke(case, ["set-state", c.id, "removed"], obj=obj)
    assert moved.exit_code == 0, moved.output
    assert moved.output.strip() == f"case {c.id}: removed (已删除 / Removed)"


def test_english_shows_the_platforms_english_name(setup) -> None:
    svc, store, data = setup
    weibo = next(p for p in load_platforms(None) if p.id == "weibo")
    assert weibo.display_name("en") == "Sina Weibo" and weibo.display_name("zh") == "新浪微博"
    # Every shipped platform has an English name to show.
    registry = json.loads(SHIPPED.read_text(encoding="utf-8"))["platforms"]
    assert all(entry["name_en"] for entry in registry)
    add_match(store, "s1", "w1", "https://weibo.com/1/2", title="春山记")
    svc.apply_verdict(store, "s1", "w1", "confirmed", who="alice")
    (c,) = svc.list_cases()
    obj = {"data_dir": data}
    shown = CliRunner().invoke(case, ["show", c.id], obj=obj).output
    assert "platform: Sina Weibo" in shown and "新浪微博" not in shown
    listed = CliRunner().invoke(case, ["platforms"], obj=obj).output
    assert "Sina Weibo" in listed and "新浪微博" not in listed


def test_evidence_files_are_numbered_in_chapter_order(setup) -> None:
    """URLs filed 第三章, 第一章, 第二章 (as a pirate index listing its newest first):
    evidence-…-001 is 第一章's report."""
    svc, store, _ = setup
    chapters = {3: "第三章", 1: "第一章", 2: "第二章"}
    for n, name in chapters.items():
        m = add_match(store, f"s{n}", f"m{n}", f"https://pirate.example/b/{n}.html", title=name)
        store.set_verdict(m.id, "confirmed")
    opened = svc.open_case(work="chunshan", domain="pirate.example", who="t", kind="book")

    def file_all(c):
        for n in chapters:  # filed in the order 3, 1, 2
            c.urls.append(
                CaseURL(
                    url=f"https://pirate.example/b/{n}.html",
                    suspect_id=f"s{n}",
                    mother_id=f"m{n}",
                    score=1.0,
                )
            )
        return [CaseEvent(c.id, "book", "t")]

    svc.update(opened.id, file_all)
    (filed,) = [c for c in svc.list_cases() if c.id == opened.id]
    assert [u.url[-6:] for u in filed.urls] == ["3.html", "1.html", "2.html"]
    files = collect_evidence(SimpleNamespace(store=store), [filed])  # type: ignore[arg-type]
    names = {url[-6:]: name for url, (name, _) in files.items()}
    assert names == {
        "1.html": f"evidence-{opened.id}-001.pdf",
        "2.html": f"evidence-{opened.id}-002.pdf",
        "3.html": f"evidence-{opened.id}-003.pdf",
    }
