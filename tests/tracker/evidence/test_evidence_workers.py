"""Evidence recorded by the Celery workers (issue #15): pages crawled by ``crawl_url`` and
``crawl_book``, texts pasted and files uploaded through ``check_texts``/``check_uploads``,
re-checks (``check_suspect``, ``check_new_mothers``) and the scheduled tree head
(``publish_tree_head``), each through the real in-process Celery worker on the embedded
Redis, against a local site and the local test TSA. Also: a redelivered task that runs
its work again records nothing twice, the beat schedule's setting, ``yinji evidence
stamp``, and the evidence blobs of a MongoDB library in GridFS (mongomock)."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tsa_server import TSAServer
from workerkit import (
    MOTHER,
    UNRELATED_2,
    Installation,
    Site,
    _copy,
    page,
    start_inprocess_worker,
    wait_job,
    wait_until,
)

from tracker.evidence import EvidenceLog, verify_bundle
from tracker.evidence.tsa import load_certificates, verify_response
from tracker.plumbing.config import Settings

pytestmark = pytest.mark.slow


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch, tsa_server: TSAServer, tmp_path: Path) -> Path:
    """Private URLs allowed (the local site), no crawl delay, the test TSA; returns the
    TSA's root certificate file."""
    ca = tmp_path / "tsa-root.pem"
    ca.write_bytes(tsa_server.tsa.ca_pem)
    monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
    monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
    monkeypatch.setenv("YINJI_TSA_URL", tsa_server.url)
    monkeypatch.setenv("YINJI_TSA_CA", str(ca))
    monkeypatch.delenv("YINJI_EVIDENCE_KEY", raising=False)
    return ca


@pytest.fixture()
def installed(
    installation_factory: Callable[[Path], Installation], tmp_path: Path, env: Path
) -> Installation:
    inst = installation_factory(tmp_path / "yinji-data")
    start_inprocess_worker(inst.settings)
    return inst


@pytest.fixture()
def site() -> Iterator[Site]:
    s = Site(
        {
            "/copy.html": page("第一章 转载", _copy("第一章")),
            # A book: its index, one chapter over two pages ("下一页"), one chapter.
            "/book/": page("目录", "章节列表", ["/book/1.html", "/book/2.html"]),
            "/book/1.html": page("第一章", MOTHER[40:220], ["/book/1_2.html"]).replace(
                ">/book/1_2.html<", ">下一页<"
            ),
            "/book/1_2.html": page("第一章", MOTHER[220:420]),
            "/book/2.html": page("第二章", UNRELATED_2),
        }
    ).start()
    try:
        yield s
    finally:
        s.stop()


def entries(settings: Settings, suspect_id: str) -> list[Any]:
    with EvidenceLog.from_settings(settings) as log:
        return log.entries(suspect_id=suspect_id)


def kinds(found: list[Any]) -> list[str]:
    return [e.kind for e in found]


def rerun(inst: Installation, name: str, args: list[Any], task_id: str) -> None:
    """What a delivery after a worker died during the work does: the task's marker has
    no result, so the work runs again under the same task id. Waits for that run."""
    inst.queue.delete(f"{inst.settings.redis_prefix}:task:{task_id}")
    inst.app.send_task(name, args=args, task_id=task_id)
    wait_until(lambda: inst.task_counters(task_id).get("runs") == 1, 60, f"{name} to run again")


def test_worker_checks_of_urls_pastes_and_uploads_are_evidence(
    installed: Installation, site: Site, env: Path
) -> None:
    """A URL, a pasted text and an uploaded file submitted as one job (as the web app and
    the API submit them): the crawled page is a capture with the check naming it, the
    others submissions with their checks; the page's bundle verifies, timestamped."""
    from tracker.library import Library
    from workers import jobs
    from workers.spool import Spool

    url = site.url("/copy.html")
    pasted = _copy("粘贴的盗版")
    upload = Spool(installed.data_dir).create()
    upload.write(_copy("上传的盗版").encode("utf-8"))
    ref = upload.ref("chapter-9.txt")
    job = jobs.submit_check(urls=[url], texts=[{"title": "粘贴", "text": pasted}], uploads=[ref])
    status, _ = wait_job(job, timeout=90)
    assert status["state"] == "SUCCESS", status
    ids = {r["suspect_id"] for r in status["result"]["results"]}
    crawled, typed = sha1(url), "text-" + sha1(pasted)
    [uploaded] = ids - {crawled, typed}

    found = entries(installed.settings, crawled)
    assert kinds(found) == ["capture", "check"]
    capture, check = found
    served = site.pages["/copy.html"].encode("utf-8")
    assert capture.payload["body"]["sha256"] == hashlib.sha256(served).hexdigest()
    assert capture.payload["requested_url"] == url
    assert check.payload["capture_index"] == capture.index
    assert [m["mother_id"] for m in check.payload["matches"]] == ["mother-1"]

    for suspect_id, source in [(typed, "text"), (uploaded, "file:chapter-9.txt")]:
        found = entries(installed.settings, suspect_id)
        assert kinds(found) == ["submission", "check"], suspect_id
        assert found[0].payload["source"] == source
        assert "fetched_at" not in found[0].payload
        assert found[1].payload["capture_index"] is None
        assert found[1].payload["matches"][0]["mother_id"] == "mother-1"

    with Library.open(installed.settings) as lib:
        sink = io.BytesIO()
        result, matches = lib.export_evidence(sink, crawled)
    assert matches == 1 and result.stamped
    verified = verify_bundle(io.BytesIO(sink.getvalue()), tsa_roots=load_certificates(env))
    assert verified.ok, verified.summary()


def test_rechecks_record_their_checks_and_a_rerun_records_nothing_twice(
    installed: Installation, site: Site
) -> None:
    from workers import jobs

    url = site.url("/copy.html")
    status, _ = wait_job(jobs.submit_check(urls=[url]), timeout=60)
    assert status["state"] == "SUCCESS", status
    sid = sha1(url)
    capture = entries(installed.settings, sid)[0]
    assert capture.kind == "capture"

    # Re-check of one stored suspect: a check record naming the capture.
    app = installed.app
    assert app.send_task("yinji.check.check_suspect", args=[sid]).get(timeout=60)["matches"]
    found = entries(installed.settings, sid)
    assert kinds(found) == ["capture", "check", "check"]
    assert found[-1].payload["capture_index"] == capture.index
    assert found[-1].payload["checked_at"] > found[1].payload["checked_at"]

    # The daily re-check after a new work: every suspect's new result is recorded.
    status, _ = wait_job(jobs.submit_ingest([{"id": "mother-b", "text": UNRELATED_2 * 2}]))
    assert status["state"] == "SUCCESS", status
    task_id = "check-new-mothers-run-1"
    since = "2000-01-01T00:00:00+00:00"
    run = app.send_task("yinji.check.check_new_mothers", args=[since], task_id=task_id)
    result = run.get(timeout=60)
    assert result["rechecked"] == 1
    # The re-check fans out in chunks (workers.tasks._base.fanout): wait for them.
    chunks = [c["id"] for c in result["fanout"]]
    assert chunks
    for cid in chunks:
        wait_until(lambda cid=cid: installed.task_counters(cid).get("runs"), 60, "a chunk")
    found = entries(installed.settings, sid)
    assert kinds(found) == ["capture", "check", "check", "check"]
    assert found[-1].payload["capture_index"] == capture.index
    with EvidenceLog.from_settings(installed.settings) as log:
        size = log.size

    # A delivery that died during the work left no result: the work runs again under
    # the same task id, and the log gains no second record of it.
    rerun(installed, "yinji.check.check_new_mothers", [since], task_id)
    # Its chunks keep their ids (derived from the parent's): each is delivered again and
    # answers from its stored result.
    for cid in chunks:
        wait_until(
            lambda cid=cid: installed.task_counters(cid).get("deliveries", 0) >= 2,
            60,
            "a chunk delivered again",
        )
    with EvidenceLog.from_settings(installed.settings) as log:
        assert log.size == size
    # Another run (another task id) is another check, recorded.
    other = app.send_task("yinji.check.check_new_mothers", args=[since]).get(timeout=60)
    for c in other["fanout"]:
        wait_until(lambda c=c: installed.task_counters(c["id"]).get("runs"), 60, "a chunk")
    assert kinds(entries(installed.settings, sid)).count("check") == 4


def test_pasted_text_redelivered_mid_work_is_one_submission(installed: Installation) -> None:
    app = installed.app
    item = {"id": "paste-1", "text": _copy("重投")}
    task_id = "check-texts-run-1"
    assert app.send_task("yinji.check.check_texts", args=[[item]], task_id=task_id).get(timeout=60)[
        "checked"
    ]
    rerun(installed, "yinji.check.check_texts", [[item]], task_id)
    assert kinds(entries(installed.settings, "paste-1")) == ["submission", "check"]


def test_book_chapter_pages_are_each_captured(
    installed: Installation, site: Site, env: Path
) -> None:
    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.library import Library

    book = site.url("/book/")
    report = installed.app.send_task("yinji.crawl.crawl_book", args=[book]).get(timeout=90)
    assert "error" not in report, report
    chapter, page_two = site.url("/book/1.html"), site.url("/book/1_2.html")
    # A book run checks each page of a chapter on its own (issue #36: each page is its
    # own URL of the case, with its own capture and figures).
    for url in (chapter, page_two):
        found = entries(installed.settings, sha1(url))
        assert kinds(found)[:2] == ["capture", "check"], url
        capture, check = found[:2]
        assert capture.payload["final_url"] == url
        assert check.payload["capture_index"] == capture.index
        assert "capture_indexes" not in check.payload
    first_check = entries(installed.settings, sha1(chapter))[1]
    assert first_check.payload["matches"][0]["mother_id"] == "mother-1"

    # A chapter read over pages as one text (discovery's way) names a capture per page;
    # its re-check names both again; the bundle carries both bodies and verifies.
    with Library.open(installed.settings) as lib:
        crawler = Crawler(CrawlerConfig.from_settings(lib.settings))
        pages = [crawler.crawl_page(chapter), crawler.crawl_page(page_two)]
        suspect = pages[0].to_suspect("chapter-1-joined")
        suspect.text = "\n".join(p.text for p in pages)
        lib.check_crawled(suspect, pages)
    sid = "chapter-1-joined"
    found = entries(installed.settings, sid)
    assert kinds(found) == ["capture", "capture", "check"]
    first, second, check = found
    assert [first.payload["final_url"], second.payload["final_url"]] == [chapter, page_two]
    assert check.payload["capture_index"] == first.index
    assert check.payload["capture_indexes"] == [first.index, second.index]
    installed.app.send_task("yinji.check.check_suspect", args=[sid]).get(timeout=60)
    recheck = entries(installed.settings, sid)[-1]
    assert recheck.payload["capture_indexes"] == [first.index, second.index]
    with Library.open(installed.settings) as lib:
        sink = io.BytesIO()
        lib.export_evidence(sink, sid)
    verified = verify_bundle(io.BytesIO(sink.getvalue()), tsa_roots=load_certificates(env))
    assert verified.ok, verified.summary()
    import zipfile

    with zipfile.ZipFile(io.BytesIO(sink.getvalue())) as zf:
        bodies = [n for n in zf.namelist() if n.startswith("capture/") and "/body" in n]
    assert len(bodies) == 2


def test_scheduled_tree_head_is_stamped_once_the_tsa_is_back(
    installed: Installation, tsa_server: TSAServer, env: Path
) -> None:
    app = installed.app
    with EvidenceLog.from_settings(installed.settings) as log:
        log.record_case_state(suspect_id="s1", state="notice_sent")
    tsa_server.tsa.mode = "http_500"  # the TSA is down
    first = app.send_task("yinji.evidence.publish_tree_head").get(timeout=60)
    assert first["new_head"] and not first["timestamped"] and first["size"] == 1
    assert "500" in first["stamp_error"] and first["stamps_requested"] == 1
    with EvidenceLog.from_settings(installed.settings) as log:
        log.record_case_state(suspect_id="s1", state="taken_down")
    second = app.send_task("yinji.evidence.publish_tree_head").get(timeout=60)
    # One attempt for the new head; the older pending one waits for the TSA.
    assert second["new_head"] and second["size"] == 2 and second["stamps_requested"] == 1

    tsa_server.tsa.mode = "ok"
    third = app.send_task("yinji.evidence.publish_tree_head").get(timeout=60)
    assert not third["new_head"] and third["timestamped"]
    assert third["heads_stamped"] == [first["head_id"], second["head_id"]]
    roots = load_certificates(env)
    with EvidenceLog.from_settings(installed.settings) as log:
        for record in log.heads():
            assert record.token is not None
            verify_response(record.token, data=record.head.encode(), trusted=roots)
        assert log.audit(trusted_tsa=roots).ok
    # Nothing new, nothing pending: the next run signs and asks nothing.
    idle = app.send_task("yinji.evidence.publish_tree_head").get(timeout=60)
    assert not idle["new_head"] and idle["stamps_requested"] == 0
    assert idle["head_id"] == second["head_id"]


@pytest.fixture()
def wire_client() -> Iterator[Any]:
    """A real pymongo client of ``tests/mongo_wire.py`` (a wire-protocol server on
    mongomock): GridFS and the store's bulk writes encoded as for a mongod (mongomock's
    own ``bulk_write`` refuses pymongo >= 4.10's operations)."""
    pytest.importorskip("mongomock")
    import pymongo
    from mongo_wire import mongo_wire_server

    with mongo_wire_server() as server:
        client: Any = pymongo.MongoClient(server.uri, tz_aware=True)
        try:
            yield client
        finally:
            type(client).close(client)  # the real close (a test may stub the instance's)


def test_mongo_library_keeps_evidence_bytes_in_gridfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: Site, wire_client: Any
) -> None:
    """With YINJI_MONGO_URI the captured bytes go to GridFS (bucket evidence_blobs), not
    to the data folder, and the bundle is exported from there."""
    import pymongo

    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.documents.readers import Document
    from tracker.library import Library

    client = wire_client
    monkeypatch.setattr(pymongo, "MongoClient", lambda *a, **kw: client)
    monkeypatch.setattr(client, "close", lambda: None)  # read below, after the library
    monkeypatch.delenv("YINJI_TSA_URL", raising=False)
    data = tmp_path / "data"
    settings = Settings(data_dir=data, mongo_uri="mongodb://mongo.test:27017", mongo_db="yj")
    url = site.url("/copy.html")
    with Library.open(settings) as lib:
        lib.ingest([Document(id="mother-1", title="茶山的故事", text=MOTHER)])
        crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0, retries=0))
        try:
            result = lib.check_url(url, crawler=crawler)
        finally:
            crawler.close()
        assert [m.mother_id for m in result.matches] == ["mother-1"]
        sink = io.BytesIO()
        lib.export_evidence(sink, result.suspect.id)
    db = client["yj"]
    served = hashlib.sha256(site.pages["/copy.html"].encode("utf-8")).hexdigest()
    stored = {f["_id"] for f in db["evidence_blobs.files"].find({})}
    assert served in stored
    assert db["evidence_leaves"].count_documents({"kind": "capture"}) == 1
    assert not (data / "evidence").exists()
    assert verify_bundle(io.BytesIO(sink.getvalue())).ok


def test_head_interval_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    from tracker.plumbing.config import SettingError
    from workers.schedule import beat_schedule

    monkeypatch.setenv("YINJI_EVIDENCE_HEAD_MINUTES", "15")
    entry = beat_schedule()["evidence-tree-head"]
    assert entry["task"] == "yinji.evidence.publish_tree_head"
    assert entry["schedule"] == timedelta(minutes=15)
    monkeypatch.delenv("YINJI_EVIDENCE_HEAD_MINUTES")
    assert beat_schedule()["evidence-tree-head"]["schedule"] == timedelta(hours=1)
    for bad in ("0", "90s", "1441"):
        monkeypatch.setenv("YINJI_EVIDENCE_HEAD_MINUTES", bad)
        with pytest.raises(SettingError, match="YINJI_EVIDENCE_HEAD_MINUTES"):
            beat_schedule()


def test_worker_refuses_a_bad_head_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from tracker.cli import main

    monkeypatch.setenv("YINJI_EVIDENCE_HEAD_MINUTES", "hourly")
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "beat"])
    assert result.exit_code != 0
    assert "YINJI_EVIDENCE_HEAD_MINUTES" in result.output


def test_evidence_stamp_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tsa_server: TSAServer, env: Path
) -> None:
    from click.testing import CliRunner

    from tracker.cli import main

    data = tmp_path / "data"
    with EvidenceLog.from_settings(Settings(data_dir=data)) as log:
        log.record_case_state(suspect_id="s1", state="notice_sent")
    tsa_server.tsa.mode = "http_500"
    down = CliRunner().invoke(main, ["--data-dir", str(data), "evidence", "stamp"])
    assert down.exit_code == 1, down.output
    assert "not timestamped" in down.output
    tsa_server.tsa.mode = "ok"
    up = CliRunner().invoke(main, ["--data-dir", str(data), "evidence", "stamp"])
    assert up.exit_code == 0, up.output
    done = json.loads(up.output.splitlines()[0])
    assert done["timestamped"] and done["size"] == 1 and not done["new_head"]
    assert done["heads_stamped"] == [done["head_id"]]


def test_daily_audit_alerts_and_the_scheduled_head_refuses_a_truncated_log(
    installed: Installation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #24: the beat's ``audit_log`` recomputes the log and sends the
    ``evidence.audit_failed`` alert to a local webhook when records were deleted under a
    signed head; ``publish_tree_head`` then signs nothing."""
    import sqlite3
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    posts: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            posts.append({"event": self.headers.get("X-Yinji-Event"), "body": json.loads(body)})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(
            "YINJI_ALERT_WEBHOOK_URL", f"http://127.0.0.1:{server.server_address[1]}/hook"
        )
        monkeypatch.setenv("YINJI_ALERT_WEBHOOK_SECRET", "s")
        monkeypatch.setenv("YINJI_ALERT_RETRIES", "0")
        app = installed.app
        with EvidenceLog.from_settings(installed.settings) as log:
            for state in ("notice_sent", "taken_down", "reappeared"):
                log.record_case_state(suspect_id="s1", state=state)
        assert app.send_task("yinji.evidence.publish_tree_head").get(timeout=60)["size"] == 3
        clean = app.send_task("yinji.evidence.audit_log").get(timeout=60)
        assert clean["ok"] and clean["size"] == 3 and clean["alerted"] == 0 and posts == []

        db = sqlite3.connect(installed.settings.data_dir / "evidence.sqlite3", isolation_level=None)
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DELETE FROM leaves WHERE idx = 2")
        db.close()
        failed = app.send_task("yinji.evidence.audit_log").get(timeout=60)
        assert not failed["ok"] and failed["alerted"] == 1
        assert [p["event"] for p in posts] == ["evidence.audit_failed"]
        assert any(
            "covers records that do not exist" in p for p in posts[0]["body"]["data"]["problems"]
        )
        with pytest.raises(Exception, match="not consistent with the tree heads it signed"):
            app.send_task("yinji.evidence.publish_tree_head").get(timeout=60)
        with EvidenceLog.from_settings(installed.settings) as log:
            assert [r.head.size for r in log.heads()] == [3]  # nothing signed
        from workers.schedule import beat_schedule

        assert beat_schedule()["evidence-audit"]["task"] == "yinji.evidence.audit_log"
    finally:
        server.shutdown()
        server.server_close()
