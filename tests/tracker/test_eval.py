"""The evaluation harness's templated-text suite (bench/eval_laws.py, bench/eval_diagnose.py)
on generated text: no ../shared needed."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
from repo import REPO
from textgen import homophones, work

sys.path.insert(0, str(REPO / "bench"))

import eval_diagnose
import eval_laws

from tracker.common.records import Passage
from tracker.matching.align import align, prepare

FORMULA = (
    "违反本条例规定的，由县级以上人民政府有关部门责令改正，给予警告；"
    "情节严重的，处一万元以上五万元以下的罚款。"
)


def noise(seed: int, n: int = 800) -> str:
    """Random Han characters: two such texts share no 13-gram by accident."""
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(n))


def law(i: int, title: str, text: str) -> dict:
    return {"id": f"law/test/{title}({i})", "title": title, "text": text}


def test_law_names_strip_country_brackets_and_suffixes() -> None:
    names = eval_laws.law_names({"title": "中华人民共和国渔业法实施细则（试行）"})
    assert names == {"渔业法实施细则", "渔业法"}
    quoted = eval_laws.law_names({"title": "最高人民法院关于适用《民事诉讼法》的解释"})
    assert "民事诉讼法" in quoted


def test_families_relate_versions_citations_and_shared_text() -> None:
    b = noise(2)
    laws = [
        law(0, "渔业法", noise(1)),
        law(1, "渔业法实施细则", noise(3)),  # its name contains 渔业法
        law(2, "海洋条例", "根据《中华人民共和国渔业法》，制定本条例。" + noise(4)),  # cites it
        law(3, "森林条例", b),
        law(4, "草原条例", noise(5) + b[:400]),  # 400 characters of 森林条例, verbatim
        *(law(5 + i, f"第{i}湖泊条例", noise(6 + i) + FORMULA) for i in range(5)),
    ]
    fam = eval_laws.LawFamilies(laws)
    assert fam.related(0, 1) and fam.related(1, 0)
    assert fam.related(0, 2)
    assert fam.related(3, 4)  # specific shared text
    assert not fam.related(0, 3)
    assert not fam.related(5, 6)  # a formula five laws hold is not a relation
    assert fam.related_to_any(1, [3, 0]) and not fam.related_to_any(5, [0, 3])


def test_shared_specific_ignores_text_many_documents_hold() -> None:
    texts = [noise(10 + i) + FORMULA for i in range(5)]
    texts[1] += noise(20, 100)
    texts[2] += noise(20, 100)  # only documents 1 and 2 share this
    shared = eval_laws.shared_specific(texts, max_df=3)
    # 88 13-grams inside the 100 shared characters and 12 across the formula's end.
    assert shared == {(1, 2): 100}


def test_verse_mask_and_windows_find_poems() -> None:
    prose = work(30, 20)
    poem = "\n\n".join(["春风吹柳绿，细雨润花红。", "远山含翠色，近水映霞光。"] * 4)
    text = prose + poem + prose
    mask = eval_laws.verse_mask(text)
    start = text.index("春风")
    assert mask[start : start + len(poem)].mean() > 0.8
    assert mask[: len(prose)].sum() == 0
    windows = eval_laws.verse_windows([{"text": text}], 100, share=0.5, step=10)
    assert windows and all(ci == 0 for ci, _ in windows)
    assert any(start - 20 <= a <= start + 20 for _, a in windows)


def test_shuffle_sentences_keeps_every_sentence_and_is_seeded() -> None:
    text = "春风吹柳绿．细雨润花红。远山含翠色！\n\n近水映霞光？夜来风雨声；花落知多少。"
    a = eval_laws.shuffle_sentences(text, random.Random(3))
    b = eval_laws.shuffle_sentences(text, random.Random(3))
    assert a == b
    assert sorted(a) == sorted(text.lstrip("\n"))
    assert a != text


def test_gram_table_counts_mothers_not_occurrences() -> None:
    x = work(40, 10)
    table = eval_laws.GramTable(["a", "b", "c"], [x + x, x, work(41, 10)])
    grams = np.unique(prepare(x, 8).grams)
    assert set(table.df(grams).tolist()) <= {2, 3}
    assert np.median(table.df(grams)) == 2
    holders = table.holders(grams)
    assert holders[0] == holders[1] == grams.size
    assert holders[2] < grams.size // 4


def test_passage_features_tell_shared_text_from_own_text() -> None:
    own = noise(50, 300)
    host = noise(51, 700)
    head = noise(52, 400)
    mother_a = head + FORMULA + own + noise(53, 400)
    mother_b = noise(54, 400) + FORMULA + noise(55, 400)
    mother_c = noise(56, 400) + FORMULA + noise(57, 400)
    table = eval_laws.GramTable(["a", "b", "c"], [mother_a, mother_b, mother_c])
    at = len(head) + len(FORMULA)  # where ``own`` lies in mother a

    def features(suspect: str, start: int, text: str, m_start: int) -> dict:
        s = prepare(suspect, 8)
        passage = Passage(start, start + len(text), m_start, m_start + len(text), 1.0)
        return eval_laws.passage_features(
            suspect,
            mother_a,
            passage,
            "a",
            table,
            s_offsets=s.offsets,
            s_grams=s.grams,
            planted=(300, 300 + len(text)),
        )

    f = features(host[:300] + own + host[300:], 300, own, at)
    assert f["own1"] == f["s_init"] == 300 and f["cf1"] == 0.0 and f["wown"] == 300
    assert f["verbatim8"] == 1.0 and f["planted"] == 1.0 and f["mothers_half"] == 0
    # The formula alone: the two other mothers hold it, so it is no evidence of its own.
    g = features(host[:300] + FORMULA + host[300:], 300, FORMULA, len(head))
    assert g["own1"] == g["own2"] == 0 and g["own3"] == g["s_init"] and g["cf1"] == 1.0
    assert g["mothers_half"] == 2 and g["wown"] == pytest.approx(g["s_init"] / 3, abs=0.5)


def test_homophone_copy_has_own_evidence_but_no_verbatim() -> None:
    mother = work(60, 20)
    suspect = homophones(mother[200:500])
    table = eval_laws.GramTable(["m", "x"], [mother, noise(61)])
    s = prepare(suspect, 8)
    p = align(suspect, mother).passages[0]
    f = eval_laws.passage_features(
        suspect, mother, p, "m", table, s_offsets=s.offsets, s_grams=s.grams
    )
    assert f["own1"] >= 0.9 * f["s_init"]
    assert f["verbatim8"] < 0.5  # why a minimum verbatim share would lose such copies


def _synthetic_suite(n: int = 3) -> eval_laws.LawSuite:
    laws = [law(i, f"第{i}号条例", work(100 + i, 40) + FORMULA) for i in range(40)]
    chapters = [
        {"id": f"ch-{i}", "text": work(200 + i, 30) + "\n\n春风吹柳绿，细雨润花红。" * 20}
        for i in range(3)
    ]
    return eval_laws.build_law_cases(
        laws,
        chapters,
        chapters,
        n=n,
        n_library=10,
        make_case=lambda *a: a,
        hmap={"的": "地"},
        s2t=lambda t: t,
        seed=5,
    )


def test_build_law_cases_is_seeded_and_plants_at_the_stated_spans() -> None:
    suite = _synthetic_suite()
    again = _synthetic_suite()
    assert [c[1] for c in suite.cases] == [c[1] for c in again.cases]
    kinds = [c[0] for c in suite.cases]
    assert kinds.count("neg-law-law") == 6
    for kind in (
        "law-excerpt-300",
        "law-homophone-300",
        "law-s2t-300",
        "law-shuffled-600",
        "novel-excerpt-300",
        "verse-shuffled-1000",
    ):
        assert kinds.count(kind) == 3
    lib_ids = {d["id"] for d in suite.library}
    assert len(lib_ids) == 10
    by_id = {d["id"]: d for d in suite.library}
    for kind, text, truth, s_span, m_span, negative, extra in suite.cases:
        if negative:
            assert extra["id"] not in lib_ids and not truth
            continue
        assert extra["host"] not in lib_ids
        (source,) = truth
        if kind == "law-excerpt-300":
            assert text[s_span[0] : s_span[1]] == by_id[source]["text"][m_span[0] : m_span[1]]
        if kind == "law-shuffled-600":
            copied = text[s_span[0] : s_span[1]]
            assert sorted(copied) == sorted(
                by_id[source]["text"][m_span[0] : m_span[1]].lstrip("\n")
            )


def test_build_law_cases_needs_hosts() -> None:
    laws = [law(i, f"第{i}号条例", work(300 + i, 5)) for i in range(4)]  # too short to host
    with pytest.raises(ValueError, match="host"):
        eval_laws.build_law_cases(
            laws,
            [],
            [],
            n=1,
            n_library=2,
            make_case=lambda *a: a,
            hmap={},
            s2t=lambda t: t,
        )


def _passage(s_init: int, sim: float, wown: float, start: int = 0) -> dict:
    return {
        "s_init": s_init,
        "similarity": sim,
        "wown": wown,
        "own2": wown,
        "suspect_start": start,
        "suspect_end": start + s_init,
    }


def test_diagnose_simulation_reproduces_then_applies_rules() -> None:
    cases = [
        {"no": 0, "kind": "copy", "negative": False, "recalled": True, "flagged": False},
        {"no": 1, "kind": "neg-law-law", "negative": True, "recalled": False, "flagged": True},
    ]
    pairs = [
        {"no": 0, "label": "true", "pair_wown": 150.0, "passages": [_passage(150, 1.0, 150)]},
        {
            "no": 1,
            "label": "false",
            "pair_wown": 30.0,
            # The same span twice counts once: 100 initials, not 200.
            "passages": [_passage(100, 0.8, 30), _passage(100, 0.8, 30)],
        },
    ]
    keep_all = eval_diagnose.simulate(cases, pairs, lambda p: True)
    assert keep_all.recall == {"copy": 1.0} and keep_all.flagged == 1 and keep_all.law_flagged == 1
    eval_diagnose.check_reproduces(cases, pairs)
    strict = eval_diagnose.simulate(
        cases, pairs, lambda p: True, lambda pr, kept: eval_diagnose.pair_wown(pr, kept) >= 60
    )
    assert strict.flagged == 0 and strict.recall == {"copy": 1.0} and strict.precision == 1.0
    too_strict = eval_diagnose.simulate(cases, pairs, lambda p: p["wown"] >= 200)
    assert too_strict.recall == {"copy": 0.0}
    assert "recall below today" in " ".join(eval_diagnose.targets(too_strict, keep_all, {"copy"}))
    short = eval_diagnose.MIN_COPIED - 1  # the policy's minimum copied length
    assert not eval_diagnose.pair_survives([_passage(short, 1.0, short)], lambda p: True)


def test_fine_rule_simulates_the_verifiers_length_for_fine_similarity() -> None:
    from tracker.matching.align import AlignParams

    p = AlignParams()  # 85 initials at >= 0.95, 2000 more per unit below, at most 400
    assert eval_diagnose.fine_counts({"s_init": 85, "fine": 0.97}, p)
    assert not eval_diagnose.fine_counts({"s_init": 84, "fine": 0.97}, p)
    assert eval_diagnose.fine_counts({"s_init": 125, "fine": 0.93}, p)
    assert not eval_diagnose.fine_counts({"s_init": 124, "fine": 0.93}, p)
    assert not eval_diagnose.fine_counts({"s_init": 399, "fine": 0.5}, p)
    assert eval_diagnose.fine_counts({"s_init": 500, "fine": None}, p)  # long: not measured
    names = list(eval_diagnose.rules())
    assert "passage fine: 85 + 2000*(0.95-fine)" in names


def test_an_edition_slice_the_library_lacks_is_left_out_of_recall() -> None:
    # trad-edition case 675: the library's chapter stops before the slice's text, so
    # the slice tests no recall (bench/eval.py, issue #13); its pairs still count.
    import eval as harness

    chapter = work(40, 30)
    held, lacking = chapter[:600], noise(41, 600)
    assert harness.source_share(held, [chapter]) == 1.0
    assert harness.source_share(lacking, [chapter]) < harness.SOURCE_SHARE
    mothers = [{"id": "ch-1", "text": chapter}, {"id": "other", "text": work(42, 30)}]
    cases = [
        harness.Case("trad-edition", held, {"ch-1"}),
        harness.Case("trad-edition", lacking, {"ch-1"}, extra={"source_missing": True}),
    ]
    run = harness.run_engine("daguan", {}, mothers, cases)
    row = run.rows["trad-edition"]
    assert (row["n"], row["recall"], row["source_missing"]) == (1, 1, 1)
    assert run.measures("trad-edition")["recall"] == 1.0
    assert "source not in library" in harness.summary(run)


def fake_novels(root, chapters: int = 4) -> None:
    """A ``novels`` folder shaped as ../shared's: per novel the chapter JSONL (titles
    ``书名 第N回 …``) and the independent editions eval_books cuts pages from (the same
    chapters under their own headings; the traditional ones converted with OpenCC)."""
    import json

    import opencc
    from eval_books import NOVELS

    s2t = opencc.OpenCC("s2t")
    numerals = "一二三四五六七八九十"
    novels = root / "novels"
    novels.mkdir()
    for k, (stem, title) in enumerate(NOVELS.items()):
        texts = [work(100 * k + i, 70) for i in range(chapters)]
        rows = [
            {"id": f"{stem}-{i + 1:03d}", "title": f"{title} 第{numerals[i]}回 题{i}", "text": t}
            for i, t in enumerate(texts)
        ]
        (novels / f"{stem}.chapters.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
        edition = "".join(f"第{numerals[i]}回　回目{i}\n\n{t}\n\n" for i, t in enumerate(texts))
        for name in ("web-copy", "alt-edition"):
            (novels / f"{stem}.{name}.txt").write_text(edition, encoding="utf-8")
        (novels / f"{stem}.trad-edition.txt").write_text(s2t.convert(edition), encoding="utf-8")


def test_book_suite_pages_of_chapters_and_straddling_slices(tmp_path) -> None:
    import eval as harness
    import eval_books

    # A slice holding 41 characters of the next chapter (its heading) is not that
    # chapter; one holding HELD or more of two chapters may name either.
    assert eval_books.held_by([(0, 1000), (1000, 3000)], 959, 2459) == {1: 41, 2: 1459}
    case = eval_books.PageCase("slice", "x.txt", "书", "", {1: 41, 2: 1459})
    assert (case.truth, case.main) == ({2}, 2)
    assert eval_books.PageCase("slice", "x.txt", "书", "", {1: 700, 2: 800}).truth == {1, 2}
    assert eval_books.split_page("甲" * 10 + "\n\n" + "乙" * 9) == 12
    assert eval_books.split_page("第一回\n\n" + "甲乙。" * 10) == 17  # no paragraph: a sentence end
    assert eval_books.chapter_number("第一百四回 醉金刚", harness.chinese_number) == 104

    fake_novels(tmp_path)
    cases = eval_books.build_page_cases(
        tmp_path,
        2,
        harness.split_chapters,
        harness.source_share,
        harness.SOURCE_SHARE,
        harness.chinese_number,
    )
    assert {c.kind for c in cases} == {"slice", "chapter", "page-1", "page-2"}
    run = eval_books.run_book_eval(tmp_path, cases, harness.chinese_number)
    # Both novels became books of four chapters through the chapter detector.
    assert sorted(run.books) == ["《三国演义》 4 chapters", "《红楼梦》 4 chapters"]
    assert not run.missing and len(run.results) == len(cases)
    assert all(r.right for r in run.results), [r.named for r in run.results if not r.right]
    table = eval_books.report(run)
    assert f"| **all** | {len(cases)} | {len(cases)} (100.0%)" in table

    # A top match naming another chapter, or another book, is a miss with its reason.
    numbers = {"三国演义": {1: 1, 2: 2}}
    page = eval_books.PageCase("chapter", "x.txt", "三国演义", "", {1: 3000})
    wrong = {"book_title": "三国演义", "chapter_index": 2, "chapter": "第二回", "score": 0.5}
    miss = eval_books.judge(page, [{**wrong, "coverage": 0.4}], numbers, 1.0)
    assert not miss.right and "chapter_index 2" in miss.named
    assert not eval_books.judge(page, [], numbers, 1.0).right
    # An edition that puts a block of another chapter under this heading: naming that
    # chapter is right when the page holds HELD characters of its text (by 8-grams).
    other = work(7, 10)
    page.simplified = work(8, 5) + other
    texts = {"三国演义": {2: [other]}}
    by_text = eval_books.judge(page, [{**wrong, "coverage": 0.4}], numbers, 1.0, texts)
    assert by_text.right and not by_text.strict
    assert by_text.by_text == eval_books.text_held(page.simplified, [other]) >= eval_books.HELD
    page.simplified = work(8, 5)
    assert not eval_books.judge(page, [{**wrong, "coverage": 0.4}], numbers, 1.0, texts).right
