import numpy as np
import pytest

from tracker.pinyin import INITIAL_LETTERS, initial_codes, initials, initials_with_offsets


def test_simplified_and_traditional_han():
    assert initials("中华人民共和国") == "zhrmghg"
    assert initials("紅樓夢") == initials("红楼梦") == "hlm"
    assert initials("長亭外，古道邊") == initials("长亭外，古道边")


def test_non_han_is_dropped():
    # Latin letters, digits, punctuation, whitespace and emoji carry no initial.
    assert initials("abc ABC 123，。！？ \t\n😀🎉") == ""
    assert initials("Yinji音迹2026版") == "yjb"


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
