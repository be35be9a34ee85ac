import random

import numpy as np
import opencc
from textgen import homophones, random_edits, work

from tracker.matching.align import AlignParams, align, align_prepared, prepare
from tracker.text.pinyin import initials


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
    # 60 characters copied verbatim: ~55 initials, under a library floor of 60.
    a = align(work(11, 5) + excerpt, mother, AlignParams(min_passage=40, min_copied=40))
    b = align(work(11, 5) + excerpt, mother, AlignParams(min_passage=80, min_copied=40))
    c = align(work(11, 5) + excerpt, mother, AlignParams(min_copied=60))
    assert len(a.passages) == 1 and b.passages == [] and c.passages == []


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


def _han(rng: random.Random, n: int) -> str:
    """Random Han characters: texts that share nothing by accident."""
    return "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(n))


def _templated(text: str, seed: int, every: int = 24, width: int = 4) -> str:
    """``text`` written again from the same model: ``width`` other characters in every
    ``every`` (a formula sentence of one regulation in another's words)."""
    rng = random.Random(seed)
    parts = [text[i : i + every] for i in range(0, len(text), every)]
    return "".join(p[: every - width] + _han(rng, width) if len(p) == every else p for p in parts)


def test_templated_text_is_not_a_copy_but_an_edited_copy_is() -> None:
    # Seed coverage cannot tell them apart (both ~0.85-0.95); the fine similarity can:
    # other words cost their length, a replaced character costs one initial.
    rng = random.Random(13)
    model = _han(rng, 200)
    mother = _han(rng, 400) + model + _han(rng, 400)
    templated = _han(rng, 400) + _templated(model, 5) + _han(rng, 400)
    edited = _han(rng, 400) + random_edits(model, 0.05, seed=2) + _han(rng, 400)
    loose = AlignParams(length_per_fine=0)  # the length threshold no longer grows
    kept = align(templated, mother, loose)
    assert len(kept.passages) == 1 and kept.passages[0].similarity > 0.8
    fine = kept.measures[0].fine
    assert fine is not None and fine < 0.9
    assert align(templated, mother).passages == []
    a = align(edited, mother)
    assert len(a.passages) == 1 and a.measures[0].fine is not None
    assert a.measures[0].fine > 0.93 and a.coverage > 0.15
    # A long templated passage (max_required) counted whatever it read like; since
    # issue #39 one that covers under long_check with seeds must read long_fine alike.
    long_model = _han(rng, 450)
    long_mother = _han(rng, 400) + long_model + _han(rng, 400)
    long_templated = _han(rng, 400) + _templated(long_model, 6) + _han(rng, 400)
    b = align(long_templated, long_mother, AlignParams(long_fine=0))
    assert len(b.passages) == 1 and b.measures[0].fine is None
    b = align(long_templated, long_mother)  # reads 0.86: kept, and measured
    assert len(b.passages) == 1 and b.measures[0].fine is not None
    assert b.measures[0].fine >= AlignParams().long_fine
    assert align(long_templated, long_mother, AlignParams(long_fine=0.9)).passages == []


def test_the_length_needed_grows_as_fine_similarity_falls() -> None:
    p = AlignParams()
    assert p.required(1.0) == p.required(p.full_fine) == p.base == p.sure_copied
    assert p.base < p.required(0.9) < p.required(0.8) <= p.max_required
    assert p.required(0.0) == p.max_required


def test_shuffled_verse_is_found_line_by_line() -> None:
    # Couplets of two 7-character lines: 14 initials each, under the 16 that start a
    # passage, each found elsewhere in the mother once the order is shuffled.
    rng = random.Random(7)
    couplets = [_han(rng, 7) + "，" + _han(rng, 7) + "。" for _ in range(30)]
    mother = _han(rng, 600) + "".join(couplets) + _han(rng, 600)
    order = list(range(30))
    random.Random(3).shuffle(order)
    shuffled = "".join(couplets[i] for i in order)
    host = _han(random.Random(99), 400)
    suspect = host[:200] + shuffled + host[200:]
    a = align(suspect, mother)
    assert len(a.passages) == 1
    p = a.passages[0]
    assert (p.suspect_start, p.suspect_end) == (200, 200 + len(shuffled) - 1)  # "。" has no initial
    assert (p.mother_start, p.mother_end) == (600, 600 + len(shuffled) - 1)
    assert p.similarity == 1.0 and len(p.segments) > 20
    # Without joining lines edge to edge, no passage at all.
    assert align(suspect, mother, AlignParams(tile_gap=-4, reprint_runs=0)).passages == []


def test_a_stray_run_does_not_sink_a_passage() -> None:
    # A short run found far away in the mother right after a copy joins it edge to
    # edge; the passage's similarity counts the mother where its runs are, so the copy
    # stays one passage of full similarity.
    rng = random.Random(21)
    mother = _han(rng, 3000)
    stray = mother[2500:2510]
    suspect = _han(rng, 200) + mother[1000:1300] + stray + _han(rng, 200)
    a = align(suspect, mother)
    assert len(a.passages) == 1
    assert a.passages[0].mother_start == 1000 and a.passages[0].similarity > 0.9


def _verse_between_narration(rng: random.Random, line: int) -> tuple[list[str], str]:
    """24 couplets of ``line``-character lines and a mother that holds the first four
    together, then each of the others after a line of narration."""
    couplets = [_han(rng, line) + "，" + _han(rng, line) + "。" for _ in range(24)]
    narration = [_han(rng, 20) + "道：" for _ in range(24)]
    mother = (
        _han(rng, 300)
        + "".join(couplets[:4])
        + "".join(n + c for n, c in zip(narration[4:], couplets[4:], strict=True))
        + _han(rng, 300)
    )
    return couplets, mother


def test_shuffled_verse_between_narration_counts_by_fine_similarity() -> None:
    # In the mother each couplet follows a line of narration the copy left out, so the
    # copy's seeds cover well under 0.7 of the mother's span, while the passage reads
    # alike letter by letter (issue #13: verse-shuffled-1000 of 红楼梦 chapter 50).
    rng = random.Random(5)
    couplets, mother = _verse_between_narration(rng, 5)
    order = list(range(4, 24))
    random.Random(2).shuffle(order)
    body = "".join(couplets[:4]) + "".join(couplets[i] for i in order)
    host = _han(random.Random(8), 400)
    suspect = host[:200] + body + host[200:]
    a = align(suspect, mother)
    assert len(a.passages) == 1
    p = a.passages[0]
    assert (p.suspect_start, p.suspect_end) == (200, 200 + len(body) - 1)
    assert p.similarity < AlignParams().min_similarity
    assert a.measures[0].fine is not None and a.measures[0].fine > 0.95
    # Seed coverage alone drops it.
    assert align(suspect, mother, AlignParams(fine_over_seeds=1.01)).passages == []


def test_few_seeds_are_not_enough_for_text_that_reads_unalike() -> None:
    # The same shape with every couplet written again with other words in it: fine
    # similarity falls, and the passage is not kept on fine similarity either.
    rng = random.Random(6)
    couplets, mother = _verse_between_narration(rng, 7)
    loose = [c[:10] + _han(rng, 3) + c[13:] for c in couplets]
    order = list(range(4, 24))
    random.Random(2).shuffle(order)
    suspect = _han(rng, 200) + "".join(couplets[:4]) + "".join(loose[i] for i in order)
    found = align(suspect, mother, AlignParams(fine_over_seeds=0.5)).measures
    assert found and found[0].fine is not None and found[0].fine < 0.85
    assert align(suspect, mother).passages == []


def test_an_edited_copy_extends_back_to_where_it_starts() -> None:
    # Characters replaced every 12 at the start of a copy leave runs shorter than the
    # 16 initials that start a passage; the passage reaches back over them on its
    # diagonal instead of starting after the last edit (excerpt-150-edits, issue #13).
    rng = random.Random(17)
    mother = _han(rng, 2000)
    copy = list(mother[700:850])
    for i in (11, 23, 35, 47):  # a character of another initial
        copy[i] = next(c for c in "大是人我" if initials(c) != initials(copy[i]))
    host = _han(rng, 600)
    suspect = host[:300] + "".join(copy) + host[300:]
    a = align(suspect, mother)
    assert len(a.passages) == 1
    p = a.passages[0]
    assert (p.suspect_start, p.suspect_end) == (300, 450)
    assert (p.mother_start, p.mother_end) == (700, 850)


def _clauses(rng: random.Random, formulas: list[str], n: int) -> list[str]:
    """Clauses of a law that repeat its own formulas, each with words of its own."""
    return [
        _han(rng, 6)
        + formulas[i % 3]
        + _han(rng, 10)
        + "；"
        + formulas[(i + 1) % 3]
        + _han(rng, 8)
        + "。"
        for i in range(n)
    ]


def test_shuffled_clauses_of_a_text_repeating_its_formulas_are_found() -> None:
    # Clusters join each shuffled clause with another occurrence of its formulas and
    # read the right words against the wrong clause (case 1178 of bench/eval.py, issue
    # #13); read against each stretch's best occurrence, the copy counts.
    for seed in range(4):
        rng = random.Random(seed)
        formulas = [_han(rng, 16) for _ in range(3)]
        clauses = _clauses(rng, formulas, 12)
        mother = _han(rng, 400) + "".join(clauses) + _han(rng, 400)
        order = list(range(2, 10))
        random.Random(seed).shuffle(order)
        suspect = _han(rng, 300) + "".join(clauses[i] for i in order) + _han(rng, 300)
        found = align(suspect, mother)
        assert found.suspect_copied >= 250, seed
        for p in found.passages:  # inside the shuffled clauses, never the host text
            assert p.suspect_start >= 295 and p.suspect_end <= len(suspect) - 295
        off = AlignParams(best_occurrence=1.01, reprint_runs=0)  # (two clauses in order)
        assert align(suspect, mother, off).passages == []


def test_the_same_formulas_in_other_clauses_are_not_a_copy() -> None:
    # Templated text: the formulas again, every other word new; best occurrences do not
    # make it a copy.
    for seed in range(4):
        rng = random.Random(seed)
        formulas = [_han(rng, 16) for _ in range(3)]
        mother = _han(rng, 400) + "".join(_clauses(rng, formulas, 12)) + _han(rng, 400)
        suspect = _han(rng, 300) + "".join(_clauses(rng, formulas, 8)) + _han(rng, 300)
        assert align(suspect, mother).passages == []


def test_seeds_are_the_same_whichever_side_is_sorted() -> None:
    """A mother met for the first time is scanned against the suspect's sorted grams; a
    cached one is searched by its own sorted grams: the seeds must not depend on which."""
    from tracker.matching.align import Prepared, _pairs_by_mother, _pairs_by_suspect, seeds

    rng = np.random.default_rng(7)
    with_seeds = 0
    for trial in range(40):
        letters = int(rng.choice([2, 3, 4, 23]))  # few letters: grams repeated past the cap
        mother_idx = rng.integers(0, letters, int(rng.integers(20, 3000))).astype(np.uint64)
        # The suspect: pieces of the mother (some repeated) between random letters.
        parts = []
        for _ in range(int(rng.integers(1, 6))):
            a = int(rng.integers(0, mother_idx.size))
            parts.append(mother_idx[a : a + int(rng.integers(0, 400))])
            parts.append(rng.integers(0, letters, int(rng.integers(0, 200))).astype(np.uint64))
        suspect_idx = np.concatenate(parts)

        def prepared(idx: np.ndarray, base: int = 0) -> Prepared:
            k = 8
            n = idx.size
            grams = np.zeros(max(0, n - k + 1), dtype=np.uint64)
            for j in range(k if n >= k else 0):
                grams <<= np.uint64(5)
                grams |= idx[j : n - k + 1 + j]
            return Prepared(idx=idx.astype(np.uint8), offsets=np.arange(n), grams=grams, base=base)

        base = int(rng.integers(0, 50))
        max_occ = int(rng.integers(1, 12))
        suspect, mother = prepared(suspect_idx, base), prepared(mother_idx)
        by_suspect = _pairs_by_suspect(suspect, mother, max_occ)
        by_mother = _pairs_by_mother(suspect, prepared(mother_idx), max_occ)

        def rows(pairs: tuple[np.ndarray, ...]) -> list[tuple[int, ...]]:
            return sorted(zip(*(a.tolist() for a in pairs), strict=True))

        assert rows(by_suspect) == rows(by_mother), trial
        with_seeds += by_suspect[0].size > 0
        # seeds() orders them the same way on either path.
        unindexed, indexed = prepared(mother_idx), prepared(mother_idx)
        from tracker.matching.align import index_mother

        index_mother(indexed)
        one, two = seeds(suspect, unindexed, max_occ), seeds(suspect, indexed, max_occ)
        assert all(np.array_equal(a, b) for a, b in zip(one, two, strict=True))
    assert with_seeds >= 30  # the texts share grams, capped and not
