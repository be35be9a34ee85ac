"""Character alignment of passages (tracker.matching.textdiff)."""

from __future__ import annotations

import importlib.util

import pytest
from textgen import work

from tracker.matching.textdiff import (
    EXACT_LIMIT,
    LEGEND,
    CharDiff,
    Span,
    char_diff,
    char_similarity,
    pieces,
)

S1 = "清晨的小镇还没有完全醒来，河边的石板路上只有几个早起的老人在散步。"
S2 = "卖豆浆的摊主一边生火，一边和邻居聊着昨天下午突然来的那场大雨。"
S3 = "我们这次出门，是为了找一家据说开了三十年的旧书店。"
S4 = "书店的老板是个戴眼镜的中年人，说话很慢，却记得每一本书放在哪里。"


def _partition(text: str, spans: tuple[Span, ...]) -> None:
    """The spans of one side cover the text exactly, in order, without gaps."""
    assert "".join(t for t, _ in pieces(text, spans)) == text
    position = 0
    for span in spans:
        assert span.start == position and span.end > span.start
        position = span.end
    assert position == len(text)


def _check(suspect: str, mother: str) -> CharDiff:
    diff = char_diff(suspect, mother)
    _partition(suspect, diff.suspect)
    _partition(mother, diff.mother)
    assert all(s.kind != "deleted" for s in diff.suspect)
    assert all(s.kind != "inserted" for s in diff.mother)
    assert 0.0 <= diff.ratio <= 1.0
    return diff


def test_identical_texts() -> None:
    diff = _check(S1, S1)
    assert diff.ratio == 1.0 and diff.same == len(S1)
    assert diff.suspect == (Span(0, len(S1), "same"),) == diff.mother
    assert char_diff("", "").ratio == 1.0 and char_diff("", "").suspect == ()


def test_homophones_are_marked_and_lower_the_ratio() -> None:
    # 18 characters replaced by homophones (same pinyin, another character).
    swaps = {
        "晨": "辰",
        "镇": "震",
        "完": "玩",
        "醒": "星",
        "河": "和",
        "板": "版",
        "只": "之",
        "起": "启",
        "步": "部",
        "浆": "将",
        "摊": "滩",
        "火": "伙",
        "居": "拘",
        "昨": "左",
        "午": "武",
        "突": "图",
        "场": "常",
        "雨": "语",
    }
    mother = S1 + S2
    suspect = "".join(swaps.get(ch, ch) for ch in mother)
    diff = _check(suspect, mother)
    counts = diff.counts()
    assert counts["substituted"] == counts["homophone"] == 18
    assert counts["inserted"] == counts["deleted"] == counts["edit"] == 0
    assert diff.ratio == pytest.approx((len(mother) - 18) / len(mother))
    marked = [t for t, s in pieces(suspect, diff.suspect) if s.kind == "substituted"]
    assert "".join(marked) == "".join(swaps.values())
    assert char_similarity(suspect, mother) == diff.ratio


def test_edits_insertions_and_deletions() -> None:
    mother = S1
    suspect = S1.replace("早起的", "").replace("散步", "跑步") + "本站首发"
    diff = _check(suspect, mother)
    kinds = {(t, s.kind, s.detail) for t, s in pieces(suspect, diff.suspect) if s.kind != "same"}
    assert ("跑", "substituted", "edit") in kinds and ("本站首发", "inserted", "") in kinds
    gone = [t for t, s in pieces(mother, diff.mother) if s.kind == "deleted"]
    assert gone == ["早起的"]
    assert diff.counts()["deleted"] == 3 and diff.counts()["inserted"] == 4


def test_traditional_forms_are_variants() -> None:
    if importlib.util.find_spec("opencc") is None:
        pytest.skip("opencc-python-reimplemented is not installed")
    traditional = "清晨的小鎮還沒有完全醒來，河邊的石板路上只有幾個早起的老人在散步。"
    diff = _check(traditional, S1)
    counts = diff.counts()
    assert counts["variant"] == counts["substituted"] == 7  # 鎮還沒來邊幾個
    assert "variant" in LEGEND and "homophone" in LEGEND


def test_reordered_sentences_are_not_similar() -> None:
    # Four sentences in reverse order: the initials can align piece by piece, but as
    # one block the characters mostly differ.
    mother = S1 + S2 + S3 + S4
    suspect = S4 + S3 + S2 + S1
    diff = _check(suspect, mother)
    assert diff.ratio < 0.5
    assert char_diff(mother, mother).ratio == 1.0


def test_long_passages_align() -> None:
    mother = work(9001, 150)
    assert len(mother) > EXACT_LIMIT
    suspect = "".join("他" if i % 50 == 0 else ch for i, ch in enumerate(mother))
    diff = _check(suspect, mother)
    changed = sum(1 for i, ch in enumerate(mother) if i % 50 == 0 and ch != "他")
    assert diff.counts()["substituted"] == changed
    assert diff.ratio == pytest.approx((len(mother) - changed) / len(mother))
    assert diff.to_json()["suspect"][0][2] in ("same", "substituted")
