"""The protocol of tracker.indexes.base.Index, run over every index class: add and remove
take any iterable of entries, are idempotent and count what they changed; remove undoes
add; clear deletes everything of the index and nothing else; stats is JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tracker.fingerprints.minhash import MinHasher
from tracker.indexes.base import Index
from tracker.indexes.hamming import MemoryHammingIndex, RedisHammingIndex
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.lsh import RedisLSH

PREFIX = "yinji:t"


def _inverted(redis: Any) -> tuple[Index[Any], Callable[[int], Any]]:
    rng = np.random.default_rng(3)
    return (
        RedisInvertedIndex(redis, PREFIX, bucket_bits=8),
        lambda i: rng.integers(0, 2**46, 40, dtype=np.uint64),
    )


def _hamming(redis: Any) -> tuple[Index[Any], Callable[[int], Any]]:
    rng = np.random.default_rng(4)
    return RedisHammingIndex(redis, PREFIX, k=3), lambda i: int(rng.integers(0, 2**63))


def _memory_hamming(redis: Any) -> tuple[Index[Any], Callable[[int], Any]]:
    rng = np.random.default_rng(5)
    return MemoryHammingIndex(3), lambda i: int(rng.integers(0, 2**63))


def _lsh(redis: Any) -> tuple[Index[Any], Callable[[int], Any]]:
    hasher = MinHasher(64, normalize=None)
    rng = np.random.default_rng(6)

    def key(i: int) -> np.ndarray:
        text = "".join(chr(0x4E00 + int(c)) for c in rng.integers(0, 3000, 400))
        return hasher.signature(text)

    return RedisLSH(redis, PREFIX, 64, 16, 4), key


INDEXES = {
    "inverted": _inverted,
    "hamming": _hamming,
    "memory-hamming": _memory_hamming,
    "lsh": _lsh,
}


@pytest.fixture(params=list(INDEXES))
def index(
    request: pytest.FixtureRequest, redis_client: Any
) -> tuple[Index[Any], list[tuple[int, Any]]]:
    idx, key = INDEXES[request.param](redis_client)
    return idx, [(i, key(i)) for i in range(1, 31)]


def _state(idx: Index[Any], redis: Any) -> Any:
    """Everything the index holds: its Redis keys and values, or its arrays in memory."""
    if isinstance(idx, MemoryHammingIndex):
        ids, fps = idx.items()
        return ids.tolist(), fps.tolist()
    out = {}
    for key in redis.scan_iter(match=f"{PREFIX}:*"):
        if key.endswith(b":version"):
            continue  # counts writes (tried ones too), not what the index holds
        kind = redis.type(key)
        out[key] = redis.hgetall(key) if kind == b"hash" else redis.smembers(key)
    return out


def test_is_an_index(index: tuple[Index[Any], list[tuple[int, Any]]]) -> None:
    idx, _ = index
    assert isinstance(idx, Index)


def test_add_is_idempotent_and_counts(
    index: tuple[Index[Any], list[tuple[int, Any]]], redis_client: Any
) -> None:
    idx, entries = index
    assert idx.add(e for e in entries[:20]) > 0  # any iterable, a generator too
    state = _state(idx, redis_client)
    assert idx.add(entries[:20]) == 0
    assert idx.add([]) == 0
    assert _state(idx, redis_client) == state


def test_remove_undoes_add(
    index: tuple[Index[Any], list[tuple[int, Any]]], redis_client: Any
) -> None:
    idx, entries = index
    idx.add(entries[:20])
    state = _state(idx, redis_client)
    added = idx.add(entries[20:])
    assert added > 0
    assert idx.remove(e for e in entries[20:]) == added
    assert _state(idx, redis_client) == state
    assert idx.remove(entries[20:]) == 0  # missing entries are ignored
    assert idx.remove([]) == 0


def test_clear_deletes_only_the_index(
    index: tuple[Index[Any], list[tuple[int, Any]]], redis_client: Any
) -> None:
    idx, entries = index
    redis_client.set("yinji:keep", b"1")
    idx.add(entries)
    assert idx.clear() > 0
    assert _state(idx, redis_client) in ({}, ([], []))
    assert idx.clear() == 0
    assert redis_client.get("yinji:keep") == b"1"


def test_stats_are_json(index: tuple[Index[Any], list[tuple[int, Any]]]) -> None:
    idx, entries = index
    idx.add(entries)
    stats = idx.stats()
    assert isinstance(stats, dict) and stats
    json.dumps(stats)
