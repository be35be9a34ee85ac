"""Removal checks against a local http.server: 404/410 and changed pages move a noticed
case to removed (a host that does not resolve is unreachable and moves nothing), a
still-matching page to still_online, a page that comes back
re-opens the case; each re-crawl is in the history; the SSRF guard still applies."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import PageServer, html
from click.testing import CliRunner
from textgen import work

from tracker.cases import CaseService
from tracker.cases.cli import case, verdict
from tracker.cases.recheck import recheck_case, recheck_cases
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Suspect
from tracker.crawler import Crawler, CrawlerConfig
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import SqliteStore

WORK = work(101, 60)
OTHER = work(202, 60)


def _resolver(host: str, port: int) -> list[str]:
    if host == "gone.example":
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return ["127.0.0.1"]


@pytest.fixture()
def env(tmp_path: Path, redis_client: object) -> Iterator[tuple]:
    settings = Settings(data_dir=tmp_path / "data")
    lib = Library(settings, SqliteStore(tmp_path / "data" / "yinji.sqlite3"), redis_client)
    lib.ingest([Document(id="w1", text=WORK, title="春山记"), Document(id="w2", text=OTHER)])
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    crawler = Crawler(
        CrawlerConfig(allow_private=True, min_interval=0, retries=0, resolver=_resolver)
    )
    with PageServer() as server:
        yield lib, svc, crawler, server
    crawler.close()
    svc.store.close()
    lib.store.close()


def _confirm(lib: Library, svc: CaseService, url: str, text: str, sid: str) -> str:
    # A fetched page (source "crawl"): a submitted text's URL would be "unverified".
    res = lib.check_suspect(Suspect(id=sid, text=text, url=url, source="crawl"))
    assert [m.mother_id for m in res.matches] == ["w1"]
    r = svc.apply_verdict(lib.store, sid, "w1", "confirmed", who="alice")
    assert r.case is not None
    return r.case.id


@pytest.mark.slow
def test_noticed_pages_gone_or_changed_mean_removed_and_back_reopens(env) -> None:
    lib, svc, crawler, server = env
    copy = html("第一章", WORK[:900])
    paths = ["/a.html", "/b.html", "/c.html"]
    for p in paths:
        server.pages[p] = (200, copy, "text/html; charset=utf-8")
    cid = ""
    for i, p in enumerate(paths):
        cid = _confirm(lib, svc, server.url(p), WORK[:900], f"s{i}")
    gone_url = f"http://gone.example:{server.port}/d.html"
    server.pages["/d.html"] = (200, copy, "text/html")
    assert _confirm(lib, svc, gone_url, WORK[:900], "s3") != cid  # another domain
    svc.mark_sent(cid, who="alice")

    # Still there after the notice.
    result = recheck_case(svc, cid, crawler=crawler, library=lib)
    assert [c.outcome for c in result.checks] == ["matching"] * 3
    assert (result.before, result.after) == ("notice_sent", "still_online")

    # Taken down: 404, 410, and the third page now shows something else.
    server.pages["/a.html"] = (404, b"gone", "text/html")
    server.pages["/b.html"] = (410, b"gone", "text/html")
    server.pages["/c.html"] = (200, html("公告", OTHER[:600]), "text/html")
    removed: list[str] = []
    result = recheck_case(
        svc, cid, crawler=crawler, library=lib, on_removed=lambda c: removed.append(c.id)
    )
    assert [(c.outcome, c.http_status) for c in result.checks] == [
        ("gone", 404),
        ("gone", 410),
        ("changed", 200),
    ]
    assert result.after == "removed" and removed == [cid]
    c = svc.get(cid)
    assert c.removed_at is not None and all(u.status == "removed" for u in c.urls)

    # The third page comes back: the case re-opens.
    server.pages["/c.html"] = (200, copy, "text/html")
    result = recheck_case(svc, cid, crawler=crawler, library=lib)
    assert result.after == "open" and removed == [cid]
    history = svc.history(cid)
    rechecks = [e for e in history if e.kind == "recheck"]
    assert len(rechecks) == 9
    assert rechecks[0].data["http_status"] == 200 and rechecks[0].data["sha256"]
    assert svc.store.get_blob(rechecks[0].data["sha256"]) == copy  # the bytes served, kept
    moves = [(e.from_state, e.to_state) for e in history if e.kind == "transition"]
    assert moves[-3:] == [
        ("notice_sent", "still_online"),
        ("still_online", "removed"),
        ("removed", "open"),
    ]
    # A host that no longer resolves gave no answer: "unreachable", never "removed"
    # (removal needs an answer from the site: 404/410 or the copied text gone).
    other = next(x for x in svc.list_cases() if x.id != cid)
    svc.mark_sent(other.id, who="alice")
    result = recheck_case(svc, other.id, crawler=crawler, library=lib)
    assert result.checks[0].outcome == "unreachable" and result.after == "notice_sent"
    assert svc.get(other.id).urls[0].status == "unknown"
    assert svc.get(other.id).removed_at is None


@pytest.mark.slow
def test_errors_conclude_nothing(env) -> None:
    lib, svc, crawler, server = env
    server.pages["/a.html"] = (200, html("第一章", WORK[:900]), "text/html")
    cid = _confirm(lib, svc, server.url("/a.html"), WORK[:900], "s1")
    svc.mark_sent(cid, who="alice")
    server.pages["/a.html"] = (503, b"busy", "text/html")
    result = recheck_case(svc, cid, crawler=crawler, library=lib)
    assert result.checks[0].outcome == "error" and result.after == "notice_sent"
    assert svc.get(cid).urls[0].status == "online"
    # The default selection: cases with a notice sent, still online or removed.
    open_case = svc.open_case(work="w9", domain="x.example", who="t")
    ids = [r.case_id for r in recheck_cases(svc, crawler=crawler, library=lib)]
    assert ids == [cid] and open_case.id not in ids


@pytest.mark.slow
def test_cli_recheck_honours_the_ssrf_guard(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with PageServer() as server:
        url = server.url("/p.html")
        with Library.open(settings) as lib:
            lib.ingest([Document(id="w1", text=WORK, title="春山记")])
            lib.check_suspect(Suspect(id="s1", text=WORK[:900], url=url, source="crawl"))
        runner = CliRunner()
        obj = {"data_dir": data}
        assert runner.invoke(verdict, ["s1", "w1", "confirmed"], obj=obj).exit_code == 0
        (c,) = json.loads(runner.invoke(case, ["list", "--json"], obj=obj).output)
        runner.invoke(case, ["mark-sent", c["id"]], obj=obj)
        server.pages["/p.html"] = (404, b"", "text/html")
        monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
        monkeypatch.delenv("YINJI_ALLOW_PRIVATE_URLS", raising=False)
        r = runner.invoke(case, ["recheck", c["id"], "--json"], obj=obj, catch_exceptions=False)
        (res,) = [json.loads(x) for x in r.stdout.splitlines()]
        assert res["after"] == "notice_sent" and res["checks"][0]["outcome"] == "error"
        assert (
            "non-public" in res["checks"][0]["reason"] or "not public" in res["checks"][0]["reason"]
        )
        assert server.requests == []  # refused before any connection
        monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
        r = runner.invoke(case, ["recheck", "--json"], obj=obj, catch_exceptions=False)
        (res,) = [json.loads(x) for x in r.stdout.splitlines()]
        assert res["after"] == "removed" and res["checks"][0]["http_status"] == 404
        (c,) = json.loads(runner.invoke(case, ["list", "--json"], obj=obj).output)
        assert c["state"] == "removed"
