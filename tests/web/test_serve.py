"""``yinji serve`` (issue 25): waitress serves the app, and the jobs run in worker
processes of their own (nice +5), not on a thread that holds the web threads' GIL;
they stop with serve, and die with it when it is killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from repo import REPO
from textgen import work


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _call(base: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
    request = urllib.request.Request(
        base + path,
        data=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.status, json.loads(r.read())


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and ps")
def test_serve_runs_jobs_in_worker_processes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("YINJI_DATA_DIR", "YINJI_REDIS_URL", "YINJI_MONGO_URI"):
        env.pop(name, None)
    cli = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data)]
    added = subprocess.run(
        [*cli, "user", "add", "ana", "--role", "analyst", "--password", "correct-horse-1"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    token = added.stdout.strip().splitlines()[-1]
    port = _free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*cli, "serve", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        headers = r.headers
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        assert headers["Server"] == "Yinji"
        assert "waitress" in log.read_text()
        workers = _children(proc.pid)
        assert len(workers) == 2, log.read_text()
        for pid in workers:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert b"worker" in cmd
            assert (
                os.getpriority(os.PRIO_PROCESS, pid)
                == os.getpriority(os.PRIO_PROCESS, proc.pid) + 5
            )
        # a job runs: an import, then a check that finds it
        text = work(2701, 20)
        status, body = _call(
            base, "/api/v1/mothers", token, {"documents": [{"id": "w", "text": text}]}
        )
        assert status == 202
        job = body["job_id"]
        deadline = time.monotonic() + 120
        while _call(base, f"/api/v1/jobs/{job}", token)[1]["state"] not in ("SUCCESS", "FAILURE"):
            assert time.monotonic() < deadline
            time.sleep(0.3)
        status, body = _call(base, "/api/v1/checks", token, {"texts": [{"text": text[50:600]}]})
        job = body["job_id"]
        while (state := _call(base, f"/api/v1/jobs/{job}", token)[1])["state"] not in (
            "SUCCESS",
            "FAILURE",
        ):
            assert time.monotonic() < deadline
            time.sleep(0.3)
        assert state["result"]["results"][0]["matches"][0]["mother_id"] == "w"
        # killed without a word: its workers go too (PR_SET_PDEATHSIG)
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 40
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "worker processes outlived serve"
            time.sleep(0.3)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
        from tracker.indexes.redis_client import stop_embedded_redis
        from tracker.plumbing.config import Settings

        stop_embedded_redis(Settings(data_dir=data))


def test_demo_without_serving_names_no_address(tmp_path: Path) -> None:
    """``yinji demo --no-serve`` loads the data and starts no server: it says how to
    serve it, not "open http://127.0.0.1:8000/" (nothing answers there)."""
    from click.testing import CliRunner

    from tracker.cli import main

    data = tmp_path / "demo data"
    result = CliRunner().invoke(main, ["--data-dir", str(data), "demo", "--no-serve"])
    assert result.exit_code == 0, result.output
    assert "http://" not in result.output
    assert f"start it with 'yinji --data-dir '{data}' serve'" in result.output
    assert "'demo'" in result.output and "'yinji-demo'" in result.output
