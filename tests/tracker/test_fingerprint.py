import numpy as np
import opencc
import pytest
from textgen import homophones, work

from tracker.fingerprints.daguan import (
    MAX_LETTERS,
    Fingerprinter,
    FingerprintParams,
    Reference,
    build_reference,
    default_reference,
    fingerprint,
    level_table,
    window_counts,
)
from tracker.text.pinyin import INITIAL_LETTERS, initials


def test_same_text_same_fingerprints():
    text = work(1)
    a, b = fingerprint(text), fingerprint(text)
    assert len(a) > 10
    assert np.array_equal(a.values, b.values)


def test_homophone_substitution_changes_no_fingerprint():
    text = work(2)
    disguised = homophones(text)
    assert disguised != text
    assert np.array_equal(fingerprint(text).values, fingerprint(disguised).values)


def test_traditional_conversion_keeps_95_percent_of_windows():
    text = work(3, 80)
    trad = opencc.OpenCC("s2t").convert(text)
    assert trad != text
    a = fingerprint(text).values
    b = set(fingerprint(trad).values.tolist())
    shared = np.mean([v in b for v in a.tolist()])
    assert shared >= 0.95


def test_offsets_point_back_at_window_characters():
    text = "开头ABC，" + work(4, 5) + "123 结尾"
    fps = fingerprint(text)
    g = fps.granularity
    for i in range(len(fps)):
        start, end = fps.char_span(i)
        assert initials(text[start:end]) == initials(text)[fps.starts[i] : fps.starts[i] + g]
        assert initials(text[start]) != ""  # windows start and end on Han characters
        assert initials(text[end - 1]) != ""


def test_dense_windows_contain_sparse_windows():
    text = work(5)
    sparse = fingerprint(text)
    dense = fingerprint(text, stride=1)
    assert set(sparse.values.tolist()) <= set(dense.values.tolist())
    assert len(dense) == len(initials(text)) - sparse.granularity + 1


def test_window_counts_match_naive_counting():
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(INITIAL_LETTERS), 500).astype(np.uint8)
    for g, s in [(24, 6), (10, 3), (7, 1), (16, 16)]:
        counts = window_counts(idx, g, s)
        for w in range(counts.shape[1]):
            naive = np.bincount(idx[w * s : w * s + g], minlength=len(INITIAL_LETTERS))
            assert np.array_equal(counts[:, w], naive)


@pytest.mark.parametrize("text", ["", "短文", "abc 123 😀", "\ud800\x00\x1b", "字" * 23])
def test_shorter_than_one_window_has_no_fingerprints(text):
    fps = fingerprint(text)
    assert len(fps) == 0 and fps.values.dtype == np.uint64


def test_exactly_one_window():
    fps = fingerprint("字" * 24)
    assert len(fps) == 1


def test_mixed_scripts_and_noise_are_ignored():
    text = work(6, 10)
    noisy = "".join(ch + ("x😀\u200b" if i % 7 == 0 else "") for i, ch in enumerate(text))
    assert np.array_equal(fingerprint(text).values, fingerprint(noisy).values)


@pytest.mark.parametrize("levels", [10, 8, 4, 2])
def test_every_level_count_fits_64_bits(levels):
    letters = INITIAL_LETTERS[: MAX_LETTERS[levels]]
    params = FingerprintParams(levels=levels, letters=letters)
    fps = Fingerprinter(params).fingerprints(work(7)).values
    assert fps.dtype == np.uint64 and len(fps) > 0
    assert int(fps.max()) < levels ** len(letters)


def test_digits_are_levels_in_letter_order():
    params = FingerprintParams(levels=4)
    table = level_table(params)
    text = work(8, 3)
    fps = Fingerprinter(params).fingerprints(text)
    letters = initials(text)[: params.granularity]
    counts = [letters.count(c) for c in params.letters]
    expected = 0
    for row, c in enumerate(counts):
        expected = expected * 4 + int(table[row][c])
    assert int(fps.values[0]) == expected


def test_quantile_levels_spread_evenly():
    # With quantile normalization no level of a common letter should be rare.
    params = FingerprintParams(levels=4, mode="quantile")
    table = level_table(params)
    ref = default_reference()
    row = params.letters.index("d")
    cdf = ref.cdf(params.granularity, "d")
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    mass = np.bincount(table[row], weights=pmf, minlength=4)
    assert mass.min() > 0.1


def test_invalid_parameters_are_refused():
    with pytest.raises(ValueError):
        FingerprintParams(levels=5)
    with pytest.raises(ValueError):
        FingerprintParams(levels=10)  # 23 letters do not fit 64 bits at 10 levels
    with pytest.raises(ValueError):
        FingerprintParams(letters="aiu")
    with pytest.raises(ValueError):
        FingerprintParams(overlap=1.0)


def test_reference_build_round_trip(tmp_path):
    texts = [work(i, 30) for i in range(5)]
    ref = build_reference(texts, granularities=(24,))
    assert abs(sum(ref.freq.values()) - 1.0) < 1e-9
    path = tmp_path / "ref.json"
    ref.save(path)
    again = Reference.load(path)
    assert again.freq == pytest.approx(ref.freq, abs=1e-6)
    assert np.allclose(again.cdf(24, "z"), ref.cdf(24, "z"), atol=1e-5)
    # A window length the file does not hold falls back to the binomial model.
    assert again.cdf(13, "z")[-1] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        build_reference(["no han at all"])


def test_known_heteronym_limit_is_documented():
    # 仿佛 -> 彷彿 in traditional text: pypinyin's first reading of 彷 is páng, so the
    # one fixed reading per character differs here (see docs/FINGERPRINTS.md).
    assert initials("仿佛") == "ff"
    assert initials("彷彿") == "pf"
