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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tracker.config import Settings
from workers.app import ALERT_QUEUE, QUEUES, get_celery

log = logging.getLogger(__name__)

WORKER_NICE = 5  # added to the web process's nice value
START_TIMEOUT = 60.0  # seconds both children may take to answer a ping
STOP_TIMEOUT = 30.0  # seconds a child may take to finish its task after SIGTERM


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
class ChildWorkers:
    """The worker processes ``serve`` started; ``stop`` ends them."""

    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def alive(self) -> bool:
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("worker process %s did not stop in %.0f s: killed", p.pid, timeout)
                p.kill()
                p.wait(10)


def _commands(data_dir: Path, loglevel: str) -> list[tuple[str, list[str]]]:
    host, pid = socket.gethostname(), os.getpid()
    work = ",".join(q for q in QUEUES if q != ALERT_QUEUE)
    base = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), "worker"]
    return [
        (
            f"yinji-serve-{pid}@{host}",
            [*base, "-Q", work, "-P", "solo", "-l", loglevel, "-n", f"yinji-serve-{pid}@{host}"],
        ),
        (
            f"yinji-serve-alerts-{pid}@{host}",
            [
                *base,
                *("-Q", ALERT_QUEUE, "-P", "threads", "-c", "4", "-l", loglevel),
                *("-n", f"yinji-serve-alerts-{pid}@{host}"),
            ],
        ),
    ]


def start(
    settings: Settings, *, loglevel: str = "WARNING", timeout: float = START_TIMEOUT
) -> ChildWorkers | None:
    """Start the two worker processes on ``settings``' data folder and wait until both
    answer a ping: the ``ChildWorkers``, or None when they did not come up (they are
    stopped then)."""
    app = get_celery()
    if getattr(app, "yinji_settings", None) is None and not app.configured:
        app.yinji_settings = settings
    preexec = _die_with_parent()
    children = ChildWorkers()
    try:
        nice = os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE
    except OSError:
        nice = None
    for name, command in _commands(settings.data_dir, loglevel):
        # The banner goes to stdout: dropped; warnings and errors are logged on stderr.
        proc = subprocess.Popen(command, preexec_fn=preexec, stdout=subprocess.DEVNULL)
        if nice is not None:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
        children.procs.append(proc)
        children.names.append(name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and children.alive():
        answered = {name for reply in app.control.ping(timeout=1.0) or [] for name in reply}
        if set(children.names) <= answered:
            return children
    log.warning("the worker processes did not start: %s", children.names)
    children.stop(timeout=5)
    return None
