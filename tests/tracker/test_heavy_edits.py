"""Heavy edits (issue #26): a copy with 10 % of its characters replaced and 3 % inserted
or deleted covers under 0.6 of itself with 8-letter seeds, yet reads 0.85+ alike letter
by letter; the match policy takes each passage at the better of the two."""

from __future__ import annotations

import random

from tracker.common.records import Passage
from tracker.matching.align import Alignment, PassageMeasure, align
from tracker.matching.matcher import MatchPolicy

POOL = "天地人和春夏秋冬东南西北风花雪月山水云雨金木火土日星辰江河湖海"


def _text(seed: int, n: int) -> str:
    rng = random.Random(seed)
    chars = [chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(n)]
    return "".join(c + ("。" if i % 12 == 11 else "") for i, c in enumerate(chars))


def _heavily_edited(text: str, seed: int) -> str:
    """10 % of Han characters replaced, 1.5 % deleted, 1.5 % inserted (bench/eval.py's
    edits-10pct-indel-3pct)."""
    rng = random.Random(seed)
    out = []
    for c in text:
        r = rng.random()
        if "\u4e00" <= c <= "\u9fff" and r < 0.10:
            out.append(rng.choice(POOL))
        elif r < 0.115:
            continue
        else:
            out.append(c)
            if rng.random() < 0.015:
                out.append(rng.choice(POOL))
    return "".join(out)


def test_a_heavily_edited_copy_with_few_seeds_is_a_copy() -> None:
    work = _text(106, 900)
    a = align(_heavily_edited(work, 6), _text(7, 400) + work + _text(8, 400))
    policy = MatchPolicy()
    assert len(a.passages) == 1 and a.suspect_copied > 800
    assert a.similarity < policy.min_similarity  # seeds alone: not a copy
    (measure,) = a.measures
    assert measure.fine is not None and measure.fine > 0.85
    assert policy.is_copy(a)


def test_the_reading_uses_fine_similarity_only_where_measured() -> None:
    def alignment(fine: float | None) -> Alignment:
        a = Alignment([Passage(0, 200, 0, 200, 0.5)], 200, 200, 300, 1000, 0.5)
        a.measures.append(PassageMeasure(0, 200, fine))
        return a

    policy = MatchPolicy()
    assert policy.is_copy(alignment(0.9))
    assert not policy.is_copy(alignment(None))
    assert not policy.is_copy(alignment(0.55))
