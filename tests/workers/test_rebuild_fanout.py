"""An index rebuild spread over workers (``workers.tasks.index``, issue #29): chunks joined
once each however often they run, a load that waits for every chunk (and is reported
as not run when a chunk failed), and a chunk whose worker was killed mid-way run again
once, with the job's progress counting every mother once per step."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from textgen import work

from tracker.plumbing.config import WorkerSettings


def _task(client: Any) -> Any:
    app = SimpleNamespace(backend=SimpleNamespace(client=client))
    return SimpleNamespace(app=app, request=SimpleNamespace(id="parent"))


def test_a_chunk_counts_once_however_often_it_runs(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Celery chord counts deliveries: chunk a delivered twice would start the load
    before chunk b is done. The join set counts chunks."""
    from workers.tasks import index

    sent: list[str] = []
    monkeypatch.setattr(index, "worker_settings", lambda app: WorkerSettings())
    monkeypatch.setattr(index, "_send_load", lambda task, join: sent.append(join["load_id"]))
    join: index.Join = {
        "key": "t:rebuild:parent:abc",
        "chunks": 2,
        "load_id": "load-1",
        "engine": "daguan",
        "mothers": 7,
    }
    task = _task(redis_client)
    index._join(task, join, "1-4")
    index._join(task, join, "1-4")  # chunk a again (its worker killed before the ack)
    assert sent == []
    index._join(task, join, "5-9")
    assert sent == ["load-1"]
    assert redis_client.ttl(join["key"]) > 0  # the set expires with the results


def test_a_load_after_a_failed_chunk_is_reported_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """job_status: the load of a rebuild whose chunk failed is never sent; the job must
    not stay in progress for ever but fail, naming the chunk (the old index answers)."""
    from celery import states

    from workers import status

    metas = {
        "c1": {"status": states.SUCCESS, "result": {"lo": 1, "hi": 2, "mothers": 2, "total": 2}},
        "c2": {"status": states.FAILURE, "result": ValueError("disk full")},
        "load": {"status": states.PENDING, "result": None},
    }
    monkeypatch.setattr(status, "task_metas", lambda app, ids: {i: metas[i] for i in ids})
    entries = [
        {"id": "c1", "label": "mothers 1..2", "total": 2},
        {"id": "c2", "label": "mothers 3..4", "total": 2},
        {"id": "load", "label": "load", "total": 4, "after": ["c1", "c2"]},
    ]
    _, _, load = status._nodes(None, entries, 1)  # type: ignore[arg-type]
    assert load.ready and load.state == states.FAILURE
    assert load.failures[0]["error"] == "not run: mothers 3..4 failed (ValueError: disk full)"
    # While a chunk still runs, the load is only waiting.
    metas["c2"] = {"status": "PROGRESS", "result": {"done": 1, "total": 2}}
    _, _, load = status._nodes(None, entries, 1)  # type: ignore[arg-type]
    assert not load.ready and load.state == states.PENDING


@pytest.mark.slow
def test_a_rebuild_spreads_and_a_killed_chunk_runs_again_once(
    tmp_path: Path,
    installation_factory,  # type: ignore[no-untyped-def]
) -> None:
    """7 mothers in chunks of 2: the worker running a chunk is SIGKILLed (default
    visibility timeout); the other worker finishes the job within 90 s, the killed
    chunk delivered twice and run once, every other task run once; the result and the
    progress count each mother once per step."""
    from workerkit import wait_job, wait_until

    from tracker.documents.readers import Document
    from tracker.library import Library
    from workers import jobs
    from workers.heartbeat import RunningTask, running_key

    inst = installation_factory(tmp_path / "data")
    with Library.open(inst.settings) as lib:
        docs = [Document(id=f"w{i}", title=f"作品{i}", text=work(40 + i, 30)) for i in range(6)]
        lib.ingest(docs)
        before = lib.check_text(docs[3].text[100:500]).matches
    assert [m.mother_id for m in before] == ["w3"]
    extra = {"YINJI_REBUILD_CHUNK": "2"}
    doomed = inst.worker(name="doomed", extra={**extra, "YINJI_TEST_ITEM_DELAY": "120"})
    job = jobs.submit_rebuild()
    client = inst.queue
    key = running_key(inst.app)

    def chunk_on_doomed() -> str:
        for task_id, raw in client.hgetall(key).items():
            entry = RunningTask.from_json(raw)
            if entry.name == "yinji.index.refill_chunk" and entry.node == doomed.hostname:
                return str(task_id.decode())
        return ""

    killed_chunk = wait_until(chunk_on_doomed, 30, "a chunk to start", doomed)
    survivor = inst.worker(name="survivor", extra=extra)
    doomed.kill()
    killed = time.monotonic()
    status, seen = wait_job(job, timeout=90)
    assert time.monotonic() - killed < 90
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    assert (result["engine"], result["mothers"], result["chunks"]) == ("daguan", 7, 4)
    assert (result["refilled"], result["computed"], result["errors"]) == (7, 0, [])
    # Progress: 7 mothers refilled then 7 loaded, never more than that, never backwards.
    assert status["done"] == status["total"] == 14
    dones = [s["done"] for s in seen if s["done"] is not None]
    assert all(s["total"] in (None, 14) for s in seen)
    assert dones == sorted(dones) and max(dones) == 14
    assert inst.task_counters(killed_chunk) == {"deliveries": 2, "runs": 1}
    parent = inst.app.AsyncResult(job).result
    for child in parent["fanout"]:
        counters = inst.task_counters(child["id"])
        assert counters["runs"] == 1, (child, counters)
    with Library.open(inst.settings) as lib:
        after = lib.check_text(docs[3].text[100:500]).matches
    assert [(m.mother_id, m.score) for m in after] == [(m.mother_id, m.score) for m in before]
    assert survivor.proc.poll() is None


def test_a_second_delivery_of_a_running_load_waits_and_answers_its_result(
    tmp_path: Path, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a visibility timeout shorter than the load, its message comes again while
    it runs: that delivery finds the index lock held, waits, and returns the first
    delivery's result instead of loading the index a second time."""
    import json
    import threading

    from tracker.library import Library
    from tracker.plumbing.config import Settings
    from tracker.store import open_store
    from workers.tasks import index

    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    lib = Library(settings, open_store(settings), redis_client)
    try:
        task = _task(redis_client)
        monkeypatch.setattr(index, "rt", lambda t: SimpleNamespace(library=lib))
        monkeypatch.setattr(index, "task_key", lambda t, i: f"t:task:{i}")
        monkeypatch.setattr(index, "Progress", lambda t, total: SimpleNamespace(start=lambda: 0))
        first = {"engine": "daguan", "mothers": 3, "seconds": 0.5, "total": 3}
        held, refused = threading.Event(), threading.Event()
        held_load = _held(lib)

        def load(engine: str, **kw: Any) -> None:
            try:
                held_load(engine, **kw)
            finally:
                refused.set()

        def first_delivery() -> None:
            with lib.tracker.lock("daguan"):
                held.set()
                # Held until the second delivery found it held (a fixed 0.5 s could
                # lapse first on a loaded machine), then for a while more: it waits.
                refused.wait(60)
                time.sleep(0.5)
                redis_client.hset("t:task:parent", "result", json.dumps(first))

        monkeypatch.setattr(lib.indexes, "load", load)
        thread = threading.Thread(target=first_delivery)
        thread.start()
        assert held.wait(60)
        assert index._load(task, "daguan", 3) == first
        thread.join(60)
    finally:
        lib.store.close()


def _held(lib: Any) -> Any:
    """``IndexAdmin.load`` as it behaves while another process holds the index lock."""

    def load(engine: str, **_: Any) -> None:
        with lib.tracker.lock(engine):
            raise AssertionError("the lock was free")

    return load
