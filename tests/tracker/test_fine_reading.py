"""The fine reading of passages (tracker/matching/align_passages.py) and the gaps of a
region (tracker/text/noise.py) run difflib's algorithm compiled (cydifflib): it must
give the standard library's matching blocks and opcodes, so that no fine similarity, no
kept passage, no score and no excluded span moves."""

from __future__ import annotations

import difflib
import random

import numpy as np
import pytest
from cydifflib import SequenceMatcher

from tracker.matching import align_passages
from tracker.matching.align import AlignParams, align
from tracker.matching.align_passages import _matched


def _edited(rng: random.Random, a: list[int], alphabet: int, rate: float) -> list[int]:
    b = list(a)
    for _ in range(int(len(b) * rate)):
        i, op = rng.randrange(len(b) + 1), rng.random()
        if op < 0.4 and i < len(b):
            b[i] = rng.randrange(alphabet)
        elif op < 0.7:
            b.insert(i, rng.randrange(alphabet))
        elif i < len(b):
            del b[i]
    return b


def test_compiled_matcher_gives_the_standard_librarys_blocks() -> None:
    rng = random.Random(39)
    for _ in range(400):
        alphabet = rng.choice([2, 4, 23, 26, 3000])
        a = [rng.randrange(alphabet) for _ in range(rng.randint(0, 400))]
        b = (
            _edited(rng, a, alphabet, rng.choice([0.0, 0.05, 0.3]))
            if rng.random() < 0.7
            else [rng.randrange(alphabet) for _ in range(rng.randint(0, 400))]
        )
        for x, y in ((a, b), (bytes(v % 256 for v in a), bytes(v % 256 for v in b))):
            want = difflib.SequenceMatcher(None, x, y, autojunk=False).get_matching_blocks()
            got = SequenceMatcher(None, x, y, autojunk=False).get_matching_blocks()
            assert [tuple(m) for m in got] == [tuple(m) for m in want]
        text = "".join(chr(0x4E00 + v % 3000) for v in a)
        other = "".join(chr(0x4E00 + v % 3000) for v in b)
        want_ops = difflib.SequenceMatcher(None, text, other, autojunk=False).get_opcodes()
        assert SequenceMatcher(None, text, other, autojunk=False).get_opcodes() == want_ops


def test_alignments_are_the_same_with_the_standard_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_matched`` (initials as bytes) counts what difflib counts, and whole alignments
    (edited, homophone and ad-filled copies: every reading of step 4) keep the same
    passages with the same fine similarities when difflib itself does the reading."""
    rng = random.Random(7)
    for _ in range(200):
        a = np.array([rng.randrange(1, 24) for _ in range(rng.randint(1, 300))], dtype=np.uint8)
        b = np.array(_edited(rng, a.tolist(), 23, 0.2), dtype=np.uint8) + 1
        std = difflib.SequenceMatcher(None, a.tobytes(), b.tobytes(), autojunk=False)
        assert _matched(a, b) == sum(m.size for m in std.get_matching_blocks())
    pairs = []
    for seed in range(6):
        r = random.Random(seed)
        source = "".join(chr(r.randrange(0x4E00, 0x9FA5)) for _ in range(1500))
        rate = [0.0, 0.05, 0.1, 0.15][seed % 4]
        body = source[200 : 200 + r.randint(150, 1100)]
        copy = "".join(chr(r.randrange(0x4E00, 0x9FA5)) if r.random() < rate else c for c in body)
        if seed % 3 == 2:  # an ad line after every 40 characters
            copy = "最新章节请到笔趣阁阅读".join(copy[i : i + 40] for i in range(0, len(copy), 40))
        pairs.append(("他说：" + copy + "。", source))
    p = AlignParams()
    compiled = [align(s, m, p) for s, m in pairs]
    monkeypatch.setattr(align_passages, "SequenceMatcher", difflib.SequenceMatcher)
    standard = [align(s, m, p) for s, m in pairs]
    assert any(len(a.passages) > 1 for a in compiled)
    assert any(m.fine is not None and m.fine < 1.0 for a in compiled for m in a.measures)
    for got, want in zip(compiled, standard, strict=True):
        assert got.passages == want.passages
        assert got.measures == want.measures
        assert got.similarity == want.similarity


def test_span_share_of_a_few_windows_is_the_numpy_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_span_share`` counts a few windows in Python: the same share as numpy's way."""
    from tracker.matching import align_clusters
    from tracker.matching.align_clusters import _Cluster, _span_share

    rng = random.Random(3)
    cases = []
    for _ in range(3000):
        positions = np.array(
            sorted(rng.randrange(0, 500) for _ in range(rng.randint(0, 60))), dtype=np.int64
        )
        start = rng.randrange(0, 450)
        cluster = _Cluster.start((start, start + rng.randint(1, 120), 0, 10))
        cases.append((positions, rng.choice([8, 24]), cluster))
    few = [_span_share(*case) for case in cases]
    monkeypatch.setattr(align_clusters, "_FEW_WINDOWS", -1)
    assert few == [_span_share(*case) for case in cases]
    assert any(0.0 < x < 1.0 for x in few)
