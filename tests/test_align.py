import numpy as np
import opencc
from textgen import homophones, random_edits, work

from tracker.align import AlignParams, align, align_prepared, prepare
from tracker.pinyin import initials


def test_whole_copy_is_one_passage():
    mother = work(1, 60)
    a = align(mother, mother)
    assert len(a.passages) == 1
    p = a.passages[0]
    assert (p.suspect_start, p.suspect_end) == (0, len(mother) - 1)  # last char is "。"
    assert p.similarity == 1.0 and a.coverage == 1.0


def test_excerpt_inside_unrelated_text_is_located():
    mother = work(2, 80)
    excerpt = mother[1000:1160]
    host = work(99, 30)
    suspect = host[:500] + excerpt + host[500:]
    a = align(suspect, mother)
    assert len(a.passages) == 1
    p = a.passages[0]
    # Offsets are Python string indices into both texts. A stock phrase right after
    # the excerpt may be absorbed (it continues the diagonal): allow a phrase's slack.
    assert abs(p.suspect_start - 500) <= 2 and 658 <= p.suspect_end <= 690
    assert abs(p.mother_start - 1000) <= 2 and 1158 <= p.mother_end <= 1190
    core = initials(excerpt[2:-2])
    assert core in initials(suspect[p.suspect_start : p.suspect_end])
    assert core in initials(mother[p.mother_start : p.mother_end])


def test_disguises_still_align():
    mother = work(3, 40)
    trad = opencc.OpenCC("s2t").convert(mother)
    for suspect in (homophones(mother), trad, random_edits(mother, 0.05, seed=3)):
        a = align(suspect, mother)
        assert a.coverage > 0.9, a
        assert a.similarity > 0.8


def test_watermarks_and_stripped_punctuation():
    mother = work(4, 30)
    sentences = mother.split("。")
    pirated = "本章由笔趣阁首发www.example.com".join(s.replace("，", "") for s in sentences)
    a = align(pirated, mother)
    assert a.coverage > 0.8 and a.mother_coverage > 0.9


def test_reordered_sentences_are_found():
    mother = work(5, 30)
    sentences = [s + "。" for s in mother.split("。") if s]
    shuffled = "".join(sentences[i] for i in [3, 1, 0, 2, 7, 5, 4, 6, *list(range(8, 30))])
    a = align(shuffled, mother)
    assert a.mother_coverage > 0.9


def test_unrelated_texts_and_short_formulas_do_not_align():
    assert align(work(6, 40), work(7, 40)).passages == []
    formula = "不知后事如何，且听下回分解。"
    a = align(work(8, 20) + formula, work(9, 20) + formula)
    assert a.passages == []


def test_empty_and_tiny_inputs():
    assert align("", work(1, 5)).passages == []
    assert align("短", "短").passages == []
    assert align("abc", "abc").passages == []


def test_min_passage_parameter():
    mother = work(10, 20)
    excerpt = mother[100:160]
    a = align(work(11, 5) + excerpt, mother, AlignParams(min_passage=40))
    b = align(work(11, 5) + excerpt, mother, AlignParams(min_passage=80))
    assert len(a.passages) == 1 and b.passages == []


def test_boilerplate_without_evidence_of_its_own_is_dropped():
    # A passage whose suspect span is mostly "common" (windows many mothers share) is
    # kept only when the engine's evidence for this mother covers enough of it.
    mother = work(12, 40)
    excerpt = mother[300:700]
    host = work(13, 20)
    suspect_text = host[:300] + excerpt + host[300:]
    suspect, prepared = prepare(suspect_text), prepare(mother, index=True)
    lo = len(initials(host[:300]))
    hi = lo + len(initials(excerpt))
    window = 24
    inside = np.arange(lo, hi - window + 1, dtype=np.int64)  # windows covering the copy
    none = np.zeros(0, dtype=np.int64)

    def passages(evidence: np.ndarray | None, common: np.ndarray | None) -> int:
        a = align_prepared(
            suspect, prepared, evidence=evidence, common=common, evidence_window=window
        )
        return len(a.passages)

    assert passages(None, None) == 1  # no evidence at all: nothing is filtered
    assert passages(inside, inside) == 1  # common, but supported by hits of its own
    assert passages(none, inside) == 0  # common and unsupported: boilerplate
    assert passages(none, none) == 1  # unsupported but not common: a real copy
    assert passages(none, None) == 0  # common unknown counts as common
    # Evidence must cover min_passage (40) initials of the passage: 10 windows of 24
    # starting at consecutive initials cover 33, 20 cover 43.
    assert passages(inside[:10], inside) == 0
    assert passages(inside[:20], inside) == 1
