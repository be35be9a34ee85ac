"""Issue #39: every library work a passage copies is reported, each with its own
passages; a reprint that shares only two wire sentences with its article is found, a
text sharing only formula sentences (or one sentence) is not."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.matching.align import AlignParams, align
from tracker.plumbing.config import Settings


def prose(seed: int, sentences: int) -> str:
    """Sentences of 12-40 characters drawn at random from 4,000 CJK ideographs."""
    rng = random.Random(seed)
    return "".join(
        "".join(chr(rng.randrange(0x4E00, 0x4E00 + 4000)) for _ in range(rng.randint(12, 40)))
        + "。"
        for _ in range(sentences)
    )


def edited(text: str, seed: int, every: int) -> str:
    """``text`` with one character in ``every`` replaced."""
    rng = random.Random(seed)
    chars = list(text)
    for i in range(rng.randrange(every), len(chars), every):
        if chars[i] != "。":
            chars[i] = chr(rng.randrange(0x6000, 0x7000))
    return "".join(chars)


def between(own: str, *sentences: str, at: tuple[int, ...]) -> str:
    """``own`` text with each of ``sentences`` put in after its sentence ``at[i]``."""
    ends = [i + 1 for i, ch in enumerate(own) if ch == "。"]
    out, last = "", 0
    for sentence, n in zip(sentences, at, strict=True):
        out += own[last : ends[n]] + sentence
        last = ends[n]
    return out + own[last:]


# A wire report: its opening and a later sentence hold names, dates and numbers.
W1 = (
    "新浪体育讯北京时间4月2日消息，据美国媒体报道，"
    "火箭队主教练范甘迪在赛后接受采访时表示球队仍有机会。"
)
W2 = "范甘迪说，姚明本场比赛拿下28分14个篮板，是球队取胜的关键，他对这个结果感到满意。"
REPORT = W1 + prose(1, 6) + W2 + prose(2, 10)
# Formula sentences of regulations (common in ordinary text: the reference table).
F1 = "违反本条例规定，由县级以上人民政府有关主管部门责令改正，给予警告。"
F2 = "本条例自发布之日起施行，国务院有关部门可以根据本条例制定实施办法。"
RULES = prose(7, 5) + F1 + prose(8, 6) + F2 + prose(9, 5)

ARTICLE = prose(20, 70)
SHARED = ARTICLE[600:1433]  # 833 characters
NEAR = edited(ARTICLE[:1500], 21, 60) + ARTICLE[1500:] + prose(22, 4)  # near-identical
HOLDER = prose(23, 10) + SHARED + prose(24, 20)  # holds only the shared passage


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    folder = tmp_path_factory.mktemp("reprints") / "data"
    with Library.open(Settings(data_dir=folder)) as lib:
        lib.ingest(
            [
                Document(id="report", title="快讯", text=REPORT),
                Document(id="rules", title="条例", text=RULES),
                Document(id="article", title="报道", text=ARTICLE),
                Document(id="near", title="转载", text=NEAR),
                Document(id="holder", title="摘编", text=HOLDER),
                Document(id="other", title="别的", text=prose(11, 80)),
            ]
        )
        yield lib


OWN = prose(3, 20)


def test_a_reprint_sharing_two_wire_sentences_is_found(library: Library) -> None:
    text = between(OWN, W1, W2, at=(4, 11))
    (match,) = library.check_text(text).matches
    assert match.mother_id == "report"
    spans = [(p.suspect_start, p.suspect_end) for p in match.passages]
    assert len(spans) == 2
    for (a, b), sentence in zip(spans, (W1, W2), strict=True):
        at = text.index(sentence)
        assert at <= a and b <= at + len(sentence) and b - a >= len(sentence) - 12
    # The rule decides it: off, the two sentences are not reported.
    assert align(text, REPORT, AlignParams(reprint_runs=0)).passages == []


def test_formula_sentences_or_one_sentence_are_not_a_reprint(library: Library) -> None:
    assert library.check_text(between(OWN, F1, F2, at=(4, 11))).matches == []
    assert library.check_text(between(OWN, W1, at=(4,))).matches == []
    # The two sentences in the other order are not the report read on.
    assert library.check_text(between(OWN, W2, W1, at=(4, 11))).matches == []
    # Nor two sentences far apart in the suspect (stock sentences of two long works).
    far = between(prose(4, 80), W1, W2, at=(2, 70))
    assert library.check_text(far).matches == []


def test_every_work_holding_the_copied_passage_is_reported(library: Library) -> None:
    host = prose(30, 40)
    text = host[:500] + SHARED + host[500:]
    matches = {m.mother_id: m for m in library.check_text(text).matches}
    assert set(matches) == {"article", "near", "holder"}
    for mother_id, mother in (("article", ARTICLE), ("near", NEAR), ("holder", HOLDER)):
        (p,) = matches[mother_id].passages  # each with its own passage, in its own text
        assert p.suspect_start <= 502 and p.suspect_end >= 500 + len(SHARED) - 2
        at = mother.find(SHARED[:40]) if mother_id != "near" else 600
        assert abs(p.mother_start - at) <= 2
        assert p.mother_end - p.mother_start >= len(SHARED) - 4


def _han(rng: random.Random, n: int) -> str:
    return "".join(chr(rng.randrange(0x4E00, 0x4E00 + 4000)) for _ in range(n))


def _reworded(text: str, seed: int, every: int, width: int) -> str:
    """``text`` written again from the same model: ``width`` other characters in every
    ``every`` (a model law re-worded city by city)."""
    rng = random.Random(seed)
    parts = [text[i : i + every] for i in range(0, len(text), every)]
    return "".join(p[: every - width] + _han(rng, width) if len(p) == every else p for p in parts)


@pytest.mark.parametrize("seed", range(3))
def test_a_long_reworded_model_text_is_not_a_copy_an_edited_copy_is(seed: int) -> None:
    rng = random.Random(seed)
    model = _han(rng, 700)
    mother = _han(rng, 300) + model + _han(rng, 300)
    reworded = _han(rng, 300) + _reworded(model, seed, 20, 5) + _han(rng, 300)
    # Long enough to count whatever it read like before issue #39 (max_required) ...
    before = align(reworded, mother, AlignParams(long_fine=0))
    assert before.suspect_copied >= AlignParams().max_required
    assert align(reworded, mother).passages == []  # ... now it must read alike
    edited = _han(rng, 300) + edited_text(model, seed) + _han(rng, 300)
    (p,) = align(edited, mother).passages
    assert p.suspect_end - p.suspect_start >= 650


def edited_text(text: str, seed: int) -> str:
    """``text`` with 6 % of its characters replaced at random."""
    rng = random.Random(seed)
    return "".join(_han(rng, 1) if rng.random() < 0.06 else c for c in text)


def test_chain_precheck_is_exact_on_the_units_that_pass_the_cheap_tests() -> None:
    """``reprint_sentences`` reads (difflib, the reference table) only when the units that
    pass its cheap tests hold a possible chain (``_could_chain``); that test must say
    yes exactly when some sequence of them is one (here: every subsequence tried), so
    that skipping the readings never changes what the rule returns."""
    from itertools import combinations, pairwise

    from tracker.matching.align import _Cluster, _could_chain, _follows

    rng = random.Random(39)
    for trial in range(400):
        p = AlignParams(reprint_runs=rng.choice([1, 2, 3]), reprint_window=rng.choice([20, 80]))
        units = []
        for _ in range(rng.randint(0, 7)):
            sa, ma = rng.randrange(0, 300), rng.randrange(0, 300)
            size = rng.randint(20, 60)
            units.append(_Cluster.start((sa, sa + size, ma, ma + rng.randint(20, 60))))
        units.sort(key=lambda c: (c.s_start, c.s_start - c.s_end))

        def chain(seq: tuple[_Cluster, ...], p: AlignParams = p) -> bool:
            return (
                len(seq) >= p.reprint_runs
                and sum(c.s_end - c.s_start for c in seq) >= p.min_copied
                and all(b.s_end <= c.s_start and _follows(b, c, p) for b, c in pairwise(seq))
            )

        want = any(chain(seq) for r in range(1, len(units) + 1) for seq in combinations(units, r))
        assert _could_chain(units, p) == want, trial
