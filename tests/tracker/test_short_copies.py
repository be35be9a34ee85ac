"""Short copies (issue #26): a copy of 50-85 characters is reported when it is
distinctive (its words rare in ordinary text and in the library, reading alike on
characters as well as on initials), never for a stock formula of the same length."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from textgen import work

from tracker.matching.align import AlignParams, align, align_prepared, prepare
from tracker.plumbing.config import DEFAULT_MIN_COPIED, SURE_COPIED
from tracker.text.pinyin import initials
from tracker.text.rarity import build_reference_grams, han_grams, reference_grams

# Legal formulas: the wording of thousands of regulations (68 and 41 Han characters).
LEGAL = (
    "违反本条例规定，未取得许可证擅自从事经营活动的，由县级以上人民政府市场监督管理部门"
    "责令停止违法行为，没收违法所得，并处一万元以上十万元以下的罚款。"
)
APPEAL = "当事人对行政处罚决定不服的，可以依法申请行政复议或者提起行政诉讼。本法自公布之日起施行。"
# Written for this test: a novel's sentences (54 and 66 Han characters).
NOVEL = (
    "她把那封没寄出的信压在窗台的花盆底下，等雨停了才想起来，信纸早已被潮气洇成一片淡蓝，"
    "字迹却还看得清，像是有人刚刚写完。"
)
NOVEL_2 = (
    "守林人的儿子把铜铃挂在最高那棵杉树的枝杈上，说风往北吹时它会替父亲喊人回家，"
    "可那年冬天铃声一直没有响过，山谷里只剩下积雪压断松枝的闷响。"
)


def test_legal_formulas_are_ordinary_and_a_novel_sentence_is_not() -> None:
    ref = reference_grams()
    legal, appeal = ref.ordinariness(LEGAL), ref.ordinariness(APPEAL)
    novel, novel_2 = ref.ordinariness(NOVEL), ref.ordinariness(NOVEL_2)
    p = AlignParams()
    assert legal.common_share > 0.8 and appeal.common_share > 0.8
    assert novel.common_share < p.short_common / 2 and novel_2.common_share < p.short_common / 2
    # One 4-gram per Han character but the last three; punctuation is not a character.
    assert novel.grams == sum("\u4e00" <= c <= "\u9fff" for c in NOVEL) - 3


def test_grams_are_packed_exactly_and_counted_by_document() -> None:
    assert han_grams("甲乙，丙丁戊").size == 2  # 甲乙丙丁, 乙丙丁戊: the comma dropped
    assert han_grams("甲乙丙").size == 0
    ref = build_reference_grams(["甲乙丙丁甲乙丙丁", "甲乙丙丁", "戊己庚辛"], min_df=2)
    # 甲乙丙丁 is in two documents; 乙丙丁甲 twice in one only (doc frequency, not count).
    assert ref.grams.tolist() == han_grams("甲乙丙丁").tolist() and ref.documents == 3
    assert ref.ordinariness("甲乙丙丁").common == 1
    assert ref.ordinariness("乙丙丁甲").common == 0


def _other(seed: int, n: int) -> str:
    """``n`` random Han characters in sentences of 12: text that shares nothing with
    anything by accident (the works of ``textgen`` share its phrase lists)."""
    rng = random.Random(seed)
    chars = [chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(n)]
    return "".join(c + ("。" if i % 12 == 11 else "") for i, c in enumerate(chars))


def _copy(inner: str) -> tuple[str, str]:
    """A mother holding ``inner`` among its own sentences and a suspect holding it
    among other text."""
    return _other(41, 400) + inner + _other(42, 400), _other(43, 300) + inner + _other(44, 200)


def test_a_distinctive_short_copy_is_a_passage_and_a_formula_is_not() -> None:
    for text in (NOVEL, NOVEL_2):
        mother, suspect = _copy(text)
        (p,) = align(suspect, mother).passages
        at = suspect.index(text)
        assert abs(p.suspect_start - at) <= 1 and abs(p.suspect_end - (at + len(text))) <= 2
        n = len(initials(text))
        assert DEFAULT_MIN_COPIED <= n < SURE_COPIED
    for text in (LEGAL, LEGAL + APPEAL[:14]):
        assert DEFAULT_MIN_COPIED <= len(initials(text)) < SURE_COPIED
        mother, suspect = _copy(text)
        assert align(suspect, mother).passages == []


def test_a_short_copy_must_read_alike_on_characters() -> None:
    # Every fourth Han character replaced by another with the same initial (an edit that
    # initials cannot see): alike on initials, not a verbatim copy.
    pool = work(45, 40)
    by_initial: dict[str, str] = {}
    for ch in pool:
        if "\u4e00" <= ch <= "\u9fff":
            by_initial.setdefault(initials(ch), ch)
    edited = "".join(
        by_initial.get(initials(c), c) if i % 4 == 0 and "\u4e00" <= c <= "\u9fff" else c
        for i, c in enumerate(NOVEL)
    )
    assert initials(edited) == initials(NOVEL)
    assert sum(a != b for a, b in zip(edited, NOVEL, strict=True)) >= 10
    mother, _ = _copy(NOVEL)
    suspect = _other(43, 300) + edited + _other(44, 200)
    assert align(suspect, mother).passages == []
    assert len(align(_copy(NOVEL)[1], mother).passages) == 1


def test_a_short_copy_is_read_on_its_core() -> None:
    # The characters just around the copy in the suspect differ from those around it in
    # the mother but share their initials: the run of initials reaches over them, the
    # character reading does not count them against the copy.
    left, right = _other(41, 400), _other(42, 400)
    mother = left + NOVEL + right
    pool = _other(45, 3000)

    def same_initial(ch: str) -> str:
        return next(c for c in pool if c != ch and initials(c) == initials(ch))

    before, after = same_initial(left[-1]), same_initial(right[0])
    suspect = _other(43, 300) + before + NOVEL + after + _other(44, 200)
    (p,) = align(suspect, mother).passages
    at = suspect.index(NOVEL)
    assert p.suspect_start <= at - 1 and p.suspect_end >= at + len(NOVEL) + 1  # the reach


def test_a_short_copy_that_many_library_works_share_is_not_one() -> None:
    mother, suspect = _copy(NOVEL)
    s, m = prepare(suspect), prepare(mother, index=True)
    at = len(initials(suspect[: suspect.index(NOVEL)]))
    own = np.arange(at, at + 40, 6, dtype=np.int64)
    shared = np.arange(at - 20, at + 60, 2, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    assert len(align_prepared(s, m, evidence=own, common=empty).passages) == 1
    assert align_prepared(s, m, evidence=own, common=shared).passages == []


# A regulation's closing articles, written from the legal formulas (259 initials).
RULES = (
    "第十二条 违反本条例规定，未取得许可证擅自从事经营活动的，由县级以上人民政府市场监督管理部门"
    "责令停止违法行为，没收违法所得，并处一万元以上十万元以下的罚款；情节严重的，吊销营业执照。"
    "第十三条 违反本条例规定，经营者未按照规定建立台账的，由县级以上人民政府有关部门责令改正，"
    "给予警告；拒不改正的，处二千元以上二万元以下的罚款。"
    "第十四条 有关行政主管部门的工作人员在监督管理工作中滥用职权、玩忽职守、徇私舞弊的，"
    "依法给予处分；构成犯罪的，依法追究刑事责任。"
    "第十五条 当事人对行政处罚决定不服的，可以依法申请行政复议或者提起行政诉讼。"
    "第十六条 本条例自二〇二〇年一月一日起施行。"
)


def test_formula_text_must_read_alike_letter_for_letter() -> None:
    # Another city's rules for the same thing: other amounts, dates and departments in
    # the same formulas, reading ~0.95 alike on initials.
    other_city = (
        RULES.replace("一万元以上十万元以下", "二万元以上二十万元以下")
        .replace("二〇二〇年一月一日", "二〇二二年六月一日")
        .replace("二千元以上二万元以下", "五千元以上五万元以下")
        .replace("县级以上人民政府市场监督管理部门", "市人民政府城市管理执法部门")
        .replace("吊销营业执照", "吊销许可证件")
    )
    assert reference_grams().ordinariness(RULES).common_share >= AlignParams().formula_common
    mother = _other(1, 500) + RULES + _other(2, 500)

    def passages(text: str, params: AlignParams | None = None) -> list:
        return align(_other(3, 300) + text + _other(4, 300), mother, params).passages

    assert len(passages(RULES)) == 1  # a verbatim copy of formula text is still a copy
    assert passages(other_city) == []
    assert len(passages(other_city, AlignParams(formula_span=0))) == 1  # the rule off
    # The same edits in text that is not formulaic: a copy.
    plain = _other(9, 260)
    mother = _other(1, 500) + plain + _other(2, 500)
    edited = "".join("的" if i % 25 == 5 else c for i, c in enumerate(plain))
    assert len(passages(edited)) == 1


def _yinji(data_dir, *args):
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_check_reports_a_60_character_excerpt_and_not_a_stock_formula(tmp_path) -> None:
    data = tmp_path / "data"
    works = [
        {"id": "novel", "text": _other(501, 1500) + NOVEL_2 + _other(502, 1500)},
        {"id": "rules", "text": _other(503, 1500) + LEGAL + _other(504, 1500)},
        {"id": "other", "text": work(505, 60)},
    ]
    lib = tmp_path / "lib.jsonl"
    lib.write_text("\n".join(json.dumps(w, ensure_ascii=False) for w in works), "utf-8")
    assert _yinji(data, "ingest", str(lib)).returncode == 0
    excerpt = NOVEL_2[:60]
    (tmp_path / "excerpt.txt").write_text(_other(506, 600) + excerpt + _other(507, 600), "utf-8")
    (tmp_path / "formula.txt").write_text(_other(508, 600) + LEGAL + _other(509, 600), "utf-8")
    r = _yinji(
        data, "check", "--json", str(tmp_path / "excerpt.txt"), str(tmp_path / "formula.txt")
    )
    assert r.returncode == 0, r.stderr
    found = {x["suspect_id"]: x["matches"] for x in map(json.loads, r.stdout.splitlines())}
    assert found["formula"] == []
    (m,) = found["excerpt"]
    assert m["mother_id"] == "novel"
    (p,) = m["passages"]
    text = (tmp_path / "excerpt.txt").read_text("utf-8")
    assert excerpt[3:-3] in text[p["suspect_start"] : p["suspect_end"]]
