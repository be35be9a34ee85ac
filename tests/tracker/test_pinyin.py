import numpy as np
import pytest

from tracker.text.pinyin import INITIAL_LETTERS, initial_codes, initials, initials_with_offsets


def test_simplified_and_traditional_han():
    assert initials("中华人民共和国") == "zhrmghg"
    assert initials("紅樓夢") == initials("红楼梦") == "hlm"
    assert initials("長亭外，古道邊") == initials("长亭外，古道边")


def test_non_han_is_dropped():
    # Latin letters that are not pinyin, digits, punctuation, whitespace and emoji carry
    # no initial (pinyin beside Han text does: see the tests below).
    assert initials("abc ABC 123，。！？ \t\n😀🎉") == ""
    assert initials("Tracker音迹2026版") == "yjb"


def test_never_crashes_on_any_str():
    hostile = "\ud800\udfff\x00\x07\x1b\u200b\ue000\U0010ffff\U000e0001\ufeff" + "字"
    assert initials(hostile) == "z"
    assert initials("") == ""
    letters, offsets = initials_with_offsets("")
    assert letters == "" and offsets.size == 0


def test_private_use_and_unassigned_dropped():
    assert initials("\ue000\uf8ff\U000f0000\U0003ffff") == ""


def test_compatibility_ideographs_take_canonical_reading():
    # U+F900 is a compatibility form of 豈 (U+8C48).
    assert initials("\uf900") == initials("豈") != ""


def test_offsets_point_at_characters():
    text = "A面，\ud800 包子😀铺！"
    letters, offsets = initials_with_offsets(text)
    assert letters == "mbzp"
    assert [text[i] for i in offsets] == ["面", "包", "子", "铺"]


def test_letters_are_pinyin_initials():
    big = "".join(chr(c) for c in range(0x4E00, 0x9FA6))
    letters = set(initials(big))
    assert letters <= set(INITIAL_LETTERS)
    assert len(letters) == len(INITIAL_LETTERS)


def test_vectorized_codes_match_string_api():
    text = "天地玄黄，宇宙洪荒。" * 50
    codes, offsets = initial_codes(text)
    assert codes.dtype == np.uint8
    assert codes.tobytes().decode() == initials(text)
    assert offsets.dtype == np.int64 and offsets.size == codes.size


def test_agrees_with_lazy_pinyin_on_unambiguous_characters():
    from pypinyin import Style, lazy_pinyin

    text = "春眠不觉晓处处闻啼鸟夜来风雨声花落知多少"
    expected = "".join(lazy_pinyin(text, style=Style.FIRST_LETTER))
    assert initials(text) == expected


def test_rejects_non_str():
    with pytest.raises(TypeError):
        initials(b"bytes")  # type: ignore[arg-type]


def test_pinyin_written_for_characters_counts_as_those_characters():
    """Pirate sites write some characters as syllables (他→ta, 什么→shen me): the
    initials, and the offsets that map them back, are those of the syllables."""
    from pypinyin import lazy_pinyin

    original = "他们说什么也不肯离开这座城市"
    readings = lazy_pinyin(original)  # an independent source of the syllables
    disguised = "".join(
        (" " + r + " ") if i % 3 == 0 else ch
        for i, (ch, r) in enumerate(zip(original, readings, strict=True))
    )
    assert initials(disguised) == initials(original)
    letters, offsets = initials_with_offsets("他ta们 shen me")
    assert letters == "ttmsm"
    assert [("他ta们 shen me")[i] for i in offsets] == ["他", "t", "们", "s", "m"]


def test_latin_that_is_not_pinyin_in_chinese_text_is_dropped():
    # Not syllables (www, iPhone, Google), acronyms (EMI, TA), or no Han neighbour.
    assert initials("本书首发笔趣阁www.biquge.example") == initials("本书首发笔趣阁")
    assert initials("用iPhone看Google") == initials("用看")
    assert initials("唱片公司EMI所属，TA说") == initials("唱片公司所属，说")
    assert initials("hello world ta men") == ""
    # A non-pinyin word breaks the chain between Han text and pinyin words.
    assert initials("看 hello ta 们") == initials("看") + "t" + initials("们")


def test_split_pinyin_prefers_fewest_syllables():
    from tracker.text.pinyin import split_pinyin

    assert split_pinyin("xian") == [0]
    assert split_pinyin("zhuangshuang") == [0, 6]
    assert split_pinyin("lve") == [0] and split_pinyin("lue") == [0]
    assert split_pinyin("www") is None
    assert split_pinyin("m") is None  # interjection readings without a vowel are left out


def test_pinyin_letters_found_at_the_ends_of_the_ascii_alphabet():
    """The first look for Latin letters is a numpy test of the code points: A/Z/a/z
    (the ends of both ranges) count, the ASCII signs beside them (@ [ ` {) do not."""
    assert initials("中a文") == "zaw"  # "a" is a syllable (啊)
    assert initials("中zi文") == "zzw"
    assert initials("中Ma文") == "zmw"  # Capitalized pinyin
    assert initials("中@[`{文") == "zw"
    assert initials("中\uff41文") == "zw"  # fullwidth a: not an ASCII letter


def test_latin_runs_are_the_regex_runs():
    """Runs of Latin words are matched only where letters are (numpy finds them); the
    runs must be exactly those the regex finds scanning the whole text."""
    import random

    import numpy as np

    from tracker.text.pinyin import _LATIN_RUN, _latin_runs, code_points

    alphabet = ["中", "文", "a", "Z", "ni", "hao", " ", "\t", "\u3000", "，", "1", "@", "\n"]
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        cps = code_points(text)
        latin = np.flatnonzero(((cps | 0x20) - 97) < 26)
        got = [(m.start(), m.end()) for m in _latin_runs(text, latin)]
        assert got == [(m.start(), m.end()) for m in _LATIN_RUN.finditer(text)], text
