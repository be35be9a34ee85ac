"""Production mode (issue #29): no silent broker fallback, honest health and outages."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from repo import REPO

from tracker.plumbing.config import SettingError, Settings

CLUSTER = "redis+cluster://127.0.0.1:7999"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YINJI_")}
    env.update({"YINJI_DATA_DIR": str(data_dir), **extra})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@pytest.mark.slow
@pytest.mark.parametrize("command", [["worker"], ["beat"], ["serve", "--no-worker", "--port", "0"]])
def test_every_process_refuses_a_cluster_without_a_broker(
    tmp_path: Path, command: list[str]
) -> None:
    """Celery cannot use a Redis Cluster as its broker; without YINJI_BROKER_URL the
    process must stop naming the variable, not fall back to amqp://guest@localhost."""
    proc = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(tmp_path / "d"), *command],
        env=_env(tmp_path / "d", YINJI_REDIS_URL=CLUSTER),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "YINJI_BROKER_URL" in proc.stderr, proc.stderr[-2000:]
    assert "amqp" not in proc.stderr.lower()


def test_celery_app_and_web_app_refuse_it_too(tmp_path: Path) -> None:
    from web import create_app
    from workers.app import make_celery

    settings = Settings(data_dir=tmp_path, redis_url=CLUSTER)
    app = make_celery(settings)
    with pytest.raises(SettingError, match="YINJI_BROKER_URL"):
        _ = app.conf.broker_url
    with pytest.raises(SettingError, match="YINJI_BROKER_URL"):
        create_app(settings, testing=True)
    # A broker URL that is itself a cluster, or not Redis, is refused as well.
    for bad in (CLUSTER, "amqp://guest@localhost:5672//"):
        with pytest.raises(SettingError, match="YINJI_BROKER_URL"):
            _ = make_celery(settings.with_(broker_url=bad)).conf.broker_url
    # With a plain Redis broker, the broker and the result backend are that one.
    ok = make_celery(settings.with_(broker_url="redis://broker.internal:6379/2"))
    assert ok.conf.broker_url == ok.conf.result_backend == "redis://broker.internal:6379/2"


@pytest.fixture()
def down_broker_app(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A web app whose store and index work (embedded) and whose broker and result
    backend are a closed port: the state of an installation during a broker outage."""
    from web import accounts, create_app
    from web.cli import shutdown

    settings = Settings(
        data_dir=tmp_path / "data", broker_url=f"redis://127.0.0.1:{_closed_port()}/0"
    )
    app = create_app(settings, testing=True)
    app.celery_token = accounts.create_user(  # type: ignore[attr-defined]
        app.extensions["yinji"].library.store, "ops", "admin", "correct-horse-1"
    )
    try:
        yield app
    finally:
        shutdown(app, settings)


def test_healthz_checks_the_broker_and_the_result_backend(down_broker_app) -> None:  # type: ignore[no-untyped-def]
    response = down_broker_app.test_client().get("/healthz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["store"] == "ok" and body["redis"] == "ok"
    assert body["broker"] == "unavailable" and body["results"] == "unavailable"
    assert body["status"] == "unavailable"


def test_a_submission_during_an_outage_is_503_with_retry_after(down_broker_app) -> None:  # type: ignore[no-untyped-def]
    client = down_broker_app.test_client()
    headers = {"Authorization": f"Bearer {down_broker_app.celery_token}"}
    response = client.post(
        "/api/v1/checks",
        json={"texts": [{"text": "江南的雨季总是来得悄无声息" * 10}]},
        headers=headers,
    )
    assert response.status_code == 503, response.get_data(as_text=True)[:300]
    assert int(response.headers["Retry-After"]) > 0
    assert "try again" in response.get_json()["error"]


# --- alerts on their own queue ---------------------------------------------------------
@pytest.fixture()
def silent_receiver():  # type: ignore[no-untyped-def]
    """A webhook address that accepts connections and never answers (a hung receiver)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    finally:
        server.close()


@pytest.mark.slow
def test_a_hung_alert_receiver_never_holds_a_check(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
    silent_receiver: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The in-process worker of ``yinji serve``: a check whose alert is stuck retrying a
    receiver that never answers must not delay the next check."""
    from workerkit import EXCERPT, EXCERPT_2, wait_job, wait_until

    from workers import jobs
    from workers.app import ALERT_QUEUE, TASK_ROUTES
    from workers.tasks._base import child_id

    assert TASK_ROUTES["yinji.cases.alert_new_matches"] == {"queue": ALERT_QUEUE}
    monkeypatch.setenv("YINJI_ALERT_WEBHOOK_URL", silent_receiver)
    monkeypatch.setenv("YINJI_ALERT_WEBHOOK_SECRET", "s3cret-for-tests")
    monkeypatch.setenv("YINJI_ALERT_RETRIES", "2")
    monkeypatch.setenv("YINJI_ALERT_BACKOFF", "1")
    inst = installation_factory(tmp_path / "data")
    assert jobs.ensure_worker(inst.settings)

    first = jobs.submit_check(texts=[{"title": "盗版一", "text": f"转载：{EXCERPT}"}])
    status, _ = wait_job(first, timeout=60)
    assert status["state"] == "SUCCESS" and status["result"]["results"][0]["matches"]
    alert_id = child_id(first, "alert:new-matches")
    meta = inst.app.AsyncResult(alert_id)
    wait_until(lambda: meta.state == "STARTED", 30, "the alert task to start")

    second = jobs.submit_check(texts=[{"title": "盗版二", "text": f"转载：{EXCERPT_2}"}])
    status, _ = wait_job(second, timeout=60)
    assert status["state"] == "SUCCESS" and status["result"]["results"][0]["matches"]
    # The second check finished while the first alert was still trying the receiver.
    assert inst.app.AsyncResult(alert_id).state == "STARTED"


# --- orphans: a worker that dies mid-job -------------------------------------------------
@pytest.mark.slow
def test_a_killed_workers_job_is_done_once_within_90_s(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
) -> None:
    """SIGKILL of the worker running a job, at the default visibility timeout (an hour):
    another worker finishes it exactly once within 90 s."""
    import time

    from workerkit import EXCERPT, wait_job, wait_until

    from workers import jobs
    from workers.heartbeat import RunningTask, running_key

    inst = installation_factory(tmp_path / "data")
    doomed = inst.worker(name="doomed", extra={"YINJI_TEST_TASK_DELAY": "120"})
    job = jobs.submit_check(texts=[{"title": "盗版", "text": f"转载：{EXCERPT}"}])
    client = inst.queue
    key = running_key(inst.app)

    def running_on() -> str:
        raw = client.hget(key, job)
        return RunningTask.from_json(raw).node if raw else ""

    wait_until(lambda: running_on() == doomed.hostname, 30, "the job to start", doomed)
    survivor = inst.worker(name="survivor")
    doomed.kill()
    killed = time.monotonic()
    status, _ = wait_job(job, timeout=90)
    assert time.monotonic() - killed < 90
    assert status["state"] == "SUCCESS", status
    assert status["result"]["results"][0]["matches"][0]["mother_id"] == "mother-1"
    counters = inst.task_counters(job)
    assert counters["runs"] == 1 and counters["deliveries"] == 2, counters
    wait_until(lambda: client.hget(key, job) is None, 10, "the job to leave the running list")
    with inst.store() as store:
        assert len([s for s in store.list_suspects() if s.title == "盗版"]) == 1
    assert survivor.proc.poll() is None


def test_an_orphan_requeued_too_often_fails_with_the_reason(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
) -> None:
    """No worker runs here: the job waits in its queue; its entry says it ran on a node
    that has no heartbeat. Re-queued while re-queues remain, then failed, naming why."""
    import json

    from workers import jobs
    from workers.heartbeat import MAX_REQUEUES, RunningTask, reap_orphans, running_key

    inst = installation_factory(tmp_path / "data")
    job = jobs.submit_check(texts=[{"title": "t", "text": "江南的雨季总是来得悄无声息" * 5}])
    client = inst.queue
    entry = RunningTask(
        id=job,
        name="yinji.check.check_texts",
        args=[[{"title": "t", "text": "江南的雨季总是来得悄无声息" * 5}]],
        kwargs={},
        queue="check",
        node="gone-1@nowhere",
        seen="2026-01-01T00:00:00Z",
    )
    client.hset(running_key(inst.app), job, entry.to_json())
    first = reap_orphans(inst.app)
    assert first.requeued == [job] and not first.failed
    queued = RunningTask.from_json(client.hget(running_key(inst.app), job))
    assert queued.node == "" and queued.requeues == 1 and queued.history == ["gone-1@nowhere"]
    # The check queue now holds the original message and the re-queued one (same id).
    bodies = [json.loads(m) for m in client.lrange("check", 0, -1)]
    assert [b["headers"]["id"] for b in bodies] == [job, job]

    entry.requeues, entry.node = MAX_REQUEUES, "gone-3@nowhere"
    client.hset(running_key(inst.app), job, entry.to_json())
    second = reap_orphans(inst.app)
    assert second.failed == [job] and not second.requeued
    status = jobs.job_status(job)
    assert status["state"] == "FAILURE"
    assert "gone-3@nowhere" in status["error"] and "stopped" in status["error"]
    assert client.hget(running_key(inst.app), job) is None


def _serve(data_dir: Path, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as fh:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracker.cli",
                "--data-dir",
                str(data_dir),
                "serve",
                "--port",
                "0",
            ],
            env=_env(data_dir, PYTHONUNBUFFERED="1", **extra),
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _killpg(proc: subprocess.Popen[bytes]) -> None:
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


@pytest.mark.slow
def test_jobs_of_a_crashed_serve_are_finished_by_the_next_serve(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
) -> None:
    """``yinji serve`` (its in-process worker) killed mid-job and started again: the job
    is done once within 90 s, not after the hour of the visibility timeout."""
    import time

    from workerkit import EXCERPT, wait_job, wait_until

    from workers import jobs
    from workers.heartbeat import RunningTask, running_key

    inst = installation_factory(tmp_path / "data")
    log = tmp_path / "serve.log"
    first = _serve(inst.data_dir, log, YINJI_TEST_TASK_DELAY="120")
    try:
        job = jobs.submit_check(texts=[{"title": "盗版", "text": f"转载：{EXCERPT}"}])
        client = inst.queue

        def node() -> str:
            raw = client.hget(running_key(inst.app), job)
            return RunningTask.from_json(raw).node if raw else ""

        # serve's worker: its child worker processes (workers.children), or the
        # in-process one when those cannot start.
        wait_until(
            lambda: node().startswith(
                (f"yinji-serve-{first.pid}@", f"yinji-inprocess-{first.pid}@")
            ),
            60,
            f"serve's worker to take the job:\n{log.read_text(errors='replace')[-2000:]}",
        )
    finally:
        _killpg(first)
    killed = time.monotonic()
    second = _serve(inst.data_dir, log)
    try:
        status, _ = wait_job(job, timeout=90)
        assert time.monotonic() - killed < 90
        assert status["state"] == "SUCCESS", status
        assert inst.task_counters(job)["runs"] == 1
    finally:
        _killpg(second)


# --- outages in a task ---------------------------------------------------------------------
def test_transient_index_races_are_retried_with_backoff() -> None:
    from workers.tasks._base import is_index_race, retry_races

    calls: list[int] = []
    waits: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("the layout of index yinji:daguan keeps changing; try again")
        return "stored"

    assert retry_races(flaky, "ingest", sleep=waits.append) == "stored"
    assert len(calls) == 3 and waits == [0.5, 1.0]
    assert not is_index_race(RuntimeError("disk full"))
    with pytest.raises(RuntimeError, match="disk full"):  # anything else: at once
        retry_races(
            lambda: (_ for _ in ()).throw(RuntimeError("disk full")), "x", sleep=waits.append
        )
    assert waits == [0.5, 1.0]

    def always() -> None:
        raise RuntimeError("the layout of index i keeps changing; try again")

    waits.clear()
    with pytest.raises(RuntimeError, match="keeps changing"):
        retry_races(always, "ingest", retries=3, sleep=waits.append)
    assert waits == [0.5, 1.0, 2.0]


class RedisServer:
    """A standalone redis-server (AOF on) that a test can stop and start again."""

    def __init__(self, folder: Path) -> None:
        from redis_cluster import free_cluster_port

        self.folder = folder
        self.port = free_cluster_port(set())
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        import time

        import redis
        from redis_cluster import redis_server_binary

        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [str(redis_server_binary()), "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.folder), "--appendonly", "yes", "--appendfsync", "always",
             "--save", "", "--logfile", "redis.log"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 15
        while True:
            try:
                if redis.Redis.from_url(self.url).ping():
                    return self
            except redis.RedisError:
                assert time.monotonic() < deadline, "redis-server never answered"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(15)


@pytest.mark.slow
def test_a_task_whose_work_was_saved_succeeds_across_a_redis_outage(tmp_path: Path) -> None:
    """Redis (broker, results, index) goes down for 8 s right after a check was stored:
    the task waits for it, records its result and reports SUCCESS, never FAILURE."""
    import time

    from workerkit import EXCERPT, MOTHER, start_worker, wait_job, wait_until

    from tracker.documents.readers import Document
    from tracker.library import Library
    from workers import jobs
    from workers.app import make_celery, release_embedded, use_app
    from workers.runtime import close_all

    server = RedisServer(tmp_path / "redis").start()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    settings = Settings.from_env(data_dir).with_(redis_url=server.url, mongo_uri=None)
    with Library.open(settings) as lib:
        lib.ingest([Document(id="mother-1", title="茶山的故事", text=MOTHER)])
    app = make_celery(settings)
    use_app(app)
    worker = None
    try:
        worker = start_worker(
            data_dir,
            app,
            extra={"YINJI_REDIS_URL": server.url, "YINJI_TEST_TASK_DELAY_SAVED": "10"},
        )
        job = jobs.submit_check(texts=[{"title": "盗版", "text": f"转载：{EXCERPT}"}])

        def stored() -> bool:
            with Library.open(settings) as lib:
                return any(s.title == "盗版" for s in lib.store.list_suspects())

        wait_until(stored, 60, "the check to be stored", worker)
        server.stop()  # the work is saved; its result is not recorded yet (10 s later)
        down = time.monotonic()

        def waited() -> bool:
            log = worker.log.read_text(errors="replace")
            return "result not written yet" in log or "Failed operation _store_result" in log

        # Down until the task's result write met the outage (a fixed 8 s could end before
        # it on a loaded machine), and at least 8 s.
        wait_until(waited, 120, "the result write to meet the outage", worker)
        time.sleep(max(0.0, 8 - (time.monotonic() - down)))
        server.start()
        status, _ = wait_job(job, timeout=120)
        assert status["state"] == "SUCCESS", (status, worker.tail())
        assert status["result"]["results"][0]["matches"][0]["mother_id"] == "mother-1"
        counters = {
            k.decode(): v for k, v in app.backend.client.hgetall(f"yinji:task:{job}").items()
        }
        assert counters["runs"] == b"1", counters
        # It did meet the outage: a result write (the task marker's, or Celery's own)
        # waited for Redis.
        log = worker.log.read_text(errors="replace")
        assert "result not written yet" in log or "Failed operation _store_result" in log
    finally:
        if worker is not None:
            worker.stop()
        close_all()
        release_embedded(settings)
        use_app(None)
        server.stop()


# --- smaller -------------------------------------------------------------------------------
def test_node_names_expand_host_placeholders() -> None:
    from workers.cli import node_name

    host = socket.gethostname()
    assert node_name("w1@%h") == f"w1@{host}"
    assert node_name("%n-check@%h") == f"{host.split('.')[0]}-check@{host}"
    assert node_name("w2") == f"w2@{host}"
    assert node_name(None).endswith(f"@{host}") and "%" not in node_name(None)


def test_first_admin_credentials_go_to_a_private_file_not_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import stat

    from tracker.store import open_store
    from web import accounts
    from web.cli import _bootstrap_admin

    settings = Settings(data_dir=tmp_path / "data")
    path = _bootstrap_admin(settings)
    assert path is not None and path.parent == settings.data_dir
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    fields = dict(
        line.split(": ", 1) for line in path.read_text().splitlines() if not line.startswith("#")
    )
    printed = capsys.readouterr()
    for secret in (fields["password"], fields["api_token"]):
        assert secret not in printed.err and secret not in printed.out
    assert str(path) in printed.err
    with open_store(settings) as store:  # the credentials in the file work
        assert accounts.authenticate(store, "admin", fields["password"]) is not None
        assert accounts.user_for_token(store, fields["api_token"]) is not None
    assert _bootstrap_admin(settings) is None  # users exist: nothing new


# --- every job fans out ----------------------------------------------------------------------
@pytest.mark.slow
def test_a_big_check_job_and_the_recheck_spread_over_workers(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One job of 23 texts is 5 chunks that both workers take; the daily re-check of
    the 23 stored suspects is 5 chunks too, its progress the suspects done."""
    import gc
    import json

    from workerkit import EXCERPT, UNRELATED, wait_job, wait_until

    from workers import jobs

    monkeypatch.setenv("YINJI_CHECK_CHUNK", "5")
    inst = installation_factory(tmp_path / "data")
    extra = {"YINJI_RECHECK_CHUNK": "5", "YINJI_TEST_ITEM_DELAY": "0.1"}
    workers = [inst.worker(name=f"w{i}", extra=extra) for i in range(2)]
    texts = [
        {"id": f"t{i:02d}", "title": f"第{i}页", "text": f"{i}：{EXCERPT if i % 2 else UNRELATED}"}
        for i in range(23)
    ]
    job = jobs.submit_check(texts=texts)
    record = json.loads(inst.queue.get(f"yinji:job:{job}"))
    assert [t["total"] for t in record["tasks"]] == [5, 5, 5, 5, 3]
    status, _ = wait_job(job, timeout=120)
    assert status["state"] == "SUCCESS" and status["done"] == status["total"] == 23
    results = status["result"]["results"]
    assert [r["suspect_id"] for r in results] == [t["id"] for t in texts]  # in order
    assert [bool(r["matches"]) for r in results] == [i % 2 == 1 for i in range(23)]
    for w in workers:  # both workers took chunks of the one job
        wait_until(lambda w=w: "check_texts" in w.tail(400), 10, f"{w.hostname} to log", w)

    run = inst.app.send_task("yinji.check.check_new_mothers", kwargs={"since": "2000-01-01"})
    parent, run_id = run.get(timeout=60), run.id
    # Unsubscribe from its result now, while Redis runs (not at garbage collection).
    jobs.release(run)
    del run
    gc.collect()
    assert parent["rechecked"] == 23
    assert [c["total"] for c in parent["fanout"]] == [5, 5, 5, 5, 3]
    status, _ = wait_job(run_id, timeout=120)
    assert status["state"] == "SUCCESS" and status["done"] == status["total"] == 23
    assert sum(leaf["rechecked"] for leaf in status["result"]) == 23
    for w in workers:
        wait_until(lambda w=w: "check_suspects" in w.tail(400), 10, f"{w.hostname} to log", w)


def test_a_task_lost_in_flight_is_sent_again(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
) -> None:
    """A worker killed right after its BRPOP took a message (before kombu recorded it as
    unacknowledged) loses it: nothing would ever deliver it again. A task sent long
    ago that no worker received and that is not in its queue is sent again; one still
    waiting in its queue (a backlog) is left alone."""
    import json
    from datetime import UTC, datetime, timedelta

    from tracker.common.timefmt import iso_utc
    from workers import jobs
    from workers.heartbeat import RunningTask, reap_orphans, running_key

    inst = installation_factory(tmp_path / "data")
    kept = jobs.submit_check(texts=[{"text": "江南的雨季总是来得悄无声息" * 5}])
    lost = jobs.submit_check(texts=[{"text": "城市的地铁在早高峰时挤满了赶路的人" * 5}])
    client = inst.queue
    key = running_key(inst.app)
    for task_id in (kept, lost):
        entry = RunningTask.from_json(client.hget(key, task_id))
        assert entry.node == "" and entry.queue == "check"  # sent, not yet received
        entry.seen = iso_utc(datetime.now(UTC) - timedelta(minutes=5))
        client.hset(key, task_id, entry.to_json())
    assert reap_orphans(inst.app).requeued == []  # both still in the queue
    [raw] = [m for m in client.lrange("check", 0, -1) if json.loads(m)["headers"]["id"] == lost]
    client.lrem("check", 1, raw)  # what a killed worker's BRPOP did
    assert reap_orphans(inst.app).requeued == [lost]
    queued = sorted(json.loads(m)["headers"]["id"] for m in client.lrange("check", 0, -1))
    assert queued == sorted([kept, lost])


def test_a_failed_ingest_reports_per_item_what_was_stored(tmp_path: Path) -> None:
    from tracker.documents.readers import Document, DocumentError
    from tracker.library import Library
    from workers.runtime import close_all
    from workers.tasks.ingest import stored_report

    settings = Settings(data_dir=tmp_path / "data")
    stored = Document(id="w-1", title="一", text="江南的雨季总是来得悄无声息" * 20)
    with Library.open(settings) as lib:
        lib.ingest([stored])
        changed = Document(id="w-1", title="一", text="另一个版本" * 20)  # not what is stored
        missing = Document(id="w-2", title="二", text="城市的地铁在早高峰时挤满了赶路的人" * 20)
        bad = DocumentError("documents[3]", "'text' must be a non-empty string")
        report = stored_report(
            lib, [stored, changed, missing, bad], RuntimeError("layout keeps changing")
        )
    close_all()
    assert report["ingested"] == 1 and report["characters"] == len(stored.text)
    assert [e["source"] for e in report["errors"]] == ["w-1", "w-2", "documents[3]"]
    assert "not stored: layout keeps changing" in report["errors"][1]["message"]
    assert "stopped early" in report["warnings"][0]


def test_the_beat_sends_the_reaper_at_least_every_30_s() -> None:
    from datetime import timedelta

    from workers.schedule import beat_schedule

    entry = beat_schedule()["reap-orphans"]
    assert entry["task"] == "yinji.workers.reap_orphans"
    assert entry["schedule"] <= timedelta(seconds=30)


def test_check_chunks_bound_texts_and_characters() -> None:
    from workers.app import queue_for
    from workers.jobs import check_chunks

    texts = [{"text": "甲" * n} for n in (10, 10, 10, 10, 10, 50, 10)]
    assert [(i, len(c)) for i, c in check_chunks(texts, 2)] == [(0, 2), (2, 2), (4, 2), (6, 1)]
    # 40 characters at most a chunk, unless one text alone is longer
    assert [(i, len(c)) for i, c in check_chunks(texts, 10, chars=40)] == [
        (0, 4),
        (4, 1),
        (5, 1),
        (6, 1),
    ]
    assert check_chunks([], 5) == []
    assert queue_for("yinji.check.check_texts") == "check"
    assert queue_for("yinji.cases.alert_new_matches") == "alerts"
    assert queue_for("yinji.workers.reap_orphans") == "default"
