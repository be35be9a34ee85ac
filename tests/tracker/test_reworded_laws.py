"""The harness's re-worded model text (``neg-law-reworded``, bench/eval_reprints.py):
a sentence of the newer version is a re-wording only when it reads under the kind's
thresholds against every window of the older version, not only against the sentence
it is paired with. On a small made pair of law versions; no ../shared needed."""

from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

import numpy as np
from repo import REPO

sys.path.insert(0, str(REPO / "bench"))

import eval as harness
import eval_reprints


def _lcs(a: list[int], b: list[int]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev = row[:]
        for j, y in enumerate(b, 1):
            row[j] = prev[j - 1] + 1 if x == y else max(prev[j], row[j - 1])
    return row[-1]


def test_reads_over_is_the_best_window_on_the_longest_common_subsequence() -> None:
    rng = random.Random(39)
    for _ in range(300):
        alphabet = rng.choice([2, 3, 5])
        sentence = [rng.randrange(alphabet) for _ in range(rng.randint(1, 8))]
        older = [rng.randrange(alphabet) for _ in range(rng.randint(0, 16))]
        best = max(
            (
                2 * _lcs(sentence, older[i:j]) / (len(sentence) + j - i)
                for i, j in itertools.combinations(range(len(older) + 1), 2)
            ),
            default=0.0,
        )
        for threshold in (0.5, 0.7, 0.85, 0.9):
            got = eval_reprints.reads_over(sentence, np.array(older, dtype=np.int64), threshold)
            assert got == (best > threshold + 1e-9), (sentence, older, threshold, best)


def _han(rng: random.Random, n: int) -> str:
    return "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(n))


def _reworded(rng: random.Random, sentence: str, rate: float) -> str:
    """``sentence`` with ``rate`` of its Han characters replaced (its full stop kept)."""
    return "".join(
        chr(rng.randrange(0x4E00, 0x9FA5)) if c != "。" and rng.random() < rate else c
        for c in sentence
    )


def test_a_sentence_whose_words_stand_elsewhere_in_the_older_version_is_no_rewording(
    tmp_path: Path,
) -> None:
    """The older version holds ``moved`` verbatim at its end and, where the newer version
    puts it, a re-wording of it: paired with that one the sentence reads as re-worded,
    against the whole older version it is a near-verbatim copy and stays out."""
    rng = random.Random(5)
    shared = [_han(rng, 40) + "。" for _ in range(12)]
    changed = [_han(rng, 45) + "。" for _ in range(10)]
    moved = _han(rng, 44) + "。"
    old = shared[:6] + changed + [_reworded(rng, moved, 0.35)] + shared[6:] + [moved]
    new_changed = [_reworded(rng, s, 0.35) for s in changed]
    trap = moved[:-1] + "的。"  # the moved sentence with one character added
    new = [*shared[:6], *new_changed, trap, *shared[6:]]
    (tmp_path / "laws").mkdir()
    rows = [
        {"id": f"law/t/示范条例({y})", "title": "示范条例", "version_date": y, "text": "".join(t)}
        for y, t in (("2001", old), ("2011", new))
    ]
    (tmp_path / "laws" / "laws_national.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    args = (tmp_path, 5, harness.load_jsonl, harness.Case, [])
    _, paired = eval_reprints.build_reworded_cases(*args, paired_only=True)
    mothers, cases = eval_reprints.build_reworded_cases(*args)
    assert [m["id"] for m in mothers] == ["law/t/示范条例(2001)"]
    assert len(paired) == len(cases) == 1 and cases[0].negative
    assert trap in paired[0].text and trap not in cases[0].text
    # What stays: the paired construction's sentences that read under the thresholds
    # against the whole older version (at least 300 characters of them here).
    older = eval_reprints._codes("".join(old))
    paired_sentences = [s for s in [*new_changed, trap] if s in paired[0].text]
    assert paired[0].text == "".join(paired_sentences)
    kept = [s for s in paired_sentences if eval_reprints._reworded_anywhere(s, older)]
    assert cases[0].text == "".join(kept) and len(kept) >= 7
