"""Inverted-index test kit: a filled index with every kind of field, lookups compared,
and writes racing a reshard; shared by the single-server tests (tests/tracker/indexes)
and the Redis Cluster ones (tests/tracker/test_redis_cluster.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from redis_cluster import write_during_reshard

from tracker.indexes.inverted import MIN_BITS, RedisInvertedIndex


def unmix(z: np.ndarray) -> np.ndarray:
    """The inverse of ``tracker.indexes.keys.mix64``: fingerprints of chosen mixes."""
    z = z.astype(np.uint64, copy=True)
    inv2, inv1 = np.uint64(0x319642B2D24D8EC3), np.uint64(0x96DE1B173F119089)
    with np.errstate(over="ignore"):
        z ^= (z >> np.uint64(31)) ^ (z >> np.uint64(62))
        z *= inv2
        z ^= (z >> np.uint64(27)) ^ (z >> np.uint64(54))
        z *= inv1
        z ^= (z >> np.uint64(30)) ^ (z >> np.uint64(60))
        z -= np.uint64(0x9E3779B97F4A7C15)
    return z


def same_lookup(
    a: tuple[np.ndarray, np.ndarray, int], b: tuple[np.ndarray, np.ndarray, int]
) -> bool:
    return np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]


def filled_index(redis_client: Any) -> tuple[RedisInvertedIndex, np.ndarray]:
    """An index with fields of one, two, three and more mothers, and stop markers."""
    idx = RedisInvertedIndex(redis_client, "t:snap", bucket_bits=7, stop_df=4)
    rng = np.random.default_rng(5)
    shared = rng.integers(0, 2**63, 40, dtype=np.uint64)
    items = []
    for seq in range(1, 31):
        own = rng.integers(0, 2**63, 300, dtype=np.uint64)
        # shared[i] is held by the mothers seq % (i + 1) == 0: 30, 15, 10, ... of them.
        common = shared[[i for i in range(40) if seq % (i + 1) == 0]]
        items.append((seq, np.concatenate([own, common])))
    idx.add(items)
    absent = rng.integers(0, 2**63, 200, dtype=np.uint64)
    query = np.unique(np.concatenate([shared, items[3][1][:50], items[17][1][:50], absent]))
    return idx, query


def guarded_writes_survive_a_reshard(redis: Any, prefix: str) -> None:
    """Adds and removes planned with the layout before a reshard and landing while it
    moves the buckets: none is lost (or resurrected) once the new layout is in place."""
    rng = np.random.default_rng(11)
    old = [(seq, rng.integers(1, 2**63, 300, dtype=np.uint64)) for seq in range(1, 21)]
    new = [(seq, rng.integers(1, 2**63, 300, dtype=np.uint64)) for seq in range(21, 41)]
    writer = RedisInvertedIndex(redis, prefix, bucket_bits=MIN_BITS)
    mover = RedisInvertedIndex(redis, prefix)
    writer.add(old)
    write_during_reshard(writer, mover, lambda: writer.add(new), MIN_BITS + 2)
    write_during_reshard(writer, mover, lambda: writer.remove(old[:5]), MIN_BITS + 3)
    reader = RedisInvertedIndex(redis, prefix)
    assert reader.bucket_bits == MIN_BITS + 3
    for seq, fps in old[5:] + new:
        _, seqs, _ = reader.lookup(fps)
        assert seqs.tolist() == [seq] * fps.size, seq
    for _, fps in old[:5]:
        assert reader.lookup(fps)[1].size == 0
    # Nothing was left behind in a dropped layout's buckets.
    keys = [k.decode() for k in redis.scan_iter(match=f"{prefix}:b*")]
    assert keys and all(k.startswith(f"{prefix}:b{MIN_BITS + 3}v2:") for k in keys)
    assert not redis.exists(reader.moving_key)
