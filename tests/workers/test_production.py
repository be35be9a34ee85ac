"""Production mode (issue #29): no silent broker fallback, honest health and outages."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from repo import REPO

from tracker.config import SettingError, Settings

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
