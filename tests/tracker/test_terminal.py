"""tracker.plumbing.terminal: tables aligned by display width (issue #14)."""

from __future__ import annotations

from tracker.plumbing.terminal import display_width, fit


def test_display_width_counts_cjk_as_two_columns() -> None:
    assert display_width("abc") == 3
    assert display_width("春晓") == 4
    assert display_width("Ａ") == 2  # fullwidth Latin
    assert display_width("e\u0301") == 1  # combining accent takes no column


def test_fit_pads_and_cuts_by_columns_never_half_a_character() -> None:
    assert fit("春晓", 6) == "春晓  "
    assert fit("w2", 4, align="right") == "  w2"
    cut = fit("春眠不觉晓处处闻啼鸟", 9)
    assert cut == "春眠不觉…" and display_width(cut) == 9
    assert display_width(fit("春眠不觉晓处处闻啼鸟", 8)) == 8  # 3 wide + … + a space
    assert fit("第一章\n春晓", 20).startswith("第一章 春晓")
    assert fit("abcdefghij", 5) == "abcd…"
