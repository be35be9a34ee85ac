"""What of a suspect the engine reads (tracker/text/noise.py): noise at a fixed rhythm found
and mapped back, bidi resolved, and the "not Chinese" warnings."""

from __future__ import annotations

import pytest
from textgen import work

from tracker.common.records import Passage, Segment
from tracker.text.noise import find_noise, read_suspect, script_warning

COPY = work(7, 16)  # about 560 characters


def marked(text: str, mark: str, every: int) -> str:
    return "".join(text[i : i + every] + mark for i in range(0, len(text), every))


@pytest.mark.parametrize("every", [10, 20, 30])
def test_a_han_watermark_at_a_fixed_rhythm_is_taken_out(every: int) -> None:
    suspect = marked(COPY, "风花雪月", every)
    reading = read_suspect(suspect)
    assert [(n.text, n.count) for n in reading.noise] == [("风花雪月", -(-len(COPY) // every))]
    assert reading.text == COPY
    assert reading.original == suspect


def test_a_junk_character_after_every_character_is_taken_out() -> None:
    suspect = "".join(c + "嗯" for c in COPY)
    reading = read_suspect(suspect)
    assert [n.text for n in reading.noise] == ["嗯"]
    assert "嗯" not in reading.text
    assert len(reading.text) == len(COPY) - COPY.count("嗯")


def test_an_occurrence_away_from_the_rhythm_stays() -> None:
    # The mark also stands once in the text after the marked stretch: a word of its own.
    tail = "。后来他在信里写道：那些年的事情，就像窗外的雨一样，风花雪月都已过去。"
    reading = read_suspect(marked(COPY, "风花雪月", 12) + tail)
    assert reading.text == COPY + tail


def test_two_watermarks() -> None:
    # Every 10 characters one of two marks, in turn.
    marks = ["风花雪月", "天才一秒"]
    twice = "".join(COPY[i : i + 10] + marks[(i // 10) % 2] for i in range(0, len(COPY), 10))
    reading = read_suspect(twice)
    assert sorted(n.text for n in reading.noise) == ["天才一秒", "风花雪月"]
    assert reading.text == COPY


def test_ordinary_text_loses_nothing() -> None:
    for seed in range(12):
        text = work(seed, 120)
        assert find_noise(text) == [], seed
    # A single character at a verse's rhythm is the verse's own.
    verse = "".join(f"{work(s, 1)[:7]}兮，" for s in range(30))
    assert read_suspect(verse).noise == []


def test_passages_found_without_the_noise_point_into_the_original() -> None:
    suspect = marked(COPY, "风花雪月", 10)
    reading = read_suspect(suspect)
    # Characters 100-300 of the cleaned text (the copy's own 100-300) ...
    p = Passage(100, 300, 100, 300, 1.0, segments=[Segment(100, 200, 100, 200, 1.0)])
    back = reading.passage(p)
    # ... are, in the suspect, from the 100th copied character to the 299th: ten marks
    # of 4 after every 10 copied characters.
    assert (back.suspect_start, back.suspect_end) == (100 + 4 * 10, 299 + 4 * 29 + 1)
    assert suspect[back.suspect_start] == COPY[100]
    assert suspect[back.suspect_end - 1] == COPY[299]
    assert (back.mother_start, back.mother_end) == (100, 300)
    (seg,) = back.segments
    assert suspect[seg.suspect_start : seg.suspect_end].replace("风花雪月", "") == COPY[100:200]


def test_reversed_bidi_text_is_read_in_display_order() -> None:
    reading = read_suspect("\u202e" + COPY[::-1] + "\u202c")
    assert reading.original == reading.text == COPY


def test_text_without_noise_is_read_as_it_is() -> None:
    reading = read_suspect(COPY)
    assert reading.text is COPY and reading.kept is None and reading.noise == []


# -- scripts -------------------------------------------------------------------------
def warn(text: str, read: int, needed: int = 85) -> str | None:
    w = script_warning(text, "doc.txt", read=read, needed=needed, engine="daguan")
    return None if w is None else w.code


RUSSIAN = (
    "Все счастливые семьи похожи друг на друга, каждая несчастливая семья несчастлива по-своему. "
)


def test_a_text_in_a_script_yinji_cannot_read_is_named_never_a_silent_no_match() -> None:
    w = script_warning(RUSSIAN * 20, "doc.txt", read=0, needed=85, engine="daguan")
    assert w is not None and w.code == "no-chinese"
    assert "doc.txt" in w.message and "daguan" in w.message
    assert w.to_json()["scripts"] == ["Han"]


def test_too_few_chinese_characters() -> None:
    assert warn("他说：好。", read=4) == "few-chinese"


def test_mostly_other_scripts() -> None:
    assert warn(RUSSIAN * 20 + COPY[:100], read=100) == "mostly-other"  # 220 words


def test_english_is_a_script_yinji_reads() -> None:
    english = "It was the best of times, it was the worst of times. " * 20  # 240 words
    # Read as units (two a word): no warning, short or long, alone or beside Chinese.
    assert warn(english, read=480) is None
    assert warn("It was the best of times.", read=12) is None
    assert warn(english + COPY[:100], read=580) is None


def test_chinese_with_some_latin_words_is_fine() -> None:
    text = COPY + " iPhone Google Android YouTube "
    assert warn(text, read=len(COPY)) is None


def test_pinyin_syllables_are_not_other_words() -> None:
    # 60 Han characters and 60 syllables read as initials: nothing unread.
    text = "".join(c + " ta " for c in COPY[:60])
    assert warn(text, read=120, needed=85) is None


def test_repeated_ad_lines_are_taken_out_and_passages_split_there() -> None:
    sentences = [s + "。" for s in COPY.split("。") if s][:12]
    ads = ["最新章节请到笔趣阁阅读", "天才一秒记住本站地址"]
    text = "".join(
        s + (f"\n{ads[(i // 2) % 2]}\n" if i % 2 else "") for i, s in enumerate(sentences)
    )
    reading = read_suspect(text)
    assert sorted((n.text, n.count, n.line) for n in reading.noise) == [
        ("天才一秒记住本站地址", 3, True),
        ("最新章节请到笔趣阁阅读", 3, True),
    ]
    assert reading.text.replace("\n", "") == "".join(sentences)
    # One passage over the whole cleaned text, copied from characters 1000- of a
    # mother, comes back as the copied stretches between the ad lines, each with its
    # own place in the mother.
    mother = work(8, 30)[:1000] + "".join(sentences) + work(9, 10)
    n = len(reading.text)
    pieces = reading.passages([Passage(0, n, 1000, 1000 + n - 10, 1.0)], mother)
    assert len(pieces) == 6
    for i, piece in enumerate(pieces):
        copied = text[piece.suspect_start : piece.suspect_end]
        assert copied == "".join(sentences[2 * i : 2 * i + 2])
        assert mother[piece.mother_start : piece.mother_end] == copied


def test_a_line_repeated_twice_is_the_texts_own() -> None:
    text = "他说：“走吧。”\n" + COPY[:200] + "\n他说：“走吧。”\n" + COPY[200:400]
    assert read_suspect(text).noise == []


def test_a_mark_that_holds_a_character_twice() -> None:
    suspect = marked(COPY, "水水人人", 10)
    reading = read_suspect(suspect)
    assert [(n.text, n.period) for n in reading.noise] == [("水水人人", 14)]
    assert reading.text == COPY
