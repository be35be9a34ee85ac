"""New buckets serialized on the client (``tracker.indexes.ziplist.new_bucket_payloads``)
are byte for byte what Redis' own ``HSET`` of the same fields makes (every integer
encoding of a value, packed seqs, strings of digits, the longest value a ziplist keeps),
on a server that checks every ``RESTORE`` payload entry by entry; buckets Redis would
not keep as ziplists are left to ``HSET``; and a bulk load on the embedded server's
configuration writes its buckets so and equals adding the same postings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tracker.indexes import bulk, ziplist
from tracker.indexes.inverted import RedisInvertedIndex


@pytest.fixture()
def redis(index_redis: Any) -> Any:
    return index_redis


def _value(rng: np.random.Generator, kind: int) -> bytes:
    digits = np.frombuffer(b"0123456789", np.uint8)
    if kind == 0:  # one seq, decimal, of every integer size
        return str(int(rng.choice([5, 100, 30_000, 8_000_000, 2**31 - 1, 2**32 - 1]))).encode()
    if kind == 1:  # two seqs packed
        return b"\x01" + rng.integers(0, 256, 8, dtype=np.uint8).tobytes()
    if kind == 2:  # packed seqs that happen to be digits (Redis stores an integer)
        return rng.choice(digits, 4).tobytes()
    if kind == 3:  # any bytes, up to the longest a ziplist keeps (64)
        return rng.integers(0, 256, int(rng.integers(1, 65)), dtype=np.uint8).tobytes()
    if kind == 4:
        return rng.choice([b"0", b"07", b"-5", b"-0", b"9223372036854775807", b"9" * 19])
    return rng.choice(digits, int(rng.integers(15, 22))).tobytes()  # past int64: strings


def _buckets(
    rng: np.random.Generator, sizes: list[int], fw: int = 3
) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    per = np.array(sizes, dtype=np.int64)
    n = int(per.sum())
    # distinct fields in each bucket, none made of digits by chance
    fields = np.zeros((n, fw), dtype=np.uint8)
    fields[:, 0] = 0x80 | (np.arange(n) % 128)
    fields[:, 1] = (np.arange(n) // 128) % 256
    fields[:, 2:] = rng.integers(0, 256, (n, fw - 2), dtype=np.uint8)
    values = [_value(rng, int(rng.integers(0, 6))) for _ in range(n)]
    return per, fields, values


def _redis_dump(redis: Any, fields: np.ndarray, values: list[bytes]) -> bytes:
    redis.delete("by-hset")
    args: list[bytes] = []
    for f, v in zip(fields, values, strict=True):
        args += [f.tobytes(), v]
    redis.execute_command("HSET", "by-hset", *args)
    dumped: bytes = redis.dump("by-hset")
    return dumped


def test_payloads_are_what_hset_makes(redis: Any) -> None:
    redis.hset("probe", "layout", "x")
    form = ziplist.probe(redis, "probe")
    assert form is not None and form.max_entries == 512 and form.max_value == 64
    rng = np.random.default_rng(3)
    sizes = [int(s) for s in rng.integers(1, 200, 120)] + [512, 1, 2]
    per, fields, values = _buckets(rng, sizes)
    vlen = np.array([len(v) for v in values], dtype=np.int64)
    which, payloads = ziplist.new_bucket_payloads(
        per, fields, vlen, np.frombuffer(b"".join(values), np.uint8), form
    )
    assert which.tolist() == list(range(len(sizes)))  # every one kept as a ziplist
    first = np.cumsum(per) - per
    for b, payload in zip(which.tolist(), payloads, strict=True):
        rows = slice(int(first[b]), int(first[b] + per[b]))
        assert payload == _redis_dump(redis, fields[rows], values[rows]), b
        redis.restore("by-restore", 0, payload, replace=True)  # checked entry by entry
        assert redis.hgetall("by-restore") == redis.hgetall("by-hset")


def test_buckets_redis_keeps_otherwise_are_left_to_hset(redis: Any) -> None:
    form = ziplist.ServerForm(version=b"\t\x00", max_entries=512, max_value=64)
    rng = np.random.default_rng(4)
    per, fields, values = _buckets(rng, [10, 513, 10, 10, 10])
    first = (np.cumsum(per) - per).tolist()
    values[first[2] + 3] = b"x" * 65  # a value past hash-max-ziplist-value
    fields[first[3] + 1] = np.frombuffer(b"123", np.uint8)  # a field Redis keeps as 123
    vlen = np.array([len(v) for v in values], dtype=np.int64)
    which, payloads = ziplist.new_bucket_payloads(
        per, fields, vlen, np.frombuffer(b"".join(values), np.uint8), form
    )
    assert which.tolist() == [0, 4] and len(payloads) == 2


def _items(rng: np.random.Generator, mothers: int = 60) -> list[tuple[int, np.ndarray]]:
    common = rng.integers(0, 2**63, 400, dtype=np.uint64)
    out = []
    for seq in range(1, mothers + 1):
        own = rng.integers(0, 2**63, 300, dtype=np.uint64)
        shared = rng.choice(common, 40, replace=False)  # fields of several seqs
        out.append((seq * 977, np.unique(np.concatenate([own, shared]))))
    return out


def test_bulk_load_restores_buckets_and_equals_adds(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    real = bulk.new_bucket_payloads

    def counting(*args: Any, **kwargs: Any) -> tuple[np.ndarray, list[bytes]]:
        which, payloads = real(*args, **kwargs)
        made.append(which.size)
        return which, payloads

    monkeypatch.setattr(bulk, "new_bucket_payloads", counting)
    items = _items(np.random.default_rng(5))
    ref = RedisInvertedIndex(redis, "t:ref", bucket_bits=8)
    ref.add(items)
    idx = RedisInvertedIndex(redis, "t:load", bucket_bits=8)
    assert bulk.load(idx, items, size=False) == sum(len(f) for _, f in items)
    assert made and sum(made) == 256  # every bucket written by RESTORE
    assert idx.layout == ref.layout
    filled = 0
    for b in range(256):
        loaded = redis.hgetall(f"{idx.key_prefix()}{b}")
        assert loaded == redis.hgetall(f"{ref.key_prefix()}{b}"), b
        filled += bool(loaded)
    assert filled == 256
    assert redis.hgetall("t:load:layout") == redis.hgetall("t:ref:layout")
