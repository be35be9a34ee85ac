"""The English evaluation's suspects (bench/eval_english.py ``Builder``) on small books
generated here (not the harness's texts): every kind is built, each copy comes from its
truth part, edition slices find their parts, negatives share no text with the library,
and a seed gives the same suspects. Not a test of Yinji's recall."""

from __future__ import annotations

import random
import sys

from repo import REPO

sys.path.insert(0, str(REPO / "bench"))

import eval_english as ev
from english_data import Source
from english_mutations import UNDO, rewrap, sentences, unwrap, words_of

KINDS = {
    "edition",
    "excerpt-150",
    "excerpt-500",
    "excerpt-1500",
    "excerpt-3000",
    "edits-10pct",
    "homoglyphs",
    "shuffled",
    "rewrapped",
    "zero-width",
    "neg-same-author",
    "neg-other",
}


def book(seed: int, chars: int) -> str:
    """Paragraphs of sentences of made-up words: no two books share a word 5-gram."""
    rng = random.Random(seed)
    syll = ["ka", "lo", "mi", "ten", "ru", "sa", "vel", "dor", "pi", "qua", "ne", "sho"]
    paras, total = [], 0
    while total < chars:
        sents = []
        for _ in range(rng.randint(2, 6)):
            n = rng.randint(5, 16)
            words = ["".join(rng.choices(syll, k=rng.randint(1, 3))) for _ in range(n)]
            sents.append(" ".join(words).capitalize() + rng.choice(".!?"))
        paras.append(" ".join(sents))
        total += len(paras[-1]) + 2
    return "\n\n".join(paras)


def texts() -> dict[str, tuple[Source, str]]:
    out: dict[str, tuple[Source, str]] = {}

    def add(key: str, role: str, text: str, of: str = "") -> None:
        src = Source(key, key, "A. Writer", role, "x/y", f"{key}.txt", "0" * 40, "0", of)
        out[key] = (src, text)

    for i in range(2):
        add(f"lib{i}", "library", book(i, 60_000))
    add("lib0-ed", "edition", rewrap(out["lib0"][1].replace("!", "."), 66), "lib0")
    add("neg0", "negative", book(10, 20_000))
    add("host0", "host", book(20, 30_000))
    return out


def joined(text: str) -> str:
    return " ".join(words_of(text))


def test_every_kind_is_built_from_its_truth_part() -> None:
    books = texts()
    lib0 = books["lib0"][1]
    assert "".join(p["text"] for p in ev.split_parts("lib0", lib0, 10_000)) == lib0
    builder = ev.Builder(books, seed=3)
    cases = builder.build(3)
    assert {c.kind for c in cases} == KINDS
    assert len(cases) == 3 * (len(KINDS) - 2) + 3 * 2 + 3
    parts = {m["id"]: m["text"] for m in builder.mothers()}
    for c in cases:
        if c.negative:
            assert not c.truth
            continue
        assert len(c.truth) >= 1 and c.truth <= parts.keys()
        source = " ".join(parts[t] for t in sorted(c.truth))
        if c.kind.startswith("excerpt"):  # verbatim, inside host text
            a, b = c.extra["s_span"]  # type: ignore[misc]
            assert c.text[a:b] in source
            assert b - a >= 0.9 * int(c.kind.split("-")[1])
            assert len(c.text) >= (b - a) + 2000
        elif c.kind in ("homoglyphs", "zero-width"):  # undone, the very text
            assert c.text.translate(UNDO) in source and c.text not in source
        elif c.kind == "rewrapped":
            assert joined(unwrap(c.text)) in joined(source) and "\n" in c.text
        elif c.kind == "shuffled":  # runs of the source's words, in another order
            have = ev.grams(words_of(c.text), 3)
            assert len(have & ev.grams(words_of(source), 3)) >= 0.7 * len(have)
            assert joined(c.text) not in joined(source) and len(sentences(c.text)) > 3
        elif c.kind == "edition":
            assert not c.source_missing and c.extra["source_share"] >= ev.SOURCE_SHARE
            assert all(t.startswith("lib0-") for t in c.truth)


def test_negatives_share_no_text_with_the_library_and_seeds_repeat() -> None:
    builder = ev.Builder(texts(), seed=4)
    cases = builder.build(2)
    library = ev.grams(words_of(" ".join(m["text"] for m in builder.mothers())))
    assert all(not ev.grams(words_of(c.text)) & library for c in cases if c.negative)
    again = ev.Builder(texts(), seed=4).build(2)
    assert [c.text for c in again] == [c.text for c in cases]
    assert [c.text for c in ev.Builder(texts(), seed=5).build(2)] != [c.text for c in cases]
