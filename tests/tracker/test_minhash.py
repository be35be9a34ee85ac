"""tracker.fingerprints.minhash: vectorized MinHash (bit-identical to datasketch). LSH banding
and the
Redis LSH index: tests/test_indexes_lsh.py."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracker.fingerprints.minhash import (
    MinHasher,
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
