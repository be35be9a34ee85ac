"""The English evaluation's mutations (bench/english_mutations.py) do what their names
say, on a small text written here (not the harness's books): look-alike letters replaced,
10 % of the words edited, sentences shuffled and kept, re-wrapped lines keeping the words,
zero-width characters inside words. Not a test of Yinji's recall."""

from __future__ import annotations

import random
import re
import sys

from repo import REPO

sys.path.insert(0, str(REPO / "bench"))

import english_mutations as mut

TEXT = (
    "The lighthouse keeper climbed the narrow stairs before dawn. His lantern swung "
    "against the whitewashed wall, and the gulls complained below. Nobody had written to "
    "him since the winter storms closed the harbour! Was the mail boat still running? "
    "He wondered, polishing the great lens, whether his daughter remembered the island. "
    "“Tomorrow,” he said aloud, “the supply ship will surely come.” The wind answered "
    "with a long, indifferent whistle through the broken shutters of the station."
)


def test_homoglyphs_replace_latin_letters_with_cyrillic_or_greek_lookalikes() -> None:
    out = mut.homoglyphs(TEXT, 0.5, random.Random(1))
    assert len(out) == len(TEXT)
    changed = [(a, b) for a, b in zip(TEXT, out, strict=True) if a != b]
    replaceable = sum(c in mut.HOMOGLYPHS for c in TEXT)
    assert 0.35 * replaceable < len(changed) < 0.65 * replaceable
    for a, b in changed:
        assert b in mut.HOMOGLYPHS[a]
        assert not ("a" <= b.lower() <= "z")  # not a Latin letter
        assert b.isalpha() and ("CYRILLIC" in _name(b) or "GREEK" in _name(b))
    # Undone letter by letter, the text is the original.
    back = {g: k for k, v in mut.HOMOGLYPHS.items() for g in v}
    assert "".join(back.get(c, c) for c in out) == TEXT
    assert mut.homoglyphs(TEXT, 1.0, random.Random(2)).count("e") == 0


def _name(c: str) -> str:
    import unicodedata

    return unicodedata.name(c, "")


def test_ten_percent_of_words_are_edited() -> None:
    words = TEXT.split()
    out, edits = mut.edit_words(TEXT, 0.10, random.Random(3), ["ocean", "copper", "violet"])
    assert len(edits) == round(0.10 * len(words))
    assert len({w for _, w in edits}) == len(edits)  # distinct words
    assert {op for op, _ in edits} <= {"sub", "del", "ins"}
    new = out.split()
    subs = sum(op == "sub" for op, _ in edits)
    dels = sum(op == "del" for op, _ in edits)
    ins = sum(op == "ins" for op, _ in edits)
    assert len(new) == len(words) - dels + ins
    # Every word not chosen survives in order; the edited stretch differs.
    chosen = {w for _, w in edits}
    kept = [w for i, w in enumerate(words) if i not in chosen]
    it = iter(new)
    assert all(any(w == x for x in it) for w in kept)
    assert subs + dels + ins == len(edits) and out != TEXT
    assert "  " not in out


def test_shuffled_sentences_are_the_same_sentences_in_another_order() -> None:
    sents = mut.sentences(TEXT)
    assert len(sents) == 7
    assert sents[2].endswith("harbour!") and sents[3].endswith("running?")
    out = mut.shuffle_sentences(TEXT, random.Random(4))
    shuffled = mut.sentences(out)
    assert sorted(shuffled) == sorted(sents)
    assert shuffled != sents


def test_rewrap_breaks_lines_and_hyphenates_but_keeps_every_word() -> None:
    for width in (40, 55, 72):
        out = mut.rewrap(TEXT, width)
        lines = out.split("\n")
        assert len(lines) > len(TEXT) // width
        assert all(len(line) <= width for line in lines)
        assert mut.unwrap(out).split() == TEXT.split()
    assert re.search(r"[a-z]-\n[a-z]", mut.rewrap(TEXT, 40))  # a word split across lines


def test_zero_width_characters_go_inside_words_and_nothing_else_changes() -> None:
    out = mut.zero_width(TEXT, 1 / 3, random.Random(5))
    marks = [c for c in out if c in mut.ZERO_WIDTH]
    n_words = len(TEXT.split())
    assert n_words / 6 < len(marks) < n_words / 2
    assert "".join(c for c in out if c not in mut.ZERO_WIDTH) == TEXT
    for word in out.split():  # never at a word's edge
        assert word[0] not in mut.ZERO_WIDTH and word[-1] not in mut.ZERO_WIDTH


def test_snap_cuts_at_word_boundaries_and_words_of_undoes_case_and_accents() -> None:
    a, b = mut.snap(TEXT, 5, 60)  # 5 is inside "lighthouse", 60 inside "dawn."
    assert TEXT[a - 1] == " " and TEXT[b] == " "
    assert TEXT[a:b] == "keeper climbed the narrow stairs before dawn."
    assert TEXT[slice(*mut.snap(TEXT, 4, 14))] == "lighthouse"
    assert TEXT[slice(*mut.snap(TEXT, 4, 10))] == ""  # no whole word inside
    assert mut.words_of("Café NAÏVE, don’t") == ["cafe", "naive", "don’t"]
    disguised = mut.zero_width(mut.homoglyphs(TEXT, 1.0, random.Random(6)), 1.0, random.Random(7))
    assert mut.words_of(disguised) == mut.words_of(TEXT) != disguised.split()


def test_mutations_are_deterministic_for_a_seed() -> None:
    for f in (
        lambda r: mut.homoglyphs(TEXT, 0.5, r),
        lambda r: mut.shuffle_sentences(TEXT, r),
        lambda r: mut.zero_width(TEXT, 0.3, r),
        lambda r: mut.edit_words(TEXT, 0.1, r, ["ocean", "copper"])[0],
    ):
        assert f(random.Random(9)) == f(random.Random(9))
