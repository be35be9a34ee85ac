"""The Daguan engine's candidates: a mother with a single fingerprint that no other
mother holds is a (weak) candidate, after the others (issue #13, shuffled verse)."""

from __future__ import annotations

from typing import Any

import numpy as np
from textgen import work

from tracker.engines.daguan import DaguanEngine, HitPairs, rank_mothers


def test_rank_mothers_adds_single_unique_hits_after_the_others() -> None:
    # Distinct fingerprints 0-3; df: how many mothers hold each.
    df_fp = np.array([1, 1, 1, 2])
    pairs = HitPairs(
        pos=np.array([0, 1, 2, 3, 3, 4]),
        seq=np.array([5, 5, 7, 5, 9, 8]),
        fp=np.array([0, 1, 2, 3, 3, 3]),
    )
    seqs, _strength, ranked = rank_mothers(pairs, df_fp, 2)
    assert [int(seqs[i]) for i in ranked] == [5]
    seqs, _strength, ranked = rank_mothers(pairs, df_fp, 2, weak=4)
    # 7 holds fingerprint 2 alone; 9 and 8 share fingerprint 3 with 5: no weak candidate.
    assert [int(seqs[i]) for i in ranked] == [5, 7]
    seqs, _strength, ranked = rank_mothers(pairs, df_fp, 2, weak=0)
    assert [int(seqs[i]) for i in ranked] == [5]


def test_rank_mothers_caps_weak_candidates() -> None:
    df_fp = np.ones(6, dtype=np.int64)
    pairs = HitPairs(pos=np.arange(6), seq=np.arange(10, 16), fp=np.arange(6))
    seqs, _strength, ranked = rank_mothers(pairs, df_fp, 2, weak=3)
    assert [int(seqs[i]) for i in ranked] == [10, 11, 12]


def test_one_surviving_window_makes_the_mother_a_candidate(redis_client: Any) -> None:
    # A suspect holding one 24-letter window of the mother and nothing else of it (what
    # shuffled verse leaves): the index finds one fingerprint, which no other mother has.
    mother, other, host = work(31, 60), work(32, 60), work(33, 30)
    strong = DaguanEngine(redis_client, "yinji")
    strong.add([(1, strong.mother_fingerprints(mother)), (2, strong.mother_fingerprints(other))])
    found = None
    for start in range(200, 1200, 7):
        for length in range(24, 34):
            suspect = host[:300] + mother[start : start + length] + host[300:]
            hits = strong._suspect_hits(suspect)
            if hits is None:
                continue
            in_mother = set(strong.mother_fingerprints(mother).tolist())
            dense = strong.fingerprinter.fingerprints(suspect, stride=1).values
            if len({v for v in dense.tolist() if v in in_mother}) == 1:
                found = suspect
                break
        if found:
            break
    assert found is not None, "no piece of the mother with exactly one window found"
    assert 1 in dict(strong.candidates(found))
    old = DaguanEngine(redis_client, "yinji", weak_candidates=0)
    assert 1 not in dict(old.candidates(found))
