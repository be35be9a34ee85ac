"""tracker.indexes.lsh: band hashing, the choice of bands and rows (as datasketch), and
the LSH index in Redis."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from tracker.fingerprints.minhash import MinHasher
from tracker.indexes.lsh import LSH, RedisLSH, choose_bands

CHARS = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]


def _random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(CHARS) for _ in range(n))


def test_choose_bands() -> None:
    assert choose_bands(128, 0.3) == (37, 3)
    assert choose_bands(128, 0.5) == (25, 5)
    lsh = pytest.importorskip("datasketch.lsh")
    for num_perm in (16, 64, 128):
        for threshold in (0.2, 0.5, 0.8):
            assert choose_bands(num_perm, threshold) == lsh._optimal_param(
                threshold, num_perm, 0.5, 0.5
            )
    with pytest.raises(ValueError):
        choose_bands(128, 1.0)


def test_band_hashes() -> None:
    lsh = LSH(12, 3, 4)
    sig = np.arange(12, dtype=np.uint32)
    h = lsh.band_hashes(sig)
    assert h.shape == (1, 3) and len(set(h[0].tolist())) == 3
    other = sig.copy()
    other[5] = 99  # only band 1 changes
    h2 = lsh.band_hashes(other)
    assert (h[0] == h2[0]).tolist() == [True, False, True]
    with pytest.raises(ValueError):
        LSH(12, 4, 4)


def test_redis_lsh(redis_client: Any) -> None:
    rng = random.Random(5)
    mh = MinHasher(128)
    bands, rows = choose_bands(128, 0.5)
    lsh = RedisLSH(redis_client, "yinji:test", 128, bands, rows)
    base = [_random_text(rng, 1000) for _ in range(20)]
    sigs = mh.signatures(base)
    assert lsh.add((i, s) for i, s in enumerate(sigs)) == 20 * bands
    assert lsh.add([(0, sigs[0])]) == 0  # idempotent
    keys = {k.decode() for k in redis_client.scan_iter(match="*")}
    assert all(k.startswith("yinji:test:lsh:b") for k in keys)
    assert len(keys) == 20 * bands  # unrelated texts share no band
    assert sum(redis_client.scard(k) for k in keys) == 20 * bands
    near = base[3][:850] + _random_text(rng, 150)  # Jaccard ~0.7
    found = lsh.query(mh.signature(near))
    assert found == {3}
    assert lsh.query(mh.signature(_random_text(rng, 1000))) == set()
    assert lsh.query_many(sigs[:2]) == [{0}, {1}]
    assert lsh.remove([(3, sigs[3])]) == bands
    assert lsh.remove([(3, sigs[3])]) == 0  # missing postings are ignored
    assert lsh.query(sigs[3]) == set()
    assert len(set(redis_client.scan_iter(match="*"))) == 19 * bands
    assert lsh.stats() == {"buckets": 19 * bands, "num_perm": 128, "bands": bands, "rows": rows}
    redis_client.set("yinji:keep", b"1")
    assert lsh.clear() == 19 * bands
    assert redis_client.get("yinji:keep") == b"1"
