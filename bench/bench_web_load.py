"""Load on ``yinji serve`` (issue 25): 50 clients against a 12,000-work library, before
(a baseline tree, default ``main``) and after (this tree), in one run.

1. A data folder is built once (kept in ``--cache``, default
   ``/tmp/yinji-load-WORKS-MATCHES``): ``--works`` generated works of about 1,000
   characters ingested through ``tracker.library`` (the index included), ``--matches``
   stored matches (passages, titles, domains, scores spread) so the match list has
   something to page through, and an analyst with an API token.
2. For each tree, a copy of that folder is served by ``python -m tracker.cli serve`` with
   ``PYTHONPATH`` = the tree (its in-process worker included, as a user runs it), and
   ``--clients`` threads send requests for ``--seconds`` seconds, each in a loop: GET
   ``/api/v1/matches`` (a page among the first 20, sorts and filters varied; half of
   the pages without passages), POST ``/api/v1/checks`` (a 1,500-character copy of a
   work), GET ``/api/v1/jobs/ID`` of its last check. Each client keeps its
   connection open (HTTP/1.1 keep-alive, as browsers and client libraries do);
   latency is measured per request, from sending it to its last byte. After the run,
   every job submitted is polled until it is done (``not done``: jobs not finished
   ``--drain`` seconds after the load stopped: a backlog, still queued, not a loss).
   ``--think S``: each client pauses 0.5-1.5 x S seconds between requests (a person, or a
   script polling); 0 (default) sends the next at once: saturation.

    python bench/bench_web_load.py [--baseline main] [--seconds 60] [--write]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from _common import ROOT, publish

BUILD = r"""
import json, random, sys, time
from datetime import timedelta
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from textgen import work
from tracker.plumbing.config import Settings
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.store import Match, Suspect, utcnow
from tracker.common.records import Passage
from web import accounts

data, n_works, n_matches = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
settings = Settings(data_dir=data)
lib = Library.open(settings)
t = time.perf_counter()
docs = (Document(id=f"w{i:05d}", title=f"作品 {i}", text=work(10_000 + i, 30))
        for i in range(n_works))
report = lib.ingest(docs, batch_size=200)
print(f"ingested {report.ingested} works in {time.perf_counter() - t:.0f} s", flush=True)
rng = random.Random(7)
now = utcnow()
domains = [f"pirate{i}.example" for i in range(40)]
made = 0
s = 0
while made < n_matches:
    s += 1
    domain = rng.choice(domains)
    suspect = Suspect(id=f"s{s:06d}", text=work(500_000 + s, 3), title=f"盗版页 {s}",
                      url=f"https://{domain}/book/{s}", domain=domain,
                      fetched_at=now - timedelta(minutes=s))
    lib.store.put_suspect(suspect)
    found = []
    for k in range(rng.choice((1, 1, 2, 3))):
        w = rng.randrange(n_works)
        passages = [Passage(suspect_start=i * 300, suspect_end=i * 300 + 250,
                            mother_start=i * 280, mother_end=i * 280 + 250, similarity=0.9)
                    for i in range(rng.randint(1, 6))]
        found.append(Match(suspect_id=suspect.id, mother_id=f"w{w:05d}",
                           score=round(rng.random(), 4), coverage=round(rng.random(), 4),
                           mother_coverage=round(rng.random(), 4), passages=passages,
                           mother_title=f"作品 {w}", suspect_title=suspect.title,
                           suspect_url=suspect.url, domain=domain,
                           verdict=rng.choice(("pending",) * 6 + ("confirmed", "dismissed")),
                           created_at=now - timedelta(minutes=s)))
    lib.store.put_matches(suspect.id, found)
    made += len(found)
token = accounts.create_user(lib.store, "loadtest", "analyst", "load-test-pass-1")
(data / "bench-token").write_text(token)
lib.close()
print(f"stored {made} matches of {s} suspects", flush=True)
"""


def export(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    ).stdout
    (into / "tree.tar").write_bytes(archive)
    with tarfile.open(into / "tree.tar") as tf:
        tf.extractall(into / "tree", filter="data")
    return into / "tree"


def build(cache: Path, works: int, matches: int) -> Path:
    if (cache / "bench-token").exists():
        return cache
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    support = str(ROOT / "tests" / "support")
    subprocess.run(
        [sys.executable, "-c", BUILD, str(cache), str(works), str(matches), support],
        check=True,
        env=env,
        cwd=cache,
    )
    return cache


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stats:
    times: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    jobs: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, seconds: float, ok: bool) -> None:
        with self.lock:
            self.times.setdefault(kind, []).append(seconds)
            if not ok:
                self.errors[kind] = self.errors.get(kind, 0) + 1


def request(
    port: int,
    method: str,
    path: str,
    token: str,
    body: bytes | None = None,
    conn: http.client.HTTPConnection | None = None,
) -> tuple:
    """One request; on ``conn`` (a kept-alive connection, as browsers and HTTP client
    libraries keep one) when given, else on a connection of its own."""
    own = conn is None
    if conn is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, data
    except BaseException:
        conn.close()  # the next request opens a new connection
        raise
    finally:
        if own:
            conn.close()


def client(
    port: int,
    token: str,
    works: int,
    stop: float,
    stats: Stats,
    seed: int,
    think: float,
    keepalive: bool = True,
) -> None:
    rng = random.Random(seed)
    from textgen import work  # tests/support: generated texts, no third-party text

    last_job = None
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120) if keepalive else None
    while time.monotonic() < stop:
        roll = rng.random()
        if roll < 0.5 or (roll >= 0.75 and last_job is None):
            kind = "GET matches"
            params = [f"page={rng.randint(1, 20)}", "per_page=50"]
            params.append("sort=" + rng.choice(["-score", "-created_at", "-coverage"]))
            if rng.random() < 0.3:
                params.append("verdict=" + rng.choice(["pending", "confirmed"]))
            if rng.random() < 0.2:
                params.append(f"domain=pirate{rng.randrange(40)}.example")
            if rng.random() < 0.5:
                params.append("passages=0")
            path, method, body = "/api/v1/matches?" + "&".join(params), "GET", None
        elif roll < 0.75:
            kind = "POST check"
            w = rng.randrange(works)
            text = work(10_000 + w, 30)
            start = rng.randrange(0, max(1, len(text) - 1500))
            item = {"text": "转载：" + text[start : start + 1500], "title": f"load {w}"}
            path, method = "/api/v1/checks", "POST"
            body = json.dumps({"texts": [item]}, ensure_ascii=False).encode()
        else:
            kind = "GET job"
            path, method, body = f"/api/v1/jobs/{last_job}", "GET", None
        t = time.perf_counter()
        try:
            status, data = request(port, method, path, token, body, conn)
            ok = status < 500 and status != 0
            if kind == "POST check" and status == 202:
                last_job = json.loads(data)["job_id"]
                with stats.lock:
                    stats.jobs.append(last_job)
            elif kind == "POST check":
                ok = False
        except (OSError, http.client.HTTPException):
            ok = False
        stats.add(kind, time.perf_counter() - t, ok)
        if think > 0:  # a person or a script between two requests: 0.5 to 1.5 x think
            time.sleep(rng.uniform(0.5 * think, 1.5 * think))
    if conn is not None:
        conn.close()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_tree(tree: Path, template: Path, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="yinji-load-run-") as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(template, data)
        token = (data / "bench-token").read_text().strip()
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(tree), "YINJI_DATA_DIR": str(data)}
        env.pop("YINJI_REDIS_URL", None)
        env.pop("YINJI_MONGO_URI", None)
        log = open(Path(tmp) / "serve.log", "w")  # noqa: SIM115 -- closed in finally
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracker.cli",
                "--data-dir",
                str(data),
                "serve",
                "--port",
                str(port),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if request(port, "GET", "/healthz", token)[0] == 200:
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((Path(tmp) / "serve.log").read_text()[-2000:])
                time.sleep(0.3)
            for _ in range(3):  # warm up: first queries open connections and caches
                request(port, "GET", "/api/v1/matches?per_page=50", token)
            stats = Stats()
            stop = time.monotonic() + args.seconds
            threads = [
                threading.Thread(
                    target=client,
                    args=(port, token, args.works, stop, stats, i, args.think, args.keepalive),
                    daemon=True,
                )
                for i in range(args.clients)
            ]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            pending = set(stats.jobs)
            drain_start = time.monotonic()
            while pending and time.monotonic() - drain_start < args.drain:
                for job in list(pending):
                    try:
                        status, data_ = request(port, "GET", f"/api/v1/jobs/{job}", token)
                    except OSError:
                        continue
                    if status == 200 and json.loads(data_).get("state") in ("SUCCESS", "FAILURE"):
                        pending.discard(job)
                time.sleep(1)
            return {
                "stats": stats,
                "lost": len(pending),
                "drain": time.monotonic() - drain_start,
            }
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="main", help="git ref measured as 'before'")
    parser.add_argument("--works", type=int, default=12_000)
    parser.add_argument("--matches", type=int, default=30_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--drain", type=float, default=120, help="seconds to wait for jobs")
    parser.add_argument(
        "--no-keepalive",
        dest="keepalive",
        action="store_false",
        help="a new connection for every request",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds a client waits between requests (0: none, saturation)",
    )
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--only", choices=["before", "after"], default=None)
    parser.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.time()
    cache = args.cache or Path(tempfile.gettempdir()) / f"yinji-load-{args.works}-{args.matches}"
    template = build(cache, args.works, args.matches)
    rows = []
    summary = []
    with tempfile.TemporaryDirectory(prefix="yinji-load-base-") as tmp:
        trees = {f"before ({args.baseline})": None, "after": ROOT}
        for label in list(trees):
            if args.only and not label.startswith(args.only):
                continue
            tree = trees[label] or export(args.baseline, Path(tmp))
            result = run_tree(tree, template, args)
            stats: Stats = result["stats"]
            total = sum(len(v) for v in stats.times.values())
            summary.append(
                f"- {label}: {total} requests in {args.seconds:.0f} s "
                f"({total / args.seconds:.0f}/s), errors {sum(stats.errors.values())}, "
                f"checks submitted {len(stats.jobs)}, not done {result['lost']} "
                f"{result['drain']:.0f} s after the load"
            )
            for kind in ("GET matches", "POST check", "GET job"):
                values = stats.times.get(kind, [])
                rows.append(
                    f"| {kind} | {label} | {len(values)} | "
                    f"{statistics.median(values) * 1000 if values else float('nan'):.0f} | "
                    f"{pct(values, 0.99) * 1000:.0f} | {stats.errors.get(kind, 0)} |"
                )
            print("\n".join(rows[-3:] + summary[-1:]), flush=True)
    parts = [
        f"{args.clients} clients"
        + (
            f" waiting {args.think / 2:g}-{args.think * 1.5:g} s between requests"
            if args.think
            else " without pause (saturation)"
        )
        + f", {args.works:,} works, {args.matches:,} stored matches; "
        + (
            "one kept-alive connection per client"
            if args.keepalive
            else "a new connection a request"
        )
        + "; latency in ms, request sent to last byte.",
        "",
        "| request | code | n | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        *summary,
    ]
    section = "Web load" + (f", clients pausing {args.think:g} s" if args.think else "")
    section += "" if args.keepalive else ", a connection a request"
    publish(section, "bench_web_load.py", parts, started, args.write)


if __name__ == "__main__":
    main()
