"""Adds into a non-empty index, three ways, measured as Redis CPU a posting and wall:
the script that merges inside Redis (``lua/add_many.lua``), merging on the client
(issue #28's first option, an experiment kept here), and whole-bucket appends
(``tracker/indexes/appends.py``: what ``RedisInvertedIndex.add`` runs on a single
server, the postings it cannot append going to the script).

The client-merged path (it is not in ``tracker``: it cut Redis' share by ~15 % for 7x
the client's CPU; docs/BENCHMARKS.md, *Fast by default*): the batch's (identity,
seq) pairs grouped by identity, each field's value as a new field made with numpy
(``bulk.fill_values``); per chunk of buckets on one connection ``WATCH`` the move mark
and the buckets, ``HMGET`` the touched fields, merge the fields that exist as the script
does (``codec.merge_value``), then ``MULTI`` / one ``HSET`` a bucket / ``EXEC`` (refused when
another writer touched a watched bucket: the chunk is read again). Commands packed with
numpy and sent raw, as the bulk load sends its HSETs.

    python bench/bench_add_paths.py --data KEPT/default-path/data --docs NEW.jsonl

``--data``: a data folder a ``bench_scale.py --keep`` run left (copied, never written);
``--docs``: works not in it (``bench_scale.generate_library`` with another seed and id
prefix). Each round copies the folder once per path, adds the same works through the
library's index (editions, version marks and all), reads Redis ``INFO cpu`` before and
after, and checks that every path left the same fields and values in every bucket.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracker.indexes.bulk import fill_values, hset_commands
from tracker.indexes.codec import merge_value
from tracker.indexes.keys import pack_fields, split_identity

PER_TX = 128  # buckets a WATCH covers (WATCH checks its list per key: keep it short)
TRIES = 4  # refused EXECs of a chunk before giving up (one writer here: never)


class Moved(Exception):
    """A reshard came between (not expected in this benchmark)."""


def hmget_commands(keys: list[bytes], per_key: np.ndarray, fields: np.ndarray) -> list[bytes]:
    """RESP of ``HMGET key f ...`` for each key with its ``per_key`` fields (rows of
    ``fields``), one bytes object a key."""
    n, fw = fields.shape
    head = f"${fw}\r\n".encode()
    rs = len(head) + fw + 2
    rec = np.empty((n, rs), dtype=np.uint8)
    rec[:, : len(head)] = np.frombuffer(head, np.uint8)
    rec[:, len(head) : len(head) + fw] = fields
    rec[:, -2:] = (13, 10)
    body = rec.tobytes()
    out: list[bytes] = []
    at = 0
    for k, c in zip(keys, per_key.tolist(), strict=True):
        out.append(
            b"*%d\r\n$5\r\nHMGET\r\n$%d\r\n%s\r\n" % (c + 2, len(k), k) + body[at : at + rs * c]
        )
        at += rs * c
    return out


def _resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def add_pairs(
    index,
    ident: np.ndarray,
    seqs: np.ndarray,
    *,
    per_tx: int = PER_TX,
    tries: int = TRIES,
) -> tuple[int, int, tuple[np.ndarray, np.ndarray]]:
    """Add (identity, seq) pairs (arrival order: a field's seqs are stored in it) to a
    single-server ``index``: (postings new, fields new, the pairs left for the script
    after ``tries`` refused writes). Raises ``Moved`` when a reshard came between."""
    empty = (np.zeros(0, np.uint64), np.zeros(0, np.uint32))
    if ident.size == 0:
        return 0, 0, empty
    order = np.argsort(ident, kind="stable")
    ident, seqs = ident[order], seqs[order].astype(np.uint32)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ident)) + 1])
    groups = ident[starts]
    vlen, vdata, posts = fill_values(seqs, starts, index.stop_df)
    vstart = np.cumsum(vlen) - vlen
    buckets, fields = split_identity(groups, index.bucket_bits, index.ident_bits)
    packed = pack_fields(fields, index.field_bytes)
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(buckets)) + 1])
    per_bucket = np.diff(np.append(firsts, groups.size))
    prefix = index.key_prefix().encode()
    keys = [prefix + b"%d" % b for b in buckets[firsts].tolist()]
    hset_buf, hset_at = hset_commands(keys, per_bucket, packed, vlen, vdata)
    hset_end = np.append(hset_at[1:], len(hset_buf)).tolist()
    hset_at_l = hset_at.tolist()
    hmgets = hmget_commands(keys, per_bucket, packed)
    field_first = firsts.tolist()
    field_end = np.append(firsts[1:], groups.size).tolist()
    seq_first = np.append(starts, seqs.size)
    raw_seqs = seqs.astype("<u4").tobytes()
    packed_bytes = packed.tobytes()
    fw = index.field_bytes
    moving = index.moving_key.encode()
    layout_key = index.layout_key.encode()
    layout = index.layout.encode()
    posts_l = posts.tolist()
    new_posts = new_fields = 0
    left: list[tuple[int, int]] = []  # field ranges refused ``tries`` times

    pool = index.redis.connection_pool
    try:
        conn = pool.get_connection()
    except TypeError:  # redis-py before 5.3 wants a command name
        conn = pool.get_connection("WATCH")
    try:
        for a in range(0, len(keys), per_tx):
            z = min(a + per_tx, len(keys))
            for _ in range(tries):
                conn.send_packed_command(
                    [
                        b"".join(
                            [
                                _resp(b"WATCH", moving, *keys[a:z]),
                                _resp(b"HGET", layout_key, b"layout"),
                                _resp(b"EXISTS", moving),
                                *hmgets[a:z],
                            ]
                        )
                    ],
                    check_health=False,
                )
                conn.read_response()  # OK
                stored = conn.read_response()
                is_moving = conn.read_response()
                values = [conn.read_response() for _ in range(z - a)]
                if is_moving or (stored is not None and stored != layout):
                    conn.send_packed_command([_resp(b"UNWATCH")], check_health=False)
                    conn.read_response()
                    raise Moved(index.prefix)
                commands: list[bytes] = []
                got_posts = got_fields = 0
                for i, vals in enumerate(values, start=a):
                    f0 = field_first[i]
                    old = [j for j, v in enumerate(vals) if v is not None]
                    if not old:  # the common case: every field new
                        commands.append(hset_buf[hset_at_l[i] : hset_end[i]])
                        got_posts += sum(posts_l[f0 : field_end[i]])
                        got_fields += field_end[i] - f0
                        continue
                    args: list[bytes] = [b"HSET", keys[i]]
                    old_set = set(old)
                    for j in range(field_end[i] - f0):
                        f = f0 + j
                        name = packed_bytes[fw * f : fw * f + fw]
                        if j in old_set:
                            mine = [
                                raw_seqs[4 * s : 4 * s + 4]
                                for s in range(int(seq_first[f]), int(seq_first[f + 1]))
                            ]
                            value, added = merge_value(vals[j], mine, index.stop_df)
                            got_posts += added
                            if value is not None:
                                args += [name, value]
                        else:
                            v0 = int(vstart[f])
                            args += [name, vdata[v0 : v0 + int(vlen[f])].tobytes()]
                            got_posts += posts_l[f]
                            got_fields += 1
                    if len(args) > 2:
                        commands.append(_resp(*args))
                conn.send_packed_command(
                    [b"".join([_resp(b"MULTI"), *commands, _resp(b"EXEC")])], check_health=False
                )
                conn.read_response()  # OK
                for _ in commands:
                    conn.read_response()  # QUEUED
                done = conn.read_response()
                if done is not None:
                    new_posts += got_posts
                    new_fields += got_fields
                    break
            else:
                left.append((field_first[a], field_end[z - 1]))
    except BaseException:
        conn.disconnect()  # it may be inside WATCH or MULTI
        raise
    finally:
        pool.release(conn)
    if not left:
        return new_posts, new_fields, empty
    rows = np.concatenate([np.arange(seq_first[f0], seq_first[f1]) for f0, f1 in left])
    return new_posts, new_fields, (ident[rows], seqs[rows])


def merged_add(index, items, per_call=None):
    """Stands in for ``RedisInvertedIndex._add_sorted``: the script's replies' shape."""
    parts = [(index.identities(np.unique(np.asarray(f, dtype=np.uint64))), s) for s, f in items]
    ident = np.concatenate([p for p, _ in parts])
    seqs = np.concatenate([np.full(p.size, s, np.uint32) for p, s in parts])
    n, nf, left = add_pairs(index, ident, seqs)
    assert left[0].size == 0
    return [[n, nf]]


# The script alone (lua/add_many.lua), the client-merged experiment, and what an add
# runs today: whole-bucket appends (tracker/indexes/appends.py), the rest by the script.
MODES = ("script", "merged", "appends")


def digest(redis, prefix: str) -> tuple[int, str]:
    h = hashlib.sha256()
    keys = sorted(redis.scan_iter(match=f"{prefix}*", count=5000))
    for key in keys:
        h.update(key)
        for f, v in sorted(redis.hgetall(key).items()):
            h.update(f)
            h.update(v)
    return len(keys), h.hexdigest()


def run(data: Path, docs: Path, mode: str, work: Path) -> dict[str, object]:
    from tracker.documents.readers import iter_documents
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    copy = work / f"data-{mode}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data, copy)
    lib = Library.open(replace(Settings.from_env(), data_dir=copy))
    try:
        engine = lib.engine("daguan")
        index = engine.index
        if mode == "merged":
            index._add_sorted = lambda items, per_call=None: merged_add(index, items)
        elif mode == "script":  # the script alone, without whole-bucket appends
            index._appends = None
        texts = [d.text for d in iter_documents([docs])]
        items = [(50_000_000 + i, engine.mother_fingerprints(t)) for i, t in enumerate(texts)]
        redis = lib.redis
        c0 = redis.info("cpu")
        t0, p0 = time.perf_counter(), time.process_time()
        new = index.add(items)
        wall, py = time.perf_counter() - t0, time.process_time() - p0
        c1 = redis.info("cpu")
        cpu = sum(c1[k] - c0[k] for k in ("used_cpu_user", "used_cpu_sys"))
        keys, dig = digest(redis, index.key_prefix())
        return {
            "mode": mode,
            "chars": sum(map(len, texts)),
            "postings": new,
            "wall_s": round(wall, 2),
            "python_cpu_s": round(py, 2),
            "redis_cpu_s": round(cpu, 2),
            "redis_us_a_posting": round(cpu / max(new, 1) * 1e6, 2),
            "buckets": keys,
            "digest": dig,
        }
    finally:
        lib.close()
        shutil.rmtree(copy, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--docs", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="yinji-addpaths-"))
    try:
        results = []
        for _ in range(args.rounds):
            for mode in MODES:
                results.append(run(args.data, args.docs, mode, work))
                print(json.dumps(results[-1]), flush=True)
        same = len({r["digest"] for r in results}) == 1
        for mode in MODES:
            mine = [r for r in results if r["mode"] == mode]
            got = sorted(r["redis_us_a_posting"] for r in mine)
            walls = sorted(r["wall_s"] for r in mine)
            print(f"{mode}: Redis µs a posting {got}, wall s {walls}")
        print("buckets identical on both paths:", same)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
