"""tracker.indexes.hamming: permuted-table search must equal a brute-force scan."""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np
import pytest

from tracker.indexes.hamming import (
    HammingLayout,
    MemoryHammingIndex,
    RedisHammingIndex,
    brute_force,
    popcount,
)


def _flip(fp: int, d: int, rng: np.random.Generator) -> int:
    for b in rng.choice(64, size=d, replace=False):
        fp ^= 1 << int(b)
    return fp


def _entries(ids: np.ndarray, fps: np.ndarray) -> list[tuple[int, int]]:
    return list(zip(ids.tolist(), fps.tolist(), strict=True))


def _dataset(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random fingerprints plus, for each of 40 queries, neighbours planted at distances
    0..k+1 (two at each distance, one of them differing only in one block region)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    queries = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    planted = []
    for q in queries.tolist():
        for d in range(k + 2):
            planted.append(_flip(q, d, rng))
            # all flips within the top 16 bits: stresses a single block
            low = q
            for b in rng.choice(16, size=d, replace=False):
                low ^= 1 << (63 - int(b))
            planted.append(low)
    fps = np.concatenate([fps, np.array(planted, dtype=np.uint64)])
    ids = rng.permutation(len(fps)).astype(np.int64) * 7 + 3  # arbitrary, unique ids
    return ids, fps, queries


def test_popcount() -> None:
    x = np.array([0, 1, 3, 2**63, 2**64 - 1], dtype=np.uint64)
    assert popcount(x).tolist() == [0, 1, 2, 1, 64]


@pytest.mark.parametrize(("k", "blocks"), [(3, None), (3, 6), (2, None), (4, 7), (0, None)])
def test_layout(k: int, blocks: int | None) -> None:
    lay = HammingLayout(k, blocks)
    b = lay.blocks
    assert sum(lay.sizes) == 64 and len(lay.sizes) == b
    assert len(lay.tables) == comb(b, k)
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64, size=200, dtype=np.uint64)
    for t in range(len(lay.tables)):
        p = lay.permute(fps, t)
        # a permutation of bits: popcounts (hence Hamming distances) are kept
        assert np.array_equal(popcount(p), popcount(fps))
        assert np.array_equal(popcount(p ^ p[0]), popcount(fps ^ fps[0]))
        assert [lay.permute_int(int(f), t) for f in fps[:5]] == p[:5].tolist()
    with pytest.raises(ValueError):
        HammingLayout(3, 3)


@pytest.mark.parametrize(("k", "blocks"), [(3, None), (3, 6), (2, None), (4, None)])
def test_memory_index_equals_brute_force(k: int, blocks: int | None) -> None:
    ids, fps, queries = _dataset(20000, k, seed=k)
    idx = MemoryHammingIndex(k, blocks)
    assert idx.add(_entries(ids, fps)) == len(ids)
    assert len(idx) == len(ids)
    many = idx.query_many(queries)
    total = 0
    for q, got_many in zip(queries.tolist(), many, strict=True):
        expected = brute_force(ids, fps, q, k)
        assert idx.query(q) == expected
        assert got_many == expected
        # both planted sets at distance <= k are found, nothing at k+1
        assert sum(1 for _, d in expected if d <= k) >= 2 * (k + 1)
        assert all(d <= k for _, d in expected)
        total += len(expected)
        for smaller in range(k):
            assert idx.query(q, smaller) == brute_force(ids, fps, q, smaller)
    assert total >= 40 * 2 * (k + 1)
    with pytest.raises(ValueError):
        idx.query(0, k + 1)


def test_memory_index_changes() -> None:
    ids, fps, queries = _dataset(3000, 3, seed=9)
    idx = MemoryHammingIndex(3)
    half = len(ids) // 2
    idx.add(_entries(ids[:half], fps[:half]))
    idx.query(int(queries[0]))  # builds the directory, later changes must refresh it
    idx.add(_entries(ids[half:], fps[half:]))
    assert idx.add(_entries(ids[:100], fps[:100])) == 0  # idempotent
    assert len(idx) == len(ids)
    for q in queries[:10].tolist():
        assert idx.query(q) == brute_force(ids, fps, q, 3)
    # move 50 ids onto the first query, drop 200 others
    fps2 = fps.copy()
    q0 = int(queries[0])
    fps2[:50] = q0
    assert idx.add(_entries(ids[:50], fps2[:50])) == 50
    keep = np.ones(len(ids), dtype=bool)
    keep[100:300] = False
    assert idx.remove(_entries(ids[100:300], fps[100:300])) == 200
    assert idx.remove([(10**12, 1)]) == 0  # unknown: ignored
    # an id under another fingerprint is another entry: not removed
    assert idx.remove([(int(ids[0]), int(fps[0]))]) == 0
    assert len(idx) == keep.sum()
    for q in queries.tolist():
        assert idx.query(q) == brute_force(ids[keep], fps2[keep], q, 3)
    got = dict(idx.query(q0))
    assert all(got[i] == 0 for i in ids[:50].tolist())
    # the same id twice in one call: the last fingerprint wins
    idx.add([(int(ids[0]), 0), (int(ids[0]), 12345)])
    assert (int(ids[0]), 0) in idx.query(12345)
    assert idx.clear() == keep.sum()
    assert len(idx) == 0 and idx.query(q0) == []
    assert idx.query_many([]) == []


def test_memory_index_small_and_empty() -> None:
    idx = MemoryHammingIndex(3)
    assert idx.query(5) == [] and idx.query_many([1, 2]) == [[], []]
    idx.add([(1, 0b111)])
    assert idx.query(0) == [(1, 3)]
    assert idx.query(0, 2) == []
    with pytest.raises(ValueError):
        idx.add([(-1, 0)])


# -- Redis ---------------------------------------------------------------------------------
def test_redis_index_equals_brute_force(redis_client: Any) -> None:
    ids, fps, queries = _dataset(3000, 3, seed=21)
    idx = RedisHammingIndex(redis_client, "yinji:test", name="fp", k=3)
    assert idx.add(_entries(ids, fps)) == len(ids)
    assert len(idx) == len(ids)
    many = idx.query_many(queries)
    for q, got in zip(queries.tolist(), many, strict=True):
        expected = brute_force(ids, fps, q, 3)
        assert got == expected
        assert idx.query(q) == expected
        assert idx.query(q, 1) == brute_force(ids, fps, q, 1)
    # every key is namespaced and a bucket or an id-map shard
    keys = [k.decode() for k in redis_client.scan_iter(match="*", count=1000)]
    assert keys and all(k.startswith("yinji:test:hamming:fp:") for k in keys)
    buckets = [k for k in keys if k.split(":")[4] != "ids"]
    assert {k.split(":")[4] for k in buckets} == {"t0", "t1", "t2", "t3"}
    assert all(len(k.split(":")[5]) == 4 for k in buckets)  # 16-bit prefixes in hex
    fp0 = int(fps[0])
    assert redis_client.sismember(
        idx.bucket_key(fp0, 2), fp0.to_bytes(8, "big") + int(ids[0]).to_bytes(8, "big")
    )


def test_redis_index_idempotent_moves_and_removes(redis_client: Any) -> None:
    ids, fps, queries = _dataset(1500, 3, seed=5)
    idx = RedisHammingIndex(redis_client, "yinji:test", k=3)
    idx.add(_entries(ids, fps))
    pattern = f"{idx.base}:t*"
    before = {k: redis_client.smembers(k) for k in redis_client.scan_iter(match=pattern)}
    assert idx.add(_entries(ids[:500], fps[:500])) == 0
    after = {k: redis_client.smembers(k) for k in redis_client.scan_iter(match=pattern)}
    assert before == after
    # move ids onto a query and remove others
    q0 = int(queries[0])
    fps2 = fps.copy()
    fps2[:20] = q0
    assert idx.add(_entries(ids[:20], fps2[:20])) == 20
    assert idx.remove([*_entries(ids[50:150], fps[50:150]), (999999999, 1)]) == 100
    # an id under another fingerprint is another entry: not removed
    assert idx.remove([(int(ids[0]), int(fps[0]))]) == 0
    keep = np.ones(len(ids), dtype=bool)
    keep[50:150] = False
    assert len(idx) == keep.sum()
    assert idx.get([int(ids[0]), int(ids[60])]) == [q0, None]
    for q in queries.tolist():
        assert idx.query(q) == brute_force(ids[keep], fps2[keep], q, 3)
    # removing everything leaves no bucket behind (empty sets vanish)
    idx.remove(_entries(ids, fps2))
    assert list(redis_client.scan_iter(match=pattern)) == []
    assert len(idx) == 0


def test_redis_index_clear_only_its_keys(redis_client: Any) -> None:
    redis_client.set("yinji:other", b"x")
    a = RedisHammingIndex(redis_client, "yinji:test", name="a")
    b = RedisHammingIndex(redis_client, "yinji:test", name="b")
    a.add([(1, 5), (2, 6)])
    b.add([(1, 5)])
    assert a.clear() > 0
    assert a.query(5) == [] and b.query(5) == [(1, 0)]
    assert redis_client.get("yinji:other") == b"x"


def test_redis_index_rejects_decoding_client(redis_client: Any) -> None:
    import redis

    client = redis.Redis(
        connection_pool=redis.ConnectionPool(
            connection_class=redis.UnixDomainSocketConnection,
            path=redis_client.socket_file,
            decode_responses=True,
        )
    )
    with pytest.raises(ValueError):
        RedisHammingIndex(client, "yinji:test")
    client.close()
