"""A worker when there is none: ``ensure_worker`` starts Celery consumers in daemon
threads of this process (``yinji serve``, the demo, tests); production runs ``yinji
worker`` processes."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

from celery import Celery
from celery import _state as _celery_state
from celery.concurrency.base import apply_target
from celery.concurrency.thread import ApplyResult
from celery.concurrency.thread import TaskPool as ThreadTaskPool

from tracker.plumbing.config import Settings
from workers.app import ALERT_QUEUE, QUEUES, app_settings, get_celery
from workers.heartbeat import start_heartbeat, stop_heartbeat

log = logging.getLogger(__name__)

PING_TIMEOUT = 1.0  # seconds to wait for a worker to answer ensure_worker's ping
READY_TIMEOUT = 30.0  # seconds an in-process worker may take to start consuming
WAKE_EVERY = 0.05  # seconds between the wake-ups of a stop (see _wake)
_inprocess_lock = threading.Lock()
_inprocess: dict[str, Any] = {}


def _ping(app: Celery) -> list[object]:
    answers: list[object] = app.control.ping(timeout=PING_TIMEOUT) or []
    return answers


def workers_answer(settings: Settings | None = None) -> bool:
    """True when some worker answers a ping (``PING_TIMEOUT``)."""
    app = get_celery()
    unset = getattr(app, "yinji_settings", None) is None and not app.configured
    if settings is not None and unset:
        app.yinji_settings = settings
    return bool(_ping(app))


def ensure_worker(settings: Settings | None = None) -> bool:
    """Make sure some worker consumes the jobs: ping the workers (``PING_TIMEOUT``) and,
    when none answers, start one in this process: two consumers in daemon threads
    (threads pool, concurrency 1 each), one for every queue but ``alerts`` and one for
    ``alerts``, so an alert receiver that is slow or down (timeouts, retries with
    backoff) never holds a check. True when it started them.

    ``settings`` apply when the job app has none yet (it reads the environment
    otherwise). For a single-process installation and the demo; production runs
    ``yinji worker`` processes.
    """
    app = get_celery()
    if settings is not None:
        if getattr(app, "yinji_settings", None) is None and not app.configured:
            app.yinji_settings = settings
        elif app_settings(app) != settings:
            log.warning("ensure_worker: the job app has other settings; using the app's")
    with _inprocess_lock:
        running = _inprocess.get("threads") or []
        if running and all(t.is_alive() for t in running):
            return False
        if _ping(app):
            return False
        # The threads pool runs each task on Celery's *default* app, not on the
        # worker's: make this app the default (as Flask's celery_init_app does), else
        # the tasks would run on an unconfigured fallback app.
        _inprocess["previous_default"] = _celery_state.default_app
        app.set_default()
        host = f"{os.getpid()}@{socket.gethostname()}"
        work_queues = [q for q in QUEUES if q != ALERT_QUEUE]
        started = [
            _start_inprocess_worker(app, f"yinji-inprocess-{host}", work_queues),
            _start_inprocess_worker(app, f"yinji-inprocess-alerts-{host}", [ALERT_QUEUE]),
        ]
        _inprocess.update(workers=[w for w, _ in started], threads=[t for _, t in started], app=app)
        return True


def _start_inprocess_worker(
    app: Celery, hostname: str, queues: list[str]
) -> tuple[Any, threading.Thread]:
    ready = threading.Event()
    # WorkController, not app.Worker: the latter installs signal handlers, which only
    # the main thread may do, and takes over logging.
    worker = app.WorkController(
        hostname=hostname,
        pool_cls=_WakingThreadPool,
        concurrency=1,
        queues=queues,
        without_mingle=True,
        without_gossip=True,
        # No event loop: Celery keeps one per process (kombu's global hub), and two
        # consumers in one process driving the same hub from two threads break each
        # other's broker connections. Each consumer drains its own connection instead.
        use_eventloop=False,
        ready_callback=lambda consumer: ready.set(),
    )

    def run() -> None:
        try:
            worker.start()
        except Exception:  # a worker thread that dies must say why
            log.exception("in-process worker %s stopped on an error", hostname)
        finally:
            ready.set()

    thread = threading.Thread(target=run, name=f"yinji-inprocess-{queues[0]}", daemon=True)
    thread.start()
    if not ready.wait(READY_TIMEOUT) or not thread.is_alive():
        raise RuntimeError("the in-process worker did not start")
    # The pool marked the whole process as "inside a worker", where result.get() is
    # refused; the host's own threads (web requests, the CLI) are not tasks. Celery's
    # testing worker resets it the same way.
    _celery_state._set_task_join_will_block(False)
    # Its heartbeat (and orphan reaper: jobs of a crashed 'yinji serve' are re-queued
    # within a minute of this start) — app.Worker's worker_ready does it for 'yinji worker'.
    start_heartbeat(app, worker.hostname, queues)
    log.info("started an in-process worker (%s: %s)", worker.hostname, ",".join(queues))
    return worker, thread


def _nudge(app: Celery, hostnames: list[str]) -> None:
    """Wake the idle consumers of ``hostnames``: without an event loop each one waits
    on its broker connection for up to 2 s per cycle (Celery's synloop), for a task
    only while it may take one (prefetch 1: not while its task runs). A control
    message addressed to them (no reply asked) ends the wait at once. The broker is
    reached first with one quick retry: a publish to a broker that is down would
    retry for ever; then the waits end on their own."""
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_max=0.1)
            app.control.broadcast("ping", destination=hostnames, reply=False, connection=conn)
    except Exception:
        log.debug("could not wake the in-process workers %s", hostnames, exc_info=True)


class _WakingThreadPool(ThreadTaskPool):
    """Celery's threads pool that wakes its worker's consumer once a task is done and
    acknowledged. The consumer stopped asking for tasks while this one ran, and would
    ask again only when its 2 s wait ends: every job that followed another waited up
    to 2 s for nothing (measured: ~1.9 s per job of a sequence, 0.04 s with this)."""

    def on_apply(
        self,
        target: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        callback: Any = None,
        accept_callback: Any = None,
        **_: Any,
    ) -> Any:
        app, hostname = self.options["initargs"]

        def run() -> None:
            try:
                apply_target(target, args, kwargs, callback, accept_callback)
            finally:  # the callback acknowledged the task (acks_late)
                _nudge(app, [hostname])

        return ApplyResult(self.executor.submit(run))


def _wake(
    app: Celery | None, hostnames: list[str], threads: list[threading.Thread], deadline: float
) -> None:
    """Join ``threads`` until ``deadline``, waking their consumers (``_nudge``) every
    ``WAKE_EVERY`` s: a consumer checks the stop flag only between its waits, and
    once more after one. Without it every stop waited ~4 s for nothing."""
    while app is not None and any(t.is_alive() for t in threads):
        if time.monotonic() >= deadline:
            return
        _nudge(app, hostnames)
        for thread in threads:
            thread.join(max(0.0, min(WAKE_EVERY, deadline - time.monotonic())))
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def stop_inprocess_worker(timeout: float = 10.0) -> bool:
    """Stop the workers ``ensure_worker`` started (tests, app shutdown). True if they
    stopped within ``timeout`` seconds (or none ran)."""
    with _inprocess_lock:
        workers = _inprocess.pop("workers", None) or []
        threads = _inprocess.pop("threads", None) or []
        app = _inprocess.pop("app", None)
        previous = _inprocess.pop("previous_default", None)
    if not workers:
        return True
    from celery.worker import state as worker_state

    # Ask each worker's own thread to stop (a warm shutdown: running tasks finish), as
    # Celery's testing worker does: its consumer loop checks this flag. Stopping it
    # from this thread instead races the loop for the reply of the pending BRPOP on
    # the broker connection, and the loser waits on the socket for ever.
    worker_state.should_stop = 0
    try:
        deadline = time.monotonic() + timeout
        _wake(app, [worker.hostname for worker in workers], threads, deadline)
    finally:
        worker_state.should_stop = None
    for worker in workers:
        stop_heartbeat(worker.hostname)
    if previous is not None:
        previous.set_default()
    return not any(t.is_alive() for t in threads)
