import numpy as np

from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import (
    IDENTITY_BITS,
    RESHARD_FIELDS,
    bits_for,
    mix64,
    pack_fields,
)


def test_mix64_is_a_bijection_on_samples():
    rng = np.random.default_rng(1)
    values = np.unique(rng.integers(0, 2**63, 100_000, dtype=np.uint64))
    assert np.unique(mix64(values)).size == values.size


def _postings(idx, fps):
    fp_index, seqs, stopped = idx.lookup(np.asarray(fps, dtype=np.uint64))
    out: dict[int, set[int]] = {}
    for i, s in zip(fp_index.tolist(), seqs.tolist(), strict=True):
        out.setdefault(int(fps[i]), set()).add(s)
    return out, stopped


def test_add_lookup_remove(redis_client):
    idx = RedisInvertedIndex(redis_client, "t:daguan", bucket_bits=8)
    a = np.array([1, 2, 3, 2**45 + 7], dtype=np.uint64)
    b = np.array([3, 4], dtype=np.uint64)
    assert idx.add([(10, a), (11, b)]) == 6
    post, stopped = _postings(idx, [1, 3, 4, 99, 2**45 + 7])
    assert post == {1: {10}, 3: {10, 11}, 4: {11}, 2**45 + 7: {10}} and stopped == 0
    # Idempotent: a redelivered add writes no duplicate.
    assert idx.add([(10, a)]) == 0
    assert idx.stats()["postings"] == 6
    assert idx.remove([(10, a)]) == 4
    post, _ = _postings(idx, [1, 3, 4])
    assert post == {3: {11}, 4: {11}}
    assert idx.remove([(10, a)]) == 0


def test_frequent_fingerprints_become_stop_words(redis_client):
    idx = RedisInvertedIndex(redis_client, "t:daguan", bucket_bits=8, stop_df=3)
    common = np.array([42], dtype=np.uint64)
    idx.add([(s, common) for s in range(1, 4)])
    post, stopped = _postings(idx, [42])
    assert post == {42: {1, 2, 3}} and stopped == 0
    idx.add([(4, common)])
    post, stopped = _postings(idx, [42])
    assert post == {} and stopped == 1
    assert idx.stats()["stop_fingerprints"] == 1


def test_keys_are_single_bucket_hashes_and_clear_only_own(redis_client):
    idx = RedisInvertedIndex(redis_client, "t:daguan", bucket_bits=6)
    rng = np.random.default_rng(2)
    idx.add([(1, rng.integers(0, 2**46, 1000, dtype=np.uint64))])
    redis_client.set("other:key", 1)
    keys = list(redis_client.scan_iter(match=f"{idx.key_prefix()}*"))
    assert 0 < len(keys) <= 64
    assert all(redis_client.type(k) == b"hash" for k in keys)
    # The compact encoding is what keeps a posting near 12 bytes.
    assert redis_client.object("encoding", keys[0]) in (b"ziplist", b"listpack")
    idx.clear()
    assert not list(redis_client.scan_iter(match="t:daguan:*"))
    assert redis_client.get("other:key") == b"1"


def test_cluster_paths_give_the_same_answers(redis_client):
    # On Redis Cluster the multi-key lookup script is not allowed and redis-py's cluster
    # pipeline refuses Script objects: lookups are pipelined HGETs and writes EVALs of
    # one key each. They must leave and return exactly what the single-server paths do.
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**46, 3000, dtype=np.uint64)
    probe = np.concatenate([fps[::7], rng.integers(0, 2**46, 500, dtype=np.uint64)])
    answers, contents = [], []
    for cluster in (False, True):
        redis_client.flushall()
        idx = RedisInvertedIndex(redis_client, "t:daguan", bucket_bits=8, stop_df=3)
        idx._cluster = cluster
        assert idx.add([(1, fps[:2000]), (2, fps[1000:])]) == 4000
        # Seqs 3 and 4 join seq 1 on fps[:5]; seq 5 turns them into stop markers (counted),
        # seq 6 meets the markers (not counted).
        assert idx.add([(s, fps[:5]) for s in range(3, 7)]) == 15
        assert idx.remove([(2, fps[2500:])]) == 500
        answers.append(idx.lookup(probe))
        contents.append({k: redis_client.hgetall(k) for k in redis_client.scan_iter("t:daguan:b*")})
    (a, b) = answers
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]
    assert a[1].size > 300 and a[2] == 1  # fps[0] is probed, a stop marker
    assert contents[0] == contents[1]


def _everything(idx, fps):
    fp_index, seqs, stopped = idx.lookup(fps)
    return sorted(zip(fp_index.tolist(), seqs.tolist(), strict=True)), stopped


def test_reshard_keeps_every_posting_both_ways(redis_client):
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**46, 6000, dtype=np.uint64)
    idx = RedisInvertedIndex(redis_client, "t:daguan", bucket_bits=6, stop_df=3)
    idx.add([(1, fps[:4000]), (2, fps[2000:]), *[(s, fps[:3]) for s in range(3, 7)]])
    probe = np.concatenate([fps, rng.integers(0, 2**46, 500, dtype=np.uint64)])
    before = _everything(idx, probe)
    stats_before = idx.stats()
    for bits in (9, 14, 7):
        assert idx.reshard(bits) == bits
        assert _everything(idx, probe) == before
        stats = idx.stats()
        assert stats["bucket_bits"] == bits
        for k in ("fingerprints", "postings", "stop_fingerprints"):
            assert stats[k] == stats_before[k]
        # Only the new layout's keys are left.
        assert len(set(redis_client.scan_iter(match="t:daguan:b*"))) == stats["buckets"]
    # Another process (constructed before the reshard) sees the new layout on lookup.
    other = RedisInvertedIndex(redis_client, "t:daguan", stop_df=3)
    idx.reshard(10)
    assert _everything(other, probe) == before and other.bucket_bits == 10
    # And writes there after a reshard land where lookups look.
    idx.reshard(8)
    assert other.add([(9, fps[:10])]) == 7  # fps[:3] are stop markers
    fp_index, seqs, stopped = idx.lookup(fps[:10])
    assert sorted(fp_index[seqs == 9].tolist()) == list(range(3, 10)) and stopped == 3


def test_stats_advise_resharding_and_grow_does_it(redis_client):
    rng = np.random.default_rng(8)
    idx = RedisInvertedIndex(redis_client, "t:daguan", bucket_bits=6)
    n = (RESHARD_FIELDS + 50) * 64
    fps = rng.integers(0, 2**46, n, dtype=np.uint64)
    idx.add([(1, fps)])
    stats = idx.stats()
    assert stats["needs_reshard"] and stats["fields_per_bucket"] > RESHARD_FIELDS
    assert stats["recommended_bucket_bits"] == bits_for(n) > 6
    assert "reshard" in stats["advice"]
    before = _everything(idx, fps[::5])
    assert idx.grow() == bits_for(n)
    assert idx.grow() is None
    stats = idx.stats()
    assert not stats["needs_reshard"] and stats["fields_per_bucket"] <= RESHARD_FIELDS
    assert _everything(idx, fps[::5]) == before
    # Every bucket is compact again.
    key = next(redis_client.scan_iter(match=f"{idx.key_prefix()}*"))
    assert redis_client.object("encoding", key) in (b"ziplist", b"listpack")


def test_legacy_layout_is_read_by_its_old_key_names_and_resharded(redis_client):
    # An index written before layouts were kept: 2**14 buckets of 46-bit identities.
    redis_client.hset("t:daguan:layout", "layout", "14/46")
    old = RedisInvertedIndex(redis_client, "t:daguan")
    rng = np.random.default_rng(9)
    fps = rng.integers(0, 2**46, 50_000, dtype=np.uint64)
    old.add([(1, fps), (2, fps[:10])])
    redis_client.hdel("t:daguan:layout", "layout")
    assert list(redis_client.scan_iter(match="t:daguan:b:*"))
    again = RedisInvertedIndex(redis_client, "t:daguan")
    assert (again.bucket_bits, again.ident_bits) == (14, 46)
    before = _everything(again, fps)
    assert len(before[0]) == 50_010
    assert again.reshard(9) == 9 and again.ident_bits == IDENTITY_BITS
    assert _everything(again, fps) == before
    assert not list(redis_client.scan_iter(match="t:daguan:b:*"))


def test_values_are_compact_decimal_singles_marked_pairs_and_packed_lists(redis_client):
    """Format 2: one seq is stored as its decimal digits (Redis keeps it as an integer in
    the listpack), two as \\x01 and 8 packed bytes, three or more packed, a stop
    marker as one zero byte; lookups read them all back."""
    idx = RedisInvertedIndex(redis_client, "t:fmt", bucket_bits=6, stop_df=3)
    assert idx.layout == f"6/{IDENTITY_BITS}/2"
    fps = np.array([11, 22, 33, 44], dtype=np.uint64)
    idx.add([(7, fps), (70_000_000, fps[1:]), (9, fps[2:]), (10, fps[3:]), (11, fps[3:])])
    buckets, fields = idx.locate(fps)
    raw = [
        redis_client.hget(idx.bucket_key(int(b)), f.tobytes())
        for b, f in zip(buckets, pack_fields(fields, idx.field_bytes), strict=True)
    ]
    le = [s.to_bytes(4, "little") for s in (7, 70_000_000, 9)]
    # fps[3]: held by 7, 70_000_000, 9, then 10: stopped, keeping those first three.
    assert raw == [b"7", b"\x01" + le[0] + le[1], b"".join(le), b"\x00" + b"".join(le)]
    assert idx.stop_samples(fps)[1].tolist() == [7, 70_000_000, 9]
    fp_index, seqs, stopped = idx.lookup(fps)
    assert sorted(zip(fp_index.tolist(), seqs.tolist(), strict=True)) == [
        (0, 7),
        (1, 7),
        (1, 70_000_000),
        (2, 7),
        (2, 9),
        (2, 70_000_000),
    ]
    assert stopped == 1
    # Removing goes back down the same forms.
    idx.remove([(9, fps[2:3]), (70_000_000, fps[1:3])])
    raw = [
        redis_client.hget(idx.bucket_key(int(b)), f.tobytes())
        for b, f in zip(buckets[:3], pack_fields(fields[:3], idx.field_bytes), strict=True)
    ]
    assert raw == [b"7", b"7", b"7"]


def test_a_format_1_index_is_kept_then_converted_by_a_reshard(redis_client):
    """An index written before format 2 (layout ``bits/ident``, packed single seqs) is
    read and written in its own format, and a reshard, also to the same bucket count,
    converts it: every posting kept, and less memory."""
    redis_client.hset("t:old:layout", "layout", f"8/{IDENTITY_BITS}")
    old = RedisInvertedIndex(redis_client, "t:old", stop_df=3)
    assert old.fmt == 1 and old.key_prefix() == "t:old:b8:"
    rng = np.random.default_rng(12)
    fps = rng.integers(0, 2**63, 20_000, dtype=np.uint64)
    old.add([(s, fps[(s - 1) * 4000 : s * 4000 + 10]) for s in range(1, 6)])
    old.add([(s, fps[:2]) for s in range(6, 10)])  # fps[:2] become stop markers
    assert old.remove([(2, fps[4000:4100])]) == 100
    key = next(redis_client.scan_iter(match="t:old:b8:*"))
    assert all(len(v) % 4 == 0 or v[0] == 0 for v in redis_client.hvals(key))
    assert old.stats()["needs_reshard"] and "compact" in old.stats()["advice"]
    before = _everything(old, fps)
    memory_before = sum(redis_client.memory_usage(k) for k in redis_client.scan_iter("t:old:b*"))
    assert old.reshard(8) == 8 and old.fmt == 2 and old.key_prefix() == "t:old:b8v2:"
    assert _everything(old, fps) == before
    assert _everything(RedisInvertedIndex(redis_client, "t:old", stop_df=3), fps) == before
    assert not list(redis_client.scan_iter(match="t:old:b8:*"))
    memory = sum(redis_client.memory_usage(k) for k in redis_client.scan_iter("t:old:b*"))
    assert memory < memory_before * 0.9
    assert not old.stats()["needs_reshard"] and old.stats()["value_format"] == 2
