"""tracker.fingerprints.simhash: our SimHash, and bit-for-bit compatibility with Go
mfonda/simhash."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracker.fingerprints.simhash import (
    compare,
    content_windows,
    feature_hashes,
    features_of,
    fnv1_64,
    hamming,
    idf_from_corpus,
    mfonda_features,
    mfonda_simhash,
    ngram_hashes,
    normalize,
    simhash,
    simhash_features,
    simhash_spans,
)

# Produced by Go 1.19 running mfonda/simhash's WordFeatureSet + Simhash code
# (Simhash(NewWordFeatureSet(b)), printed with %016x).
GO_VECTORS = [
    (b"", 0xFFFFFFFFFFFFFFFF),
    (b"hello world", 0x7FC9DF8DFDBFD4CF),
    (b"Hello, World! It's http://foo.com/bar.html here", 0xF9491E4ED4A2D44F),
    ("中文文本没有单词".encode(), 0xFFFFFFFFFFFFFFFF),
    (
        "第12章 Chapter TWELVE 龙王 returns http://www.biquge.com/12/345.html".encode(),
        0x0FB0BA0BF8D381C8,
    ),
    ("\u0130stanbul \u212aelvin".encode(), 0x9DFEEFB2AF0F763F),
    (b"\xff\xfeabc\xe4\xb8Xyz", 0xD8DEFB186BEFEFCF),
    (b"The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!", 0xD8DCC6186B793C3E),
    (b"don't can't won't o'clock ''", 0x8842380E80EBA04F),
    (b"a a a a b", 0xAF63BD4C8601B7BE),
    (b"ftp://files.example.org/pub/x.tar.gz and mailto:someone", 0xFADDC65CFBFFF7FB),
    (b"snake_case CamelCase 12345 x1y2", 0xEFB75156DF94AFFF),
]

PHRASES = [
    "天下大势",
    "分久必合",
    "合久必分",
    "桃园结义",
    "英雄豪杰",
    "风起云涌",
    "夜色深沉",
    "他微微一笑",
    "说道",
    "城门之外",
    "大军压境",
    "谋士献计",
    "月明星稀",
    "江水东流",
]


def _text(rng: random.Random, n: int) -> str:
    return "，".join(rng.choice(PHRASES) + rng.choice(PHRASES) for _ in range(n)) + "。"


# -- mfonda ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("data", "expected"), GO_VECTORS)
def test_mfonda_go_vectors(data: bytes, expected: int) -> None:
    assert mfonda_simhash(data) == expected


def test_fnv1_64_known_vectors() -> None:
    # FNV-1 (not 1a): the published 64-bit test vectors.
    assert fnv1_64(b"") == 0xCBF29CE484222325
    assert fnv1_64(b"a") == 0xAF63BD4C8601B7BE
    assert fnv1_64(b"foobar") == 0x340D8765A4DDA9C2
    # A single feature: every vote is +-1, so the fingerprint is its hash.
    assert mfonda_simhash(b"foobar") == fnv1_64(b"foobar")


def _mfonda_reference(words: list[bytes]) -> int:
    """Straight transcription of mfonda's Vectorize + Fingerprint, one bit at a time."""
    v = [0] * 64
    for w in words:
        s = fnv1_64(w)
        for i in range(64):
            v[i] += 1 if (s >> i) & 1 else -1
    return sum(1 << i for i in range(64) if v[i] >= 0)


def test_mfonda_matches_per_bit_reference() -> None:
    rng = random.Random(11)
    alphabet = "abcXYZ019_' :/.-,!?\n中文"
    for _ in range(300):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))).encode()
        assert mfonda_simhash(s) == _mfonda_reference(mfonda_features(s))


def test_mfonda_word_rules() -> None:
    # Go's \w is ASCII: Chinese characters separate words and are never features.
    assert mfonda_features("中文abc中DEF".encode()) == [b"abc", b"def"]
    assert mfonda_features("纯中文文本".encode()) == []
    # apostrophes are word characters; URLs (scheme://...) stay one feature
    assert mfonda_features(b"It's at http://a.b/c.html!") == [b"it's", b"at", b"http://a.b/c.html"]
    # Go's unicode.ToLower: U+0130 -> "i" (one word), KELVIN SIGN -> "k"
    assert mfonda_features("\u0130x \u212aa".encode()) == [b"ix", b"ka"]
    # invalid UTF-8 is a separator, like Go's U+FFFD
    assert mfonda_features(b"ab\xffcd") == [b"ab", b"cd"]
    assert mfonda_simhash("abc") == mfonda_simhash(b"abc")


def test_compare_is_hamming_on_64_bits() -> None:
    assert compare(0, 0xFFFFFFFFFFFFFFFF) == 64
    assert compare(0b1011, 0b0001) == 2
    assert hamming(0b1011, 0b0001) == 2


# -- our SimHash ----------------------------------------------------------------------------
def _reference(strings: list[str], weights: list[float], bits: int = 64) -> int:
    """Naive SimHash over feature_hashes, one feature and one bit at a time."""
    lanes = bits // 64
    hashes = feature_hashes(strings, lanes=lanes)
    v = [0.0] * bits
    for row, w in zip(hashes, weights, strict=True):
        h = sum(int(x) << (64 * i) for i, x in enumerate(row))
        for i in range(bits):
            v[i] += w if (h >> i) & 1 else -w
    return sum(1 << i for i in range(bits) if v[i] >= 0)


def test_simhash_tf_matches_reference() -> None:
    rng = random.Random(1)
    for _ in range(5):
        text = _text(rng, 20)
        feats = features_of(text, "char3")
        assert simhash(text) == _reference(feats, [1.0] * len(feats))
        assert simhash(text, bits=128) == _reference(feats, [1.0] * len(feats), bits=128)
        uniq = sorted(set(feats))
        assert simhash(text, weights="equal") == _reference(uniq, [1.0] * len(uniq))
        feats2 = features_of(text, "char2")
        assert simhash(text, features="char2") == _reference(feats2, [1.0] * len(feats2))


def test_simhash_tfidf_matches_reference() -> None:
    rng = random.Random(2)
    corpus = [_text(rng, 15) for _ in range(6)]
    idf = idf_from_corpus(corpus, features="char3")
    assert idf.documents == 6
    text = corpus[0] + "独一无二的句子"
    feats = features_of(text, "char3")
    counts: dict[str, int] = {}
    for f in feats:
        counts[f] = counts.get(f, 0) + 1
    names = list(counts)
    weights = [counts[f] * idf.get(f, idf.default) for f in names]
    assert simhash(text, weights="tfidf", idf=idf) == _reference(names, weights)
    # rarer features weigh more; unseen ones weigh most
    common = max(idf, key=lambda f: -idf[f])
    assert idf[common] < idf.default
    with pytest.raises(ValueError):
        simhash(text, weights="tfidf")


def test_simhash_lower_lane_is_the_64_bit_print() -> None:
    text = "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。"
    assert simhash(text, bits=128) & ((1 << 64) - 1) == simhash(text)
    assert simhash(text, bits=128) >> 64 != simhash(text)


def test_normalization_and_empty() -> None:
    assert normalize("Ab C，d_e！\n") == "abcde"
    a = "天下大势，分久必合；合久必分。"
    assert simhash(a) == simhash("天下大势 分久必合\n合久必分")
    assert simhash("") == 0
    assert simhash("，。！") == 0
    assert simhash("ab") == simhash("ab", features="char3")  # shorter than n: one feature
    assert simhash("ab") != 0
    with pytest.raises(ValueError):
        simhash(a, features="bogus")
    with pytest.raises(ValueError):
        simhash(a, bits=96)


def test_similar_texts_are_close_and_others_far() -> None:
    rng = random.Random(3)
    base = _text(rng, 60)
    edited = base[:100] + "改" + base[101:200] + base[205:]
    other = _text(random.Random(99), 60)
    assert hamming(simhash(base), simhash(edited)) <= 6
    assert hamming(simhash(base), simhash(other)) > hamming(simhash(base), simhash(edited))


def test_words_features() -> None:
    text = "刘备、关羽和张飞在桃园结义。Hello World!"
    words = features_of(text, "words")
    assert "hello" in words and "world" in words
    assert all(w.strip() and any(c.isalnum() for c in w) for w in words)
    assert simhash(text, features="words") == _reference(words, [1.0] * len(words))


def test_feature_hashes_consistent_and_distinct() -> None:
    norm = normalize("天下大势分久必合合久必分")
    grams = [norm[i : i + 3] for i in range(len(norm) - 2)]
    assert np.array_equal(ngram_hashes(norm, 3), feature_hashes(grams))
    h = feature_hashes(["a", "ab", "", "b", "ba", "abc"])[:, 0]
    assert len(set(h.tolist())) == 6
    assert simhash_features({}) == 0
    assert simhash_features([("x", 1.0), ("x", 1.0)]) == simhash_features({"x": 2.0})


def test_simhash_spans_equal_simhash_of_slices() -> None:
    norm = normalize(_text(random.Random(4), 200))
    spans = [(0, len(norm)), (0, 1), (5, 7), (10, 400), *content_windows(norm)]
    for bits in (64, 128):
        got = simhash_spans(norm, spans, bits=bits)
        assert [int(x) for x in got] == [simhash(norm[s:e], bits=bits) for s, e in spans]


def test_content_windows_follow_copied_text() -> None:
    rng = random.Random(5)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    mother = "".join(rng.choice(chars) for _ in range(6000))
    wins = content_windows(mother)
    lengths = [e - s for s, e in wins]
    assert min(lengths) >= 150 and max(lengths) <= 600
    assert 220 <= sum(lengths) / len(lengths) <= 380  # ~300 characters
    assert 100 <= len(mother) / len(wins) <= 200  # a new window every ~150
    excerpt = mother[2000:4000]
    mother_windows = {mother[s:e] for s, e in wins}
    for pad in (0, 1, 37, 149):
        suspect = "".join(rng.choice(chars) for _ in range(pad)) + excerpt + "尾" * 50
        inside = {suspect[s:e] for s, e in content_windows(suspect)}
        # every mother window lying inside the excerpt (from its first anchor on) recurs
        expected = {mother[s:e] for s, e in wins if s >= 2000 and e <= 4000}
        assert len(expected) >= 6
        assert expected <= inside
        assert inside & mother_windows == expected


def test_simhash_spans_long_text() -> None:
    rng = random.Random(6)
    norm = "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(140_000))
    spans = [(0, len(norm)), (5, 70_000), (100, 400), (139_000, 140_000)]
    got = simhash_spans(norm, spans)
    assert [int(x) for x in got] == [simhash(norm[s:e]) for s, e in spans]
