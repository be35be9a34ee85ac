"""tracker.minhash: vectorized MinHash (bit-identical to datasketch) and LSH in Redis."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from tracker.minhash import (
    LSH,
    MinHasher,
    RedisLSH,
    choose_bands,
    exact_jaccard,
    hash32,
    jaccard,
    jaccard_matrix,
    shingle_hashes32,
)

CHARS = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]


def _random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(CHARS) for _ in range(n))


@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
def test_bit_identical_to_datasketch(scheme: str) -> None:
    datasketch = pytest.importorskip("datasketch")
    rng = random.Random(1)
    mh = MinHasher(num_perm=64, seed=7, shingle=5, scheme=scheme)
    for text in ["话说 天下大势，分久必合，合久必分。" * 3, _random_text(rng, 800), "短", ""]:
        ours = mh.signature(text)
        ref = datasketch.MinHash(num_perm=64, seed=7, scheme=scheme, hashfunc=hash32)
        ref.update_batch([s.encode("utf-8") for s in mh.shingles(text)])
        assert ours.dtype == ref.hashvalues.dtype
        assert np.array_equal(ours, ref.hashvalues)


def test_hash32_matches_vectorized_hashes() -> None:
    text = "滚滚长江东逝水浪花淘尽英雄"
    hv = shingle_hashes32(text, 5)
    assert hv.dtype == np.uint32 and len(hv) == len(text) - 4
    assert [hash32(text[i : i + 5]) for i in range(len(text) - 4)] == hv.tolist()
    assert hash32(text[:5].encode()) == hv[0]


def test_signatures_batch_equals_single() -> None:
    rng = random.Random(2)
    texts = [_random_text(rng, rng.randint(0, 3000)) for _ in range(40)] + ["", "ab", "x" * 50000]
    for scheme in ("affine32", "legacy"):
        mh = MinHasher(128, seed=1, scheme=scheme)
        batch = mh.signatures(texts, block=4096)
        assert batch.shape == (len(texts), 128)
        for text, row in zip(texts, batch, strict=True):
            assert np.array_equal(row, mh.signature(text))
    empty = MinHasher(16).signature("")
    assert (empty == 2**32 - 1).all()


def test_whitespace_and_alnum_normalization() -> None:
    mh = MinHasher(32)
    assert np.array_equal(mh.signature("天下 大势\n分久必合"), mh.signature("天下大势分久必合"))
    assert not np.array_equal(mh.signature("天下大势，分久必合"), mh.signature("天下大势分久必合"))
    alnum = MinHasher(32, normalize="alnum")
    assert np.array_equal(
        alnum.signature("天下大势，分久必合"), alnum.signature("天下大势分久必合")
    )
    with pytest.raises(ValueError):
        MinHasher(32, scheme="nope")


def test_estimate_tracks_exact_jaccard() -> None:
    rng = random.Random(3)
    mh = MinHasher(256, seed=3)
    errors = []
    for _ in range(30):
        base = _random_text(rng, 2000)
        cut = rng.randint(200, 1800)
        other = base[:cut] + _random_text(rng, 2000 - cut)
        exact = exact_jaccard(mh.shingles(base), mh.shingles(other))
        est = jaccard(mh.signature(base), mh.signature(other))
        errors.append(abs(est - exact))
    assert np.mean(errors) < 0.03
    assert max(errors) < 0.12
    sigs = mh.signatures(["甲乙丙丁戊己庚辛", "甲乙丙丁戊己庚辛", _random_text(rng, 100)])
    m = jaccard_matrix(sigs, sigs)
    assert m[0, 1] == 1.0 and m[0, 2] < 0.1 and np.allclose(np.diag(m), 1.0)


def test_spans_signatures() -> None:
    rng = random.Random(4)
    mh = MinHasher(64, normalize=None)
    text = _random_text(rng, 3000)
    spans = [(0, 3000), (0, 3), (100, 600), (2500, 3000)]
    got = mh.spans_signatures(text, spans)
    for (s, e), row in zip(spans, got, strict=True):
        assert np.array_equal(row, mh.signature(text[s:e]))


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
    lsh.insert_many((i, s) for i, s in enumerate(sigs))
    lsh.insert(0, sigs[0])  # idempotent
    keys = {k.decode() for k in redis_client.scan_iter(match="*")}
    assert all(k.startswith("yinji:test:lsh:b") for k in keys)
    assert len(keys) == 20 * bands  # unrelated texts share no band
    assert sum(redis_client.scard(k) for k in keys) == 20 * bands
    near = base[3][:850] + _random_text(rng, 150)  # Jaccard ~0.7
    found = lsh.query(mh.signature(near))
    assert found == {3}
    assert lsh.query(mh.signature(_random_text(rng, 1000))) == set()
    assert lsh.query_many(sigs[:2]) == [{0}, {1}]
    lsh.remove(3, sigs[3])
    lsh.remove(3, sigs[3])
    assert lsh.query(sigs[3]) == set()
    assert len(list(redis_client.scan_iter(match="*"))) == 19 * bands
    redis_client.set("yinji:keep", b"1")
    assert lsh.clear() == 19 * bands
    assert redis_client.get("yinji:keep") == b"1"
