"""What every task shares: options, the idempotency guard, progress, network errors."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict, TypeVar

import redis.exceptions
from celery import Task
from pymongo.errors import ConnectionFailure

from tracker.crawler import CrawlError
from workers.app import app_settings, queue_for, worker_settings
from workers.backend import release
from workers.heartbeat import track_sent
from workers.runtime import Runtime, runtime

log = logging.getLogger(__name__)
T = TypeVar("T")

# Network errors worth another try later. A CrawlError reaches here only when it is
# transient (timeout, unreachable, 5xx/429): the crawl task returns the permanent ones
# (404, robots.txt, SSRF guard) as a result instead of raising them.
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    CrawlError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionFailure,
)

TASK_OPTIONS: dict[str, Any] = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": NETWORK_ERRORS,
    "retry_backoff": True,
    "retry_jitter": True,
    "max_retries": 3,
}


def rt(task: Task) -> Runtime:
    return runtime(task.app)


def task_key(task: Task, task_id: str) -> str:
    return f"{app_settings(task.app).redis_prefix}:task:{task_id}"


def _test_delay(name: str) -> None:
    """Test-only slow paths (``YINJI_TEST_TASK_DELAY`` before a task's work,
    ``YINJI_TEST_TASK_DELAY_AFTER`` after it, ``YINJI_TEST_ITEM_DELAY`` per item) so a
    test can kill a worker in the middle of a task or watch its progress."""
    raw = os.environ.get(name)
    if raw:
        time.sleep(float(raw))


def once(task: Task, work: Callable[[], T]) -> T:
    """Run ``work`` at most once to completion per task id, and return its result.

    A redelivered message (the worker died after the work but before the
    acknowledgement) or a duplicate send carries the same task id: it finds the stored
    result and returns it without doing the work again. A delivery that died *during*
    the work left no result, so the work runs again; it is safe to, because every write
    is an upsert by a deterministic id (suspects by URL/text digest, matches by
    suspect+mother, mothers by their id).

    Bookkeeping lives in the result backend's Redis, hash ``<prefix>:task:<id>``:
    ``deliveries`` (times the task started), ``runs`` (times its work completed) and
    ``result`` (JSON), kept ``YINJI_RESULT_EXPIRES`` seconds.
    """
    task_id = task.request.id
    client = getattr(task.app.backend, "client", None)
    if task.request.called_directly or not task_id or client is None:
        return work()
    key = task_key(task, task_id)
    ttl = worker_settings(task.app).result_expires

    def begin() -> list[Any]:
        pipe = client.pipeline()
        pipe.hincrby(key, "deliveries", 1)
        pipe.hget(key, "result")
        pipe.expire(key, ttl)
        return list(pipe.execute())

    deliveries, cached, _ = begin()
    if cached is not None:
        log.info(
            "task %s[%s] already done (delivery %s): not run again", task.name, task_id, deliveries
        )
        cached_result: T = json.loads(cached)
        return cached_result
    _test_delay("YINJI_TEST_TASK_DELAY")
    result = retry_races(work, f"task {task.name}[{task_id}]")
    payload = json.dumps(result, ensure_ascii=False)  # also proves it is JSON-serialisable
    _test_delay("YINJI_TEST_TASK_DELAY_SAVED")

    def finish() -> None:
        pipe = client.pipeline()
        pipe.hset(key, "result", payload)
        pipe.hincrby(key, "runs", 1)
        pipe.expire(key, ttl)
        pipe.execute()

    # The work is saved: a Redis outage now must not turn it into a failure (a retry
    # would need the broker, which is down too). Wait for Redis and record it.
    until_redis_answers(finish, f"task {task.name}[{task_id}] result")
    _test_delay("YINJI_TEST_TASK_DELAY_AFTER")
    return result


RACE_RETRIES = 5  # tries again after a transient index race (0.5, 1, 2, 4, 8 s apart)


def is_index_race(exc: BaseException) -> bool:
    """A transient race of the index (its layout changed under a write, e.g. during the
    first ingest on a Redis Cluster while it reshards): the same work succeeds when
    tried again a moment later."""
    if type(exc).__name__ in ("IndexLayoutChanged", "LayoutChanged"):
        return True
    return isinstance(exc, RuntimeError) and "keeps changing" in str(exc)


def retry_races(
    work: Callable[[], T],
    what: str,
    retries: int = RACE_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``work()``, run again with backoff after a transient index race
    (``is_index_race``), at most ``retries`` more times, inside the task: a task failed
    by a race would leave its job reporting less than was really stored. The work is
    idempotent (upserts by deterministic ids), so running it again is safe."""
    for attempt in range(retries + 1):
        try:
            return work()
        except Exception as exc:
            if not is_index_race(exc) or attempt == retries:
                raise
            wait = 0.5 * 2**attempt
            log.warning("%s: %s; trying again in %.1f s", what, exc, wait)
            sleep(wait)
    raise AssertionError("unreachable")


RESULT_WRITE_PATIENCE = 300.0  # seconds a finished task waits for Redis to record it


def until_redis_answers(
    write: Callable[[], T], what: str, patience: float = RESULT_WRITE_PATIENCE
) -> T:
    """``write()``, tried again with backoff (0.1 s doubling to 5 s) while Redis does
    not answer, for at most ``patience`` seconds; then the error is raised."""
    deadline = time.monotonic() + patience
    wait = 0.1
    while True:
        try:
            return write()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if time.monotonic() + wait > deadline:
                raise
            log.warning("%s not written yet (%s); trying again in %.1f s", what, exc, wait)
            time.sleep(wait)
            wait = min(5.0, wait * 2)


class ProgressMeta(TypedDict):
    """The meta of a task's PROGRESS state (what ``workers.jobs.job_status`` reads)."""

    done: int
    total: int | None
    fraction: float


def progress_meta(done: int, total: int | None) -> ProgressMeta:
    fraction = min(1.0, done / total) if total else 0.0
    return {"done": done, "total": total, "fraction": round(fraction, 4)}


class Progress:
    """``update_state(PROGRESS)`` at most every ``min_interval`` seconds (and for the
    first and the last item). Also a ``tracker.library.Progress`` callback."""

    def __init__(self, task: Task, total: int | None, min_interval: float = 0.25) -> None:
        self.task = task
        self.total = total
        self.min_interval = min_interval
        self._last = 0.0

    def start(self) -> None:
        """Report 0 of total at once, so a poller sees the size of the job early."""
        self._report(0, self.total)

    def __call__(self, done: int, total: int | None = None) -> None:
        _test_delay("YINJI_TEST_ITEM_DELAY")
        total = total or self.total
        now = time.monotonic()
        last_item = total is not None and done >= total
        if self._last and not last_item and now - self._last < self.min_interval:
            return
        self._report(done, total)

    def _report(self, done: int, total: int | None) -> None:
        self._last = time.monotonic()
        if not self.task.request.called_directly and self.task.request.id:
            try:
                self.task.update_state(state="PROGRESS", meta=progress_meta(done, total))
            except Exception as exc:  # progress is for show: the work goes on
                log.warning("progress of %s not recorded: %s", self.task.request.id, exc)


def child_id(parent_id: str, key: str) -> str:
    """A child task's id derived from its parent's: a redelivered parent sends the same
    children again under the same ids, and their own guard makes that harmless."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"yinji-task:{parent_id}:{key}"))


#: A child task to send: (task name, args, kwargs, label).
Child = tuple[str, Sequence[object], Mapping[str, object], str]


class FanoutEntry(TypedDict):
    """A child a task fanned out, as its result lists it (``"fanout"``)."""

    id: str
    label: str
    total: int
    after: NotRequired[list[str]]  # sent only after these (a rebuild's load)


def fanout(
    task: Task,
    children: Sequence[Child],
    totals: list[int] | None = None,
) -> list[FanoutEntry]:
    """Send ``(task name, args, kwargs, label)`` children as one Celery group; the
    returned list goes into the parent's result as ``{"fanout": [...]}`` so
    ``workers.jobs.job_status`` can follow them (progress = items of the children
    finished / items; ``totals``: each child's items, default 1)."""
    from celery import group

    parent = task.request.id or str(uuid.uuid4())
    out: list[FanoutEntry] = []
    signatures = []
    for i, (name, args, kwargs, label) in enumerate(children):
        cid = child_id(parent, f"{i}:{label}")
        signatures.append(
            task.app.signature(name, args=list(args), kwargs=dict(kwargs)).set(task_id=cid)
        )
        out.append({"id": cid, "label": label, "total": totals[i] if totals else 1})
    if signatures:
        track_sent(
            task.app,
            [
                (o["id"], c[0], list(c[1]), dict(c[2]), queue_for(c[0]))
                for o, c in zip(out, children, strict=True)
            ],
        )
        # Not in the parent's "children" (its result lists them as "fanout"): a client
        # reading the parent's result would otherwise rebuild and subscribe to each.
        release(group(signatures).apply_async(add_to_parent=False))
    return out
