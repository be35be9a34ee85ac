"""Case events and verdicts reach the evidence log of tracker.evidence (signed Merkle
log); without a usable log the case history alone records them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from casekit import add_match, library_store
from click.testing import CliRunner

from tracker.cases import CaseService
from tracker.cases.cli import case, verdict
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.plumbing.config import Settings

evidence_log = pytest.importorskip("tracker.evidence.log")


def test_verdicts_and_case_states_are_logged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with library_store(data) as store:
        add_match(store, "s1", "w1", "https://pirate.example/1.html")
    runner = CliRunner()
    obj = {"data_dir": data}
    assert (
        runner.invoke(verdict, ["s1", "w1", "confirmed", "--by", "alice"], obj=obj).exit_code == 0
    )
    (c,) = json.loads(runner.invoke(case, ["list", "--json"], obj=obj).output)
    assert runner.invoke(case, ["mark-sent", c["id"], "--by", "bob"], obj=obj).exit_code == 0
    shown = json.loads(runner.invoke(case, ["show", c["id"], "--json"], obj=obj).output)
    with evidence_log.EvidenceLog.from_settings(Settings(data_dir=data)) as log:
        entries = log.entries(suspect_id="s1")
        kinds = [(e.kind, e.payload.get("state") or e.payload.get("verdict")) for e in entries]
        assert kinds == [
            ("verdict", "confirmed"),
            ("case_state", "url_added"),
            ("case_state", "notice_sent"),
        ]
        sent = entries[-1].payload
        assert sent["by"] == "bob" and sent["detail"]["case_id"] == c["id"]
        last = shown["history"][-1]
        assert sent["detail"]["event_hash"] == last["hash"]
        assert last["evidence_ref"] == f"evidence:{entries[-1].index}"
        assert log.audit().ok


def test_history_alone_when_the_log_cannot_open(tmp_path: Path, monkeypatch, caplog) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise evidence_log.EvidenceError("no key")

    monkeypatch.setattr(evidence_log.EvidenceLog, "from_settings", broken)
    lib = library_store(tmp_path / "lib")
    add_match(lib, "s1", "w1", "https://pirate.example/1.html")
    store = SqliteCaseStore(tmp_path / "c.sqlite3", blob_dir=tmp_path / "b")
    svc = CaseService(store, Settings(data_dir=tmp_path / "data"))
    c = svc.apply_verdict(lib, "s1", "w1", "confirmed", who="alice").case
    assert c is not None
    assert svc.mark_sent(c.id, who="alice").state == "notice_sent"
    assert all(e.evidence_ref is None for e in svc.history(c.id))
    assert "evidence log cannot be opened" in caplog.text
    svc.close()
    store.close()
    lib.close()


@pytest.mark.slow
def test_recheck_captures_the_page_in_the_log(tmp_path: Path, redis_client: object) -> None:
    from casekit import PageServer, html
    from textgen import work

    from tracker.cases.recheck import recheck_case
    from tracker.common.records import Suspect
    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.store import SqliteStore

    text = work(7, 50)
    settings = Settings(data_dir=tmp_path / "data")
    lib = Library(settings, SqliteStore(tmp_path / "data" / "yinji.sqlite3"), redis_client)
    lib.ingest([Document(id="w1", text=text, title="春山记")])
    store = SqliteCaseStore(tmp_path / "c.sqlite3", blob_dir=tmp_path / "b")
    svc = CaseService(store, settings)
    crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0, retries=0))
    page = html("第一章", text[:800])
    with PageServer() as server:
        server.pages["/a.html"] = (200, page, "text/html; charset=utf-8")
        lib.check_suspect(Suspect(id="s1", text=text[:800], url=server.url("/a.html")))
        c = svc.apply_verdict(lib.store, "s1", "w1", "confirmed", who="alice").case
        assert c is not None
        svc.mark_sent(c.id, who="alice")
        result = recheck_case(svc, c.id, crawler=crawler, library=lib)
    (check,) = result.checks
    assert check.outcome == "matching" and check.capture is not None
    index = int(check.capture.removeprefix("evidence:"))
    with evidence_log.EvidenceLog.from_settings(settings) as log:
        entry = log.entry(index)
        assert entry.kind == "capture" and entry.payload["suspect_id"] == "s1"
        assert entry.payload["http_status"] == 200
        # The crawler's full record, as for a first crawl: the address it connected to,
        # and the crawler that fetched it.
        assert entry.payload["resolved_ip"] == "127.0.0.1"
        assert entry.payload["crawler_version"].endswith("crawler (case re-check)")
        tail = [(e.kind, e.payload.get("state")) for e in log.entries(suspect_id="s1")][-3:]
        assert tail == [
            ("capture", None),
            ("case_state", "recheck_matching"),
            ("case_state", "still_online"),
        ]
    crawler.close()
    svc.close()
    store.close()
    lib.store.close()
