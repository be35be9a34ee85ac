"""Orphaned jobs found within a minute, whatever the visibility timeout.

A task whose worker dies (SIGKILL, OOM, a lost machine, a crashed ``yinji serve``) keeps
its message unacknowledged; Redis delivers it again only after
``YINJI_VISIBILITY_TIMEOUT`` (an hour by default), and restarting the worker does not
release it. So each worker says it lives, and each task says where it runs:

- **Heartbeat**: every worker node (a ``yinji worker`` process, each consumer of the
  in-process worker of ``yinji serve``) sets ``{<prefix>:workers}:hb:<node>`` every
  ``HEARTBEAT_INTERVAL`` seconds with a ``HEARTBEAT_TTL`` expiry, from a daemon thread.
- **Running tasks**: a task is an entry of the hash ``{<prefix>:workers}:running``
  (task id → its name, arguments, queue, node, and how often it was re-queued) from
  when it is sent (``track_sent``: no node yet) or a worker receives it (its node)
  until it has finished (not when it only asked for a retry).
- **Reaper** (``reap_orphans``): an entry whose node has no heartbeat (and was not
  touched for ``HEARTBEAT_TTL``) is re-queued under the same task id, so the idempotency
  guard (``workers.tasks._base.once``) keeps its results single; after ``MAX_REQUEUES``
  re-queues it is marked failed with the reason instead (the task's work killed its
  workers). A task sent ``LOST_AFTER`` seconds ago that no worker received and that is
  neither in its queue nor among kombu's unacknowledged messages was lost in flight (a
  worker killed after its BRPOP took the message and before kombu recorded it) and is
  sent again. Every worker runs it every ``REAP_INTERVAL`` seconds (one at a time, by a
  Redis lock), and the beat sends ``yinji.workers.reap_orphans`` as often.

The keys share one hash tag, so every multi-key command stays on one Redis Cluster slot;
they live in the result backend's Redis (a plain Redis server even when the index is a
Cluster, ``YINJI_BROKER_URL``). The original message is still delivered again after the
visibility timeout; it then finds the stored result and does nothing.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from celery import Celery, signals, states
from celery.exceptions import WorkerLostError

from tracker.common.timefmt import human_utc, iso_utc, parse_utc
from workers.app import app_settings, worker_settings
from workers.backend import TaskMeta, backend_client, release, task_metas
from workers.schedule import REAP_INTERVAL

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL = 5.0  # seconds between two heartbeats of a worker node
HEARTBEAT_TTL = 20  # seconds a heartbeat lasts: a node silent this long is gone
MAX_REQUEUES = 2  # re-queues of one task before it is marked failed
LOST_AFTER = 30  # seconds a sent task may be neither received nor in its queue
UNACKED_KEY = "unacked"  # kombu's Redis transport: messages a consumer has taken
TASK_PREFIX = "yinji."  # only Yinji's own tasks are tracked


def _now() -> str:
    return iso_utc(datetime.now(UTC))


def _tag(app: Celery) -> str:
    return "{" + f"{app_settings(app).redis_prefix}:workers" + "}"


def heartbeat_key(app: Celery, node: str) -> str:
    return f"{_tag(app)}:hb:{node}"


def running_key(app: Celery) -> str:
    return f"{_tag(app)}:running"


def reaper_lock_key(app: Celery) -> str:
    return f"{_tag(app)}:reaper"


def nodes_key(app: Celery) -> str:
    """Hash node → the queues it consumes (JSON list), written with each heartbeat."""
    return f"{_tag(app)}:nodes"


# --- heartbeats -------------------------------------------------------------------------
def _namespace() -> str:
    """This machine and PID namespace: two nodes with the same one can see whether the
    other's process still runs (a container has a namespace of its own)."""
    try:
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        ns = ""
    return f"{socket.gethostname()}|{ns}"


class Heartbeat:
    """Daemon threads that keep one node's heartbeat fresh and run the reaper (on a
    thread of its own: a reaper pass that waits on the broker never delays a beat)."""

    def __init__(
        self, app: Celery, node: str, *, reap: bool = True, queues: list[str] | None = None
    ) -> None:
        self.app = app
        self.node = node
        self.reap = reap
        self.queues = sorted(queues or [])
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, name=f"yinji-heartbeat-{node}", daemon=True)
        ]
        if reap:
            self._threads.append(
                threading.Thread(target=self._reap, name=f"yinji-reaper-{node}", daemon=True)
            )
        self._entry = json.dumps({"queues": self.queues, "where": _namespace(), "pid": os.getpid()})

    def start(self) -> Heartbeat:
        self.beat()  # at once: a task may arrive before the first interval
        for thread in self._threads:
            thread.start()
        return self

    def beat(self) -> None:
        try:
            pipe = backend_client(self.app).pipeline(transaction=False)
            pipe.set(heartbeat_key(self.app, self.node), _now(), ex=HEARTBEAT_TTL)
            pipe.hset(nodes_key(self.app), self.node, self._entry)
            pipe.execute()
        except Exception as exc:  # Redis down: the next beat tries again
            log.warning("heartbeat of %s not written: %s", self.node, exc)

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_INTERVAL):
            self.beat()

    def _reap(self) -> None:
        while not self._stop.wait(REAP_INTERVAL):
            try:
                reap_orphans(self.app)
            except Exception as exc:
                log.warning("orphan reaper pass failed: %s", exc)

    def stop(self) -> None:
        """Stop beating and remove the heartbeat (a clean stop leaves no orphans: a warm
        shutdown lets running tasks finish first)."""
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(HEARTBEAT_INTERVAL + 1)
        try:
            forget_node(self.app, self.node)
        except Exception as exc:
            log.warning("heartbeat of %s not removed: %s", self.node, exc)


_beats: dict[str, Heartbeat] = {}
_beats_lock = threading.Lock()


def start_heartbeat(app: Celery, node: str, queues: list[str] | None = None) -> Heartbeat:
    """Start (once per node in this process) the heartbeat thread of ``node``, which
    consumes ``queues`` (what ``consumers`` and /healthz report)."""
    with _beats_lock:
        hb = _beats.get(node)
        if hb is None:
            hb = _beats[node] = Heartbeat(app, node, queues=queues).start()
        return hb


def forget_node(app: Celery, node: str) -> None:
    """Remove ``node``'s heartbeat and its queues at once: it stopped (cleanly, or its
    process is known dead: ``workers.children`` saw it exit), so nobody has to wait for
    the heartbeat to expire to know it."""
    pipe = backend_client(app).pipeline(transaction=False)
    pipe.delete(heartbeat_key(app, node))
    pipe.hdel(nodes_key(app), node)
    pipe.execute()


@dataclass
class NodeEntry:
    """What a worker node says of itself in ``{<prefix>:workers}:nodes``."""

    queues: list[str]
    where: str = ""  # host and PID namespace (``_namespace``)
    pid: int = 0

    @classmethod
    def from_json(cls, raw: bytes | str) -> NodeEntry:
        data = json.loads(raw)
        if isinstance(data, list):  # the queues alone
            return cls([str(q) for q in data])
        queues = data.get("queues") if isinstance(data, dict) else None
        return cls(
            [str(q) for q in queues] if isinstance(queues, list) else [],
            str(data.get("where") or ""),
            int(data.get("pid") or 0),
        )

    def dead_here(self) -> bool:
        """Its process ran on this machine, in this PID namespace, and is gone: known at
        once, without waiting for its heartbeat to expire."""
        from tracker.indexes.redis_client import process_alive

        return bool(self.pid) and self.where == _namespace() and not process_alive(self.pid)


def _node_entries(app: Celery) -> dict[str, NodeEntry | None]:
    raw = backend_client(app).hgetall(nodes_key(app))
    out: dict[str, NodeEntry | None] = {}
    for name, value in raw.items():
        key = name.decode() if isinstance(name, bytes) else str(name)
        try:
            out[key] = NodeEntry.from_json(value)
        except (TypeError, ValueError, AttributeError):
            out[key] = None
    return out


def dead_nodes(app: Celery) -> set[str]:
    """Registered nodes whose process is known gone (``NodeEntry.dead_here``)."""
    return {n for n, e in _node_entries(app).items() if e is not None and e.dead_here()}


def consumers(app: Celery) -> dict[str, list[str]]:
    """The live worker nodes (a fresh heartbeat, and a process that still runs when it
    ran on this machine) and the queues each consumes. Nodes found gone are dropped
    from the registry on the way."""
    client = backend_client(app)
    entries = _node_entries(app)
    if not entries:
        return {}
    names = list(entries)
    beats = client.mget([heartbeat_key(app, n) for n in names])
    live: dict[str, list[str]] = {}
    gone = []
    for name, beat in zip(names, beats, strict=True):
        entry = entries[name]
        if beat is None or entry is None or entry.dead_here():
            gone.append(name)
            continue
        live[name] = entry.queues
    if gone:
        client.hdel(nodes_key(app), *gone)
    return live


def missing_queues(app: Celery, queues: tuple[str, ...] | list[str]) -> list[str]:
    """Those of ``queues`` that no live worker node consumes (jobs sent there wait)."""
    served = {q for qs in consumers(app).values() for q in qs}
    return [q for q in queues if q not in served]


def stop_heartbeat(node: str) -> None:
    with _beats_lock:
        hb = _beats.pop(node, None)
    if hb is not None:
        hb.stop()


def _on_worker_ready(sender: Any = None, **_: Any) -> None:
    # ``yinji worker`` and ``celery worker`` (app.Worker) send it; the in-process worker
    # starts its heartbeats itself (workers.jobs).
    if sender is not None and getattr(sender, "hostname", None):
        start_heartbeat(sender.app, sender.hostname, _consumed(sender))


def _consumed(consumer: Any) -> list[str]:
    """The queues a worker's consumer reads."""
    task_consumer = getattr(consumer, "task_consumer", None)
    queues = getattr(task_consumer, "queues", None) or []
    names = [str(q.name) for q in queues if getattr(q, "name", None)]
    if names:
        return names
    try:
        return sorted(consumer.app.amqp.queues.consume_from)
    except Exception:
        return []


def _on_worker_shutdown(sender: Any = None, **_: Any) -> None:
    if sender is not None and getattr(sender, "hostname", None):
        stop_heartbeat(sender.hostname)


# --- running tasks ----------------------------------------------------------------------
@dataclass
class RunningTask:
    """An entry of the running-tasks hash."""

    id: str
    name: str
    args: list[Any]
    kwargs: dict[str, Any]
    queue: str | None
    node: str  # "" while it waits in a queue after a re-queue
    seen: str  # iso_utc of the last change
    requeues: int = 0
    history: list[str] = field(default_factory=list)  # nodes it was lost on

    def to_json(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: bytes | str) -> RunningTask:
        data = json.loads(raw)
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__ if k in data})


def track_sent(
    app: Celery, tasks: list[tuple[str, str, list[object], dict[str, object], str]]
) -> None:
    """Note tasks just sent, ``(task id, name, args, kwargs, queue)``, as waiting for a
    worker, so that one lost in flight is found (``reap_orphans``). Never raises."""
    try:
        now = _now()
        pipe = backend_client(app).pipeline(transaction=False)
        key = running_key(app)
        for task_id, name, args, kwargs, queue in tasks:
            entry = RunningTask(task_id, name, list(args), dict(kwargs), queue, "", now)
            pipe.hsetnx(key, task_id, entry.to_json())
        pipe.execute()
    except Exception as exc:
        log.warning("sent tasks not recorded: %s", exc)


def _on_task_received(sender: Any = None, request: Any = None, **_: Any) -> None:
    """The worker took a message: note the task and its node (in the worker's main
    process). A re-queued task keeps its count of re-queues."""
    try:
        name = request.task_name
        if not name or not name.startswith(TASK_PREFIX):
            return
        app = request.task.app
        client = backend_client(app)
        key = running_key(app)
        old = client.hget(key, request.task_id)
        before = RunningTask.from_json(old) if old else None
        entry = RunningTask(
            id=request.task_id,
            name=name,
            args=list(request.args or []),
            kwargs=dict(request.kwargs or {}),
            queue=(request.delivery_info or {}).get("routing_key"),
            node=request.hostname or getattr(sender, "hostname", "") or "",
            seen=_now(),
            requeues=before.requeues if before else 0,
            history=before.history if before else [],
        )
        client.hset(key, request.task_id, entry.to_json())
    except Exception as exc:  # bookkeeping never stops a task
        log.warning("running task not recorded: %s", exc)


def _on_task_postrun(
    sender: Any = None, task_id: str | None = None, state: str | None = None, **_: Any
) -> None:
    """The task has finished (in the process that ran it): forget it, unless it only
    asked to be retried (its next delivery is on its way)."""
    try:
        if sender is None or not task_id or not str(sender.name).startswith(TASK_PREFIX):
            return
        if state == states.RETRY:
            return
        backend_client(sender.app).hdel(running_key(sender.app), task_id)
    except Exception as exc:
        log.warning("running task %s not cleared: %s", task_id, exc)


signals.worker_ready.connect(_on_worker_ready, weak=False)
signals.worker_shutdown.connect(_on_worker_shutdown, weak=False)
signals.task_received.connect(_on_task_received, weak=False)
signals.task_postrun.connect(_on_task_postrun, weak=False)


# --- the reaper -------------------------------------------------------------------------
@dataclass
class ReapReport:
    """What one reaper pass did (task ids)."""

    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)  # finished tasks left in the hash
    skipped: bool = False  # another process was reaping

    def to_dict(self) -> dict[str, list[str] | bool]:
        return {
            "requeued": self.requeued,
            "failed": self.failed,
            "cleared": self.cleared,
            "skipped": self.skipped,
        }


def _age(entry: RunningTask, now: float) -> float:
    try:
        return now - parse_utc(entry.seen).timestamp()
    except (TypeError, ValueError):
        return float("inf")


def reap_orphans(app: Celery, dead: frozenset[str] | set[str] = frozenset()) -> ReapReport:
    """One pass: every tracked task whose node has no heartbeat is re-queued under its
    own id, or marked failed with the reason after ``MAX_REQUEUES`` re-queues; tasks
    already finished are forgotten. ``dead``: nodes known to have stopped (their
    process exited: ``workers.children``), whose tasks are re-queued at once, without
    waiting for their heartbeat to expire. One process at a time (a Redis lock)."""
    client = backend_client(app)
    report = ReapReport()
    token = uuid.uuid4().hex
    lock = reaper_lock_key(app)
    if not client.set(lock, token, nx=True, ex=max(5, int(REAP_INTERVAL))):
        report.skipped = True
        return report
    try:
        _reap(app, client, report, dead)
    finally:
        if client.get(lock) in (token, token.encode()):
            client.delete(lock)
    if report.requeued or report.failed:
        log.warning(
            "orphaned tasks: %d re-queued, %d failed (their worker stopped)",
            len(report.requeued),
            len(report.failed),
        )
    return report


def _reap(app: Celery, client: Any, report: ReapReport, dead: frozenset[str] | set[str]) -> None:
    key = running_key(app)
    raw = client.hgetall(key)
    if not raw:
        return
    entries: list[RunningTask] = []
    for task_id, value in raw.items():
        try:
            entries.append(RunningTask.from_json(value))
        except (ValueError, TypeError):
            client.hdel(key, task_id)
    now = time.time()
    nodes = sorted({e.node for e in entries if e.node})
    alive_flags = client.mget([heartbeat_key(app, n) for n in nodes]) if nodes else []
    dead = set(dead) | (dead_nodes(app) & set(nodes))
    alive = {n for n, v in zip(nodes, alive_flags, strict=True) if v is not None} - dead
    metas: dict[str, TaskMeta] = {}
    for i in range(0, len(entries), 1000):  # one round trip per 1,000 tasks
        metas.update(task_metas(app, [e.id for e in entries[i : i + 1000]]))
    expires = worker_settings(app).result_expires
    waiting: list[RunningTask] = []
    for entry in entries:
        meta = metas[entry.id]
        if meta.get("status") in states.READY_STATES:
            client.hdel(key, entry.id)
            report.cleared.append(entry.id)
            continue
        if not entry.node:  # sent or re-queued, waiting for a worker
            if _age(entry, now) > expires:
                client.hdel(key, entry.id)
            elif _age(entry, now) > LOST_AFTER and meta.get("status") == states.PENDING:
                waiting.append(entry)
            continue
        if entry.node in alive or (entry.node not in dead and _age(entry, now) < HEARTBEAT_TTL):
            continue
        lost_on = entry.node
        if entry.requeues >= MAX_REQUEUES:
            _fail(app, entry, lost_on)
            client.hdel(key, entry.id)
            report.failed.append(entry.id)
            continue
        entry.history = [*entry.history, lost_on]
        entry.requeues += 1
        entry.node = ""
        entry.seen = _now()
        client.hset(key, entry.id, entry.to_json())
        options: dict[str, Any] = {"task_id": entry.id}
        if entry.queue:
            options["queue"] = entry.queue
        release(app.send_task(entry.name, args=entry.args, kwargs=entry.kwargs, **options))
        log.warning(
            "task %s[%s] re-queued: its worker %s stopped (re-queue %d of %d)",
            entry.name,
            entry.id,
            lost_on,
            entry.requeues,
            MAX_REQUEUES,
        )
        report.requeued.append(entry.id)
    if waiting:
        present = _queued_ids(client, {e.queue or "default" for e in waiting})
        for entry in waiting:
            if entry.id in present:
                continue  # still in its queue (a backlog), or taken and not yet noted
            entry.seen = _now()
            client.hset(key, entry.id, entry.to_json())
            options = (
                {"task_id": entry.id, "queue": entry.queue}
                if entry.queue
                else {"task_id": entry.id}
            )
            release(app.send_task(entry.name, args=entry.args, kwargs=entry.kwargs, **options))
            log.warning("task %s[%s] was lost in flight: sent again", entry.name, entry.id)
            report.requeued.append(entry.id)


_ID = re.compile(rb'"id":\s*"([0-9a-fA-F-]{36})"')


# Messages in a queue above which lost tasks are not looked for (yet): a task lost in
# flight is rare, and a long backlog would make every pass read megabytes of messages;
# once the queue has drained to this length the lost task is found and sent again.
MAX_SCAN = 200


class _Everything(set[str]):
    def __contains__(self, item: object) -> bool:
        return True


_ALL = _Everything()


def _queued_ids(client: Any, queues: set[str], page: int = 1000) -> set[str]:
    """Task ids of the messages in these queues and among kombu's unacknowledged ones
    (read in pages; only when a task looks lost)."""
    found: set[str] = set()
    for queue in queues:
        if client.llen(queue) > MAX_SCAN:
            return _ALL  # a long backlog: look again when it has drained
        start = 0
        while True:
            batch = client.lrange(queue, start, start + page - 1)
            for raw in batch:
                found.update(m.decode() for m in _ID.findall(raw))
            if len(batch) < page:
                break
            start += page
    for raw in client.hvals(UNACKED_KEY):
        found.update(m.decode() for m in _ID.findall(raw))
    return found


def _fail(app: Celery, entry: RunningTask, lost_on: str) -> None:
    nodes = ", ".join([*entry.history, lost_on])
    reason = (
        f"the worker running this task stopped ({nodes}; no heartbeat for "
        f"{HEARTBEAT_TTL} s, last seen {human_utc(parse_utc(entry.seen))}); "
        f"re-queued {entry.requeues} time(s), each run lost its worker: not re-queued again"
    )
    app.backend.mark_as_failure(entry.id, WorkerLostError(reason))
    log.error("task %s[%s] failed: %s", entry.name, entry.id, reason)
