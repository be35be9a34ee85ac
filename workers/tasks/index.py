"""Index tasks (queue ``index``).

A rebuild fans out (``tracker.indexes.refill``): ``rebuild_index`` plans the chunks
(``YINJI_REBUILD_CHUNK`` mothers each) and sends them as one Celery group of
``refill_chunk`` tasks that any worker takes; each chunk, once done, adds itself to the
rebuild's *join set* (``<prefix>:rebuild:<job>:<plan>``, one key: usable on Redis Cluster)
and the chunk that completes it sends ``load_index``, which clears and bulk loads the
index under the index lock. Until then the old index answers checks. The job's progress
is its chunks' mothers, then the load's (``workers.jobs.job_status`` follows the fan-out).

Not a Celery chord: a chord counts deliveries, so a chunk delivered twice (its worker
killed after the work, before the acknowledgement) would count twice and could start the
load before another chunk had finished. A set counts each chunk once however often it
runs, and ``load_index`` has a task id derived from the job's, so a second send of it
finds the first one's result (``once``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TypedDict

from celery import Task, shared_task

from tracker.common.records import JSONObject
from tracker.indexes.health import IndexOutOfSync
from tracker.indexes.refill import RefillChunk
from tracker.services import rebuild_parts
from workers.app import app_settings, queue_for, worker_settings
from workers.backend import release
from workers.heartbeat import track_sent
from workers.tasks._base import (
    TASK_OPTIONS,
    FanoutEntry,
    Progress,
    child_id,
    fanout,
    once,
    rt,
    task_key,
)

log = logging.getLogger(__name__)

LOAD_WAIT = 3600.0  # seconds a second delivery of a load waits for the first one


class Join(TypedDict):
    """Where the chunks of one rebuild meet: the set's key, how many chunks, the load
    task's id and the engine."""

    key: str
    chunks: int
    load_id: str
    engine: str
    mothers: int


class RebuildStarted(TypedDict):
    fanout: list[FanoutEntry]
    engine: str
    chunks: int
    mothers: int
    total: int


class RefillResult(TypedDict):
    engine: str
    lo: int
    hi: int
    mothers: int
    computed: int
    total: int


class LoadResult(TypedDict):
    engine: str
    mothers: int
    seconds: float
    total: int


@shared_task(name="yinji.index.rebuild_index", **TASK_OPTIONS)
def rebuild_index(self: Task, engine: str | None = None) -> RebuildStarted:
    """Recreate an engine's index from the store (``yinji index rebuild``): the chunks
    of ``IndexAdmin.plan_rebuild`` sent as ``refill_chunk`` tasks; the last one done
    sends ``load_index``. Idempotent by nature: the index is cleared and rebuilt from
    the store, the source of truth."""
    result: RebuildStarted = once(self, lambda: _rebuild(self, engine))
    return result


def _rebuild(task: Task, engine: str | None) -> RebuildStarted:
    library = rt(task).library
    work = rebuild_parts.plan_rebuild(library, engine, worker_settings(task.app).rebuild_chunk)
    parent = task.request.id or "direct"
    # The plan is part of the join key: a parent delivered again after the store
    # changed plans other chunks, which must not complete the first plan's set.
    digest = hashlib.sha1(
        json.dumps([(c.lo, c.hi) for c in work.chunks]).encode(), usedforsecurity=False
    ).hexdigest()[:12]
    join: Join = {
        "key": f"{app_settings(task.app).redis_prefix}:rebuild:{parent}:{digest}",
        "chunks": len(work.chunks),
        "load_id": child_id(parent, f"load:{digest}"),
        "engine": work.engine,
        "mothers": work.mothers,
    }
    children = fanout(
        task,
        [
            ("yinji.index.refill_chunk", [work.engine, c.lo, c.hi, c.mothers, join], {}, c.label)
            for c in work.chunks
        ],
        totals=[c.mothers for c in work.chunks],
    )
    load: FanoutEntry = {
        "id": join["load_id"],
        "label": "load",
        "total": max(1, work.mothers),
        "after": [c["id"] for c in children],
    }
    if not work.chunks:  # an empty library: nothing to refill, the index is cleared
        _send_load(task, join)
    return {
        "fanout": [*children, load],
        "engine": work.engine,
        "chunks": len(work.chunks),
        "mothers": work.mothers,
        "total": 2 * work.mothers,
    }


@shared_task(name="yinji.index.refill_chunk", **TASK_OPTIONS)
def refill_chunk(
    self: Task, engine: str, lo: int, hi: int, mothers: int, join: Join
) -> RefillResult:
    """One chunk of a rebuild: the fingerprints of the mothers with seqs ``lo..hi``
    stored (computed where missing); then the chunk joins its rebuild, and the chunk
    that completes the join sends the load. Run again (a redelivery), it writes the
    same bytes and joins once."""
    result: RefillResult = once(self, lambda: _refill(self, engine, lo, hi, mothers))
    _join(self, join, f"{lo}-{hi}")
    return result


def _refill(task: Task, engine: str, lo: int, hi: int, mothers: int) -> RefillResult:
    progress = Progress(task, total=mothers)
    progress.start()
    done = rebuild_parts.refill_chunk(
        rt(task).library, engine, RefillChunk(lo, hi, mothers), progress=progress
    )
    return {
        "engine": done.engine,
        "lo": done.lo,
        "hi": done.hi,
        "mothers": done.mothers,
        "computed": done.computed,
        "total": max(1, mothers),
    }


def _join(task: Task, join: Join, member: str) -> None:
    """Count this chunk in its rebuild's set (once, however often it runs); when the
    set is complete, send the load (its id fixed by the job, so sending it twice runs
    it once)."""
    client = getattr(task.app.backend, "client", None)
    if client is None:  # no Redis backend (a direct call): nothing to join
        return
    pipe = client.pipeline(transaction=True)  # one key: a MULTI is fine on a Cluster
    pipe.sadd(join["key"], member)
    pipe.scard(join["key"])
    pipe.expire(join["key"], worker_settings(task.app).result_expires)
    _, count, _ = pipe.execute()
    if int(count) >= join["chunks"]:
        _send_load(task, join)


def _send_load(task: Task, join: Join) -> None:
    name = "yinji.index.load_index"
    args = [join["engine"], join["mothers"]]
    track_sent(task.app, [(join["load_id"], name, args, {}, queue_for(name))])
    release(task.app.signature(name, args=args).apply_async(task_id=join["load_id"]))


@shared_task(name="yinji.index.load_index", **TASK_OPTIONS)
def load_index(self: Task, engine: str, mothers: int = 0) -> LoadResult:
    """The last step of a rebuild: the index cleared and bulk loaded from the stored
    fingerprints (``IndexAdmin.load``), under the index lock."""
    result: LoadResult = once(self, lambda: _load(self, engine, mothers))
    return result


def _load(task: Task, engine: str, mothers: int) -> LoadResult:
    library = rt(task).library
    progress = Progress(task, total=max(1, mothers))
    progress.start()
    try:
        info = rebuild_parts.load_index(library, engine, progress=progress)
    except IndexOutOfSync:
        # Another delivery of this very load holds the lock (a chunk sent it again):
        # wait for it and answer with its result; anything else holding it is an error.
        client = getattr(task.app.backend, "client", None)
        if client is None or not rebuild_parts.wait_for_load(library, engine, LOAD_WAIT):
            raise
        cached = client.hget(task_key(task, task.request.id), "result")
        if cached is None:
            raise
        got: LoadResult = json.loads(cached)
        return got
    return {
        "engine": info.engine,
        "mothers": info.mothers,
        "seconds": round(info.seconds, 3),
        "total": max(1, info.mothers),
    }


@shared_task(name="yinji.index.refresh_snapshots", **TASK_OPTIONS)
def refresh_snapshots(self: Task) -> list[JSONObject]:
    """Tail segments merged into their index (``Library.merge_index_tails``: a worker
    has the time an ingest at the terminal has not), then a fresh local copy of each
    index that changed and is big enough (``Library.refresh_snapshots``; the beat sends
    it every ``YINJI_SNAPSHOT_MINUTES``)."""
    library = rt(self).library
    merged = [library.merge_index_tails(name).to_dict() for name in library.indexed_engines()]
    done: list[JSONObject] = library.refresh_snapshots()
    return [*[m for m in merged if m["segments"]], *done]
