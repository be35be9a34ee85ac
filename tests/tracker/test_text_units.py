"""The text-unit seam (tracker.text.units): offsets exact, English evasions undone, Chinese
read as before, Latin words inside Chinese text only in runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tracker.text.pinyin import INITIAL_LETTERS, initial_codes
from tracker.text.units import (
    MIN_RUN,
    UNITS_PER_WORD,
    english_table,
    fold_word,
    latin_words,
    read_units,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "english"


def words_of(text: str) -> list[str]:
    w = latin_words(text)
    return [text[a:b] for a, b in zip(w.starts.tolist(), w.ends.tolist(), strict=True)]


def test_word_offsets_are_exact() -> None:
    text = "  The Time Traveller (for so it will be convenient to speak of him)"
    words = words_of(text)
    assert words == text.replace("(", " ").replace(")", " ").split()
    units = read_units(text)
    assert units.words == len(words) and len(units) == UNITS_PER_WORD * len(words)
    # A word's three units stand at its first, middle and last letter.
    assert [text[i] for i in units.offsets[:3]] == ["T", "h", "e"]
    assert [text[i] for i in units.offsets[-3:]] == ["h", "i", "m"]
    assert set(units.letters) <= set(INITIAL_LETTERS)
    assert (np.diff(units.offsets) >= 0).all()


@pytest.mark.parametrize(
    "evaded",
    [
        "Thе Timе Trаvеllеr sаid",  # Cyrillic е and а
        "Τhe Τime Τraveller said",  # Greek capital tau
        "The Ti\u200bme Tra\u200dveller sa\ufeffid",  # zero-width characters
        "The Ti\u00adme Tra\u00adveller said",  # soft hyphens
        "The Time Travel-\nler said",  # a hyphen ending a line
        "The Time Travel- \r\n   ler said",
        "ＴＨＥ ＴＩＭＥ ＴＲＡＶＥＬＬＥＲ ＳＡＩＤ",  # fullwidth capitals
        "The Tíme Trávèller said",  # diacritics
    ],
)
def test_evasions_read_as_the_plain_text(evaded: str) -> None:
    plain = read_units("The Time Traveller said")
    units = read_units(evaded)
    assert units.letters == plain.letters
    assert (units.ids == plain.ids).all()
    # Offsets point into the evaded text itself: first and last letter of each word.
    for (a, b), word in zip(
        zip(units.offsets[::3].tolist(), units.offsets[2::3].tolist(), strict=True),
        ["t", "t", "t", "s"],
        strict=True,
    ):
        assert fold_word(evaded[a]) == word
        assert fold_word(evaded[b]) in {"e", "r", "d"}


def test_smart_quotes_and_apostrophes() -> None:
    assert (
        read_units("I don’t know, ‘he’ said").ids.tolist()
        == read_units("I don't know, 'he' said").ids.tolist()
    )
    assert words_of("I don’t know") == ["I", "don’t", "know"]


def test_addresses_codes_and_other_alphabets_are_no_words() -> None:
    assert words_of("visit www.example.com or mail a@b.org now") == ["visit", "or", "mail", "now"]
    assert words_of("code abc123 and x1 here") == ["code", "and", "here"]
    # A Russian word is not read as English, look-alike letters or not; a word of
    # look-alike letters between English words is English.
    assert words_of("Привет мир and сор") == ["and"]
    assert words_of("Все на свете") == []
    assert words_of("we ате the сосоа beans") == ["we", "ате", "the", "сосоа", "beans"]


def test_chinese_text_reads_as_pinyin_initials_exactly() -> None:
    for text in [
        "中华人民共和国",
        "他说ta shen me也不知道。VIP章节，QQ群123456，www.biquge.example",
        "第一回 宴桃园豪杰三结义 斩黄巾英雄首立功",
    ]:
        codes, offsets = initial_codes(text)
        units = read_units(text)
        assert units.letters == codes.tobytes().decode("ascii")
        assert units.offsets.tolist() == offsets.tolist()
        assert units.words == 0


def test_latin_words_inside_chinese_text_only_in_runs() -> None:
    short = "他用Google搜索了Hello World一下，然后走了。"
    assert read_units(short).words == 0
    quoted = "他念道：To be or not to be, that is the question. 然后走了。"
    units = read_units(quoted)
    assert units.words == 10 >= MIN_RUN
    han = initial_codes(quoted)[0].size
    assert len(units) == han + UNITS_PER_WORD * 10
    # Han units and word units are in text order.
    assert (np.diff(units.offsets) >= 0).all()


def test_english_translation_keeping_chinese_names() -> None:
    text = "Lin Feng (林风) looked at the old master and bowed deeply before him."
    units = read_units(text)
    assert units.words == 12
    assert "林" in {text[i] for i in units.offsets.tolist()}


def test_english_units_follow_the_reference_shares() -> None:
    text = (DATA / "time_machine_ch2_3.txt").read_text(encoding="utf-8")
    units = read_units(text)
    codes = np.frombuffer(units.letters.encode("ascii"), dtype=np.uint8)
    alphabet = np.frombuffer(INITIAL_LETTERS.encode("ascii"), dtype=np.uint8)
    share = np.bincount(codes, minlength=128)[alphabet] / codes.size
    assert np.abs(share - english_table().shares).max() < 0.03


def test_every_str_is_read_without_error() -> None:
    for text in ["", " ", "\ud800lone", "a", "é" * 5, "-\n-\n", "x" * 10_000]:
        units = read_units(text)
        assert units.codes.size == units.offsets.size == units.ids.size


def test_word_bounds_widen_to_whole_words_only() -> None:
    from tracker.text.units import word_bounds

    text = "他说：the Time Tra\u200bveller，然后"
    a = text.index("ime")
    b = text.index("vel") + 2
    assert text[slice(*word_bounds(text, a, b))] == "Time Tra\u200bveller"
    han = text.index("说")
    assert word_bounds(text, han, han + 1) == (han, han + 1)
