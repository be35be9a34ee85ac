"""The platform registry (shipped data file, overridden from the data folder), used to
address notices and shown on the case; case states following a platform's complaint flow
(线索 → 初审 → 材料审核 → 删除下架 / 赔偿, disputed, closed), each change recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import add_match, library_store
from click.testing import CliRunner

from tracker.cases import CaseService, IllegalTransition
from tracker.cases.cli import case
from tracker.cases.model import STATE_FLOW, STATES, TRANSITIONS, CaseError
from tracker.cases.notices import build_notice
from tracker.cases.platforms import SHIPPED, load_platforms, platform_for
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


def test_shipped_registry_is_valid_and_matches_subdomains() -> None:
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))["platforms"]
    known = load_platforms()
    assert len(known) == len(raw) >= 8
    ids = [p.id for p in known]
    assert len(set(ids)) == len(ids)
    for p in known:  # each has a way in or says how to find one
        assert p.name and p.process and p.source, p.id
    assert platform_for("user.github.io", known).id == "github"  # type: ignore[union-attr]
    assert platform_for("tieba.baidu.com", known).id == "baidu-tieba"  # type: ignore[union-attr]
    assert platform_for("www.baidu.com", known).id == "baidu"  # type: ignore[union-attr]
    assert platform_for("notgithub.com", known) is None
    assert platform_for("pirate.example", known) is None


def test_data_folder_overrides_and_bad_files_are_named(tmp_path: Path) -> None:
    own = tmp_path / "platforms.json"
    own.write_text(
        json.dumps(
            {
                "platforms": [
                    {
                        "id": "github",
                        "name": "GitHub（自定）",
                        "domains": ["github.com"],
                        "abuse_email": "legal@example.org",
                    },
                    {
                        "id": "fanqie",
                        "name": "番茄小说",
                        "domains": ["fanqienovel.com"],
                        "web_form": "https://fanqie.example/complain",
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    known = {p.id: p for p in load_platforms(tmp_path)}
    assert known["github"].abuse_email == "legal@example.org"
    assert known["fanqie"].serves("m.fanqienovel.com") == "fanqienovel.com"
    assert "weibo" in known  # the shipped ones stay
    own.write_text('{"platforms": [{"id": "x", "name": "X", "abuse_email": "a\\r\\nb"}]}')
    with pytest.raises(CaseError, match=r"platforms.json, entry 1: 'abuse_email'"):
        load_platforms(tmp_path)
    own.write_text("{not json")
    with pytest.raises(CaseError, match=r"platforms\.json: cannot be read"):
        load_platforms(tmp_path)


def test_notice_is_addressed_to_the_platform(setup) -> None:
    svc, store, _data = setup
    add_match(store, "s1", "w1", "https://someone.github.io/book/1.html", title="春山记")
    svc.apply_verdict(store, "s1", "w1", "confirmed", who="alice")
    (c,) = svc.list_cases()
    assert svc.platform_of(c).id == "github"
    zh = build_notice(svc, [c.id], "zh", matches=store)
    assert zh.text.splitlines()[1].startswith("致：GitHub（someone.github.io）")
    en = build_notice(svc, [c.id], "en", matches=store)
    assert "designated agent of GitHub (someone.github.io)" in en.text
    # An e-mail notice without a recipient goes to the platform's abuse address.
    from tracker.cases.notices import generate_notice

    class Lib:
        def __init__(self, s: object) -> None:
            self.store = s

    made = generate_notice(svc, Lib(store), [c.id], "eml", "en", who="t")
    assert b"To: copyright@github.com" in made.data
    # Chosen by hand (a site behind Cloudflare): recorded in the history.
    svc.set_platform(c.id, "cloudflare", who="alice")
    assert svc.platform_of(svc.get(c.id)).id == "cloudflare"
    assert svc.history(c.id)[-1].data == {"platform": "cloudflare"}
    with pytest.raises(CaseError, match="unknown platform 'nope'"):
        svc.set_platform(c.id, "nope", who="alice")


def test_states_follow_the_platform_flow(setup) -> None:
    svc, store, _data = setup
    assert set(STATE_FLOW) == set(STATES)
    assert [STATE_FLOW[s][0] for s in ("open", "notice_sent", "documents", "removed")] == [
        "线索",
        "初审",
        "材料审核",
        "删除下架",
    ]
    assert STATE_FLOW["compensated"][0] == "赔偿"
    add_match(store, "s1", "w1", "https://pirate.example/1.html", title="春山记")
    svc.apply_verdict(store, "s1", "w1", "confirmed", who="alice")
    (c,) = svc.list_cases()
    svc.mark_sent(c.id, who="alice", matches=store)  # type: ignore[arg-type]
    svc.transition(c.id, "documents", who="alice", note="平台要求补充权属材料")
    svc.transition(c.id, "removed", who="alice")
    svc.transition(c.id, "compensated", who="alice", note="赔偿 2000 元")
    with pytest.raises(IllegalTransition, match="allowed from compensated: closed"):
        svc.transition(c.id, "open", who="alice")
    svc.transition(c.id, "closed", who="alice")
    moves = [(e.from_state, e.to_state) for e in svc.history(c.id) if e.kind == "transition"]
    assert moves == [
        ("open", "notice_sent"),
        ("notice_sent", "documents"),
        ("documents", "removed"),
        ("removed", "compensated"),
        ("compensated", "closed"),
    ]
    assert "documents" in TRANSITIONS["disputed"] and "compensated" in TRANSITIONS["notice_sent"]


def test_cli_platforms_and_show(setup) -> None:
    svc, store, data = setup
    add_match(store, "s1", "w1", "https://t.me/pirate_books/12", title="春山记")
    svc.apply_verdict(store, "s1", "w1", "confirmed", who="alice")
    (c,) = svc.list_cases()
    obj = {"data_dir": data}
    listed = CliRunner().invoke(case, ["platforms"], obj=obj)
    assert listed.exit_code == 0 and "telegram" in listed.output
    shown = CliRunner().invoke(case, ["show", c.id, "--json"], obj=obj)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["platform"]["abuse_email"] == "dmca@telegram.org"
    text = CliRunner().invoke(case, ["show", c.id], obj=obj).output
    assert "open (待处理 / Open)" in text and "platform: Telegram — dmca@telegram.org" in text
    moved = CliRunner().invoke(case, ["platform", c.id, "cloudflare"], obj=obj)
    assert moved.exit_code == 0 and "Cloudflare" in moved.output
