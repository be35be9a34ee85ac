"""Worker processes that ``yinji serve`` starts when no worker runs (issue 25).

A check is CPU work in Python: run on a thread of the web process (the former
in-process worker), it holds the GIL most of the time and every web request waits for
it (GET matches p50 0.5 s, p99 1.3-1.6 s at 50 clients in bench/bench_web_load.py). The
jobs of a single-machine installation therefore run in child processes of
``yinji serve``, as ``yinji worker`` would run them:

- one for every queue but ``alerts``: ``yinji worker --pool solo`` (one task at a time,
  like the former in-process worker), at a nice value 5 above the web process, so the
  web threads get the CPU first and checks take what is left;
- one for ``alerts``: ``--pool threads -c 4``, so an alert receiver that is slow or down
  (timeouts, retries with backoff) never holds a check.

They use the same data folder (the embedded Redis server is shared through its file
lock), get SIGTERM when ``serve`` stops (a warm shutdown: the task running finishes or
is re-queued), and on Linux also when ``serve`` dies without stopping them
(``PR_SET_PDEATHSIG``). ``start`` waits until both answer a ping; if they do not, it
stops them and says so, and ``yinji serve`` falls back to in-process consumers
(``workers.jobs.ensure_worker``).

**Supervised** (issue 37): a thread of ``serve`` watches them (every
``WATCH_INTERVAL`` seconds). One that exits (SIGKILL, OOM, a crash) is reaped (no
zombie) and replaced at once under a new node name; its heartbeat is removed at once
(``/healthz`` then names the queues nobody consumes until the new one is ready), and
the tasks it was running are re-queued at once (``workers.heartbeat.reap_orphans``
with the node known dead), so the job runs again on the new process instead of staying
in PROGRESS. A process that keeps dying within ``STABLE_AFTER`` seconds of its start is
restarted after a growing pause (1 s doubling to ``MAX_BACKOFF``), never given up.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tracker.plumbing.config import Settings
from workers.app import ALERT_QUEUE, QUEUES, get_celery

log = logging.getLogger(__name__)

WORKER_NICE = 5  # added to the web process's nice value
START_TIMEOUT = 60.0  # seconds both children may take to answer a ping
STOP_TIMEOUT = 30.0  # seconds a child may take to finish its task after SIGTERM
WATCH_INTERVAL = 0.5  # seconds between two looks at the children
STABLE_AFTER = 30.0  # a child that ran this long before dying is replaced at once
MAX_BACKOFF = 30.0  # longest pause before replacing a child that keeps dying


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when this process dies (Linux
    ``prctl(PR_SET_PDEATHSIG)``); None elsewhere. libc is loaded here, in the parent:
    the child only makes one C call between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return preexec


@dataclass
class Child:
    """One supervised worker process: what it consumes and how it is started."""

    role: str  # "work" or "alerts"
    name: str
    proc: subprocess.Popen[bytes]
    started: float
    restarts: int = 0


@dataclass
class ChildWorkers:
    """The worker processes ``serve`` started; ``supervise`` replaces one that dies,
    ``stop`` ends them."""

    settings: Settings | None = None
    loglevel: str = "WARNING"
    children: list[Child] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # node names that died
    _stopping: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        return [c.proc for c in self.children]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.children]

    def alive(self) -> bool:
        return bool(self.children) and all(c.proc.poll() is None for c in self.children)

    def supervise(self, interval: float = WATCH_INTERVAL) -> None:
        """Start a thread that replaces a child that exits (``watch``). The children it
        starts die with that thread (``PR_SET_PDEATHSIG`` follows the thread that
        forked them): fine, it lives until ``stop``."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.watch, args=(interval,), name="yinji-serve-workers", daemon=True
            )
            self._thread.start()

    def watch(self, interval: float = WATCH_INTERVAL) -> None:
        """Replace every child that exits, in this thread, until ``stop``. Run it in the
        thread that started the children (``yinji serve`` does): on Linux a child gets
        SIGTERM when the *thread* that forked it ends, so a starting thread that
        returned would stop the workers it had just started."""
        self._watch(interval)

    def _watch(self, interval: float) -> None:
        backoff: dict[str, float] = {}
        while not self._stopping.wait(interval):
            for i, child in enumerate(list(self.children)):
                code = child.proc.poll()  # reaps it: no zombie
                if code is None or self._stopping.is_set():
                    continue
                lived = time.monotonic() - child.started
                pause = 0.0 if lived >= STABLE_AFTER else backoff.get(child.role, 0.5) * 2
                backoff[child.role] = min(MAX_BACKOFF, pause) if pause else 0.5
                try:
                    self._replace(i, child, code, min(MAX_BACKOFF, pause))
                except Exception:  # the next look tries again
                    log.exception("worker process %s not replaced", child.name)

    def _replace(self, i: int, child: Child, code: int, pause: float) -> None:
        from workers.heartbeat import forget_node, reap_orphans

        app = get_celery()
        log.warning(
            "worker process %s (pid %s) exited with %s: replacing it",
            child.name,
            child.proc.pid,
            f"signal {-code}" if code < 0 else f"code {code}",
        )
        self.replaced.append(child.name)
        try:
            forget_node(app, child.name)  # /healthz says at once what nobody consumes
        except Exception as exc:
            log.warning("heartbeat of %s not removed: %s", child.name, exc)
        if pause and self._stopping.wait(pause):
            return
        settings = self.settings or Settings.from_env()
        restarts = child.restarts + 1
        name, command = _command(settings.data_dir, self.loglevel, child.role, restarts)
        with self._lock:
            if self._stopping.is_set():
                return
            self.children[i] = Child(child.role, name, _spawn(command), time.monotonic(), restarts)
        # Its tasks run again on the new process (re-queued under their ids: the task
        # markers keep their results single), not after the heartbeat expires.
        for _ in range(20):
            try:
                report = reap_orphans(app, dead={child.name})
            except Exception as exc:
                log.warning("tasks of %s not re-queued yet: %s", child.name, exc)
                report = None
            if report is not None and not report.skipped:
                break
            time.sleep(0.5)
        log.warning(
            "worker process %s replaced by %s (pid %s)", child.name, name, self.children[i].proc.pid
        )

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        with self._lock:
            procs = self.procs
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("worker process %s did not stop in %.0f s: killed", p.pid, timeout)
                p.kill()
                p.wait(10)


def _spawn(command: list[str]) -> subprocess.Popen[bytes]:
    """Start one worker process: below the web process's priority, dying with it."""
    # The banner goes to stdout: dropped; warnings and errors are logged on stderr.
    # YINJI_ROOT_NOTED: serve said once that it runs as root; the workers say nothing.
    env = {**os.environ, "YINJI_ROOT_NOTED": "1"}
    proc = subprocess.Popen(
        command, preexec_fn=_die_with_parent(), stdout=subprocess.DEVNULL, env=env
    )
    nice: int | None = None
    if hasattr(os, "getpriority"):  # Unix
        with contextlib.suppress(OSError):
            nice = os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE
    if nice is not None:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
    return proc


ROLES = ("work", "alerts")


def _command(
    data_dir: Path, loglevel: str, role: str, generation: int = 0
) -> tuple[str, list[str]]:
    """(node name, command) of the worker process of ``role``; a replacement
    (``generation`` > 0) gets a node name of its own, so the heartbeat of the one that
    died never looks alive again."""
    host, pid = socket.gethostname(), os.getpid()
    suffix = f"-{generation}" if generation else ""
    base = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), "worker"]
    if role == "alerts":
        name = f"yinji-serve-alerts-{pid}{suffix}@{host}"
        args = ["-Q", ALERT_QUEUE, "-P", "threads", "-c", "4"]
    else:
        name = f"yinji-serve-{pid}{suffix}@{host}"
        args = ["-Q", ",".join(q for q in QUEUES if q != ALERT_QUEUE), "-P", "solo"]
    return name, [*base, *args, "-l", loglevel, "-n", name]


def _commands(data_dir: Path, loglevel: str) -> list[tuple[str, list[str]]]:
    return [_command(data_dir, loglevel, role) for role in ROLES]


def start(
    settings: Settings,
    *,
    loglevel: str = "WARNING",
    timeout: float = START_TIMEOUT,
    cancel: threading.Event | None = None,
) -> ChildWorkers | None:
    """Start the two worker processes on ``settings``' data folder and wait until both
    answer a ping: the ``ChildWorkers`` (then ``watch`` them from this same thread, or
    ``supervise`` them), or None when they did not come up or ``cancel`` was set (they
    are stopped then). They get SIGTERM when the thread that calls this ends (Linux
    ``PR_SET_PDEATHSIG`` follows the forking thread)."""
    app = get_celery()
    if getattr(app, "yinji_settings", None) is None and not app.configured:
        app.yinji_settings = settings
    children = ChildWorkers(settings=settings, loglevel=loglevel)
    for role in ROLES:
        name, command = _command(settings.data_dir, loglevel, role)
        children.children.append(Child(role, name, _spawn(command), time.monotonic()))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and children.alive():
        if cancel is not None and cancel.is_set():  # serve stops while they start
            children.stop(timeout=10)
            return None
        answered = {name for reply in app.control.ping(timeout=1.0) or [] for name in reply}
        if set(children.names) <= answered:
            return children
    log.warning("the worker processes did not start: %s", children.names)
    children.stop(timeout=5)
    return None
