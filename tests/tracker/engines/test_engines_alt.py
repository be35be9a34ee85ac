"""The SimHash and MinHash engines against a real (embedded) Redis.

Every generic test runs for both engines in both text normalizations: ``initials`` (the
default, features over the pinyin-initial stream) and ``chars`` (raw characters).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import opencc
import pytest
from textgen import homophones, random_edits, work

from tracker.engines.base import Candidate, Engine
from tracker.engines.minhash_engine import MinHashEngine
from tracker.engines.simhash_engine import SimHashEngine
from tracker.engines.windows import span_evidence
from tracker.fingerprints.minhash import MinHasher
from tracker.fingerprints.simhash import content_windows, normalize, simhash_spans
from tracker.text.pinyin import initials

SUBJECTS = [
    "老渔夫",
    "年轻的书生",
    "山寨的首领",
    "城东的铁匠",
    "一位游方僧人",
    "县令的女儿",
    "守城的士兵",
    "卖茶的老妇",
    "远行的商人",
    "私塾先生",
    "船上的水手",
    "驿站的马夫",
]
TIMES = [
    "天还没亮",
    "正午时分",
    "黄昏的时候",
    "三更半夜",
    "第二天清早",
    "雨停之后",
    "过了几日",
    "那年冬天",
    "春分前后",
    "月上柳梢",
]
ACTIONS = [
    "沿着河岸慢慢走去",
    "推开了吱呀作响的木门",
    "把信藏进袖子里",
    "在灯下翻看旧账",
    "对着远山叹了口气",
    "悄悄数着铜钱",
    "将马拴在槐树下",
    "把酒壶递给了客人",
    "低声念着一首旧诗",
    "收拾起散落的竹简",
    "望着江面出神",
    "在墙上画了一个记号",
]
ENDINGS = [
    "心里却另有盘算",
    "谁也没有察觉",
    "仿佛什么都没发生",
    "脚步声渐渐远了",
    "炉火映红了半边脸",
    "窗外落下细雪",
    "远处传来几声犬吠",
    "茶已经凉透了",
]
PLACES = ["青石镇", "落霞渡", "白云寺", "黑松林", "临江驿", "南门集市", "柳家庄", "石桥头"]


def make_text(seed: int, sentences: int) -> str:
    """Original Chinese prose from the phrase lists above (plus a few numbers so that two
    texts never share long runs by chance)."""
    rng = random.Random(seed)
    out = []
    for _ in range(sentences):
        out.append(
            f"{rng.choice(TIMES)}，{rng.choice(PLACES)}的{rng.choice(SUBJECTS)}"
            f"{rng.choice(ACTIONS)}，{rng.choice(ENDINGS)}，"
            f"这是第{rng.randint(1, 999)}回见到{rng.choice(SUBJECTS)}。"
        )
    return "".join(out)


MOTHERS = {seq: make_text(seq, 40) for seq in (11, 12, 13, 14, 15)}  # ~1.5k characters each
UNRELATED = make_text(999, 30)


ENGINES = [SimHashEngine, MinHashEngine]
S2T = opencc.OpenCC("s2t")


@pytest.fixture(
    params=[(cls, norm) for cls in ENGINES for norm in ("initials", "chars")],
    ids=[f"{cls.name}-{norm}" for cls in ENGINES for norm in ("initials", "chars")],
)
def engine(request: pytest.FixtureRequest, redis_client: Any) -> Engine:
    cls, norm = request.param
    return cls(redis_client, "yinji", normalization=norm)


@pytest.fixture(params=ENGINES, ids=[cls.name for cls in ENGINES])
def default_engine(request: pytest.FixtureRequest, redis_client: Any) -> Engine:
    """An engine with its default options (initials normalization)."""
    return request.param(redis_client, "yinji")


def _index(engine: Engine) -> dict[int, np.ndarray]:
    prints = {seq: engine.mother_fingerprints(text) for seq, text in MOTHERS.items()}
    engine.add(list(prints.items()))
    return prints


def test_punctuation_only_has_no_fingerprints(engine: Engine) -> None:
    assert len(engine.mother_fingerprints("，。 ")) == 0


def test_exact_copy_excerpt_and_unrelated(engine: Engine) -> None:
    _index(engine)
    # an exact copy: its own mother first
    cands = engine.candidates(MOTHERS[12])
    assert cands and cands[0][0] == 12
    # a reformatted copy (punctuation and line breaks changed)
    reformatted = MOTHERS[13].replace("，", " ").replace("。", "\n")
    assert engine.candidates(reformatted)[0][0] == 13
    # an excerpt (~600 characters) pasted into unrelated text
    excerpt = MOTHERS[14][400:1000]
    suspect = UNRELATED[:700] + excerpt + UNRELATED[700:]
    cands = dict(engine.candidates(suspect))
    assert 14 in cands
    assert max(cands, key=lambda s: cands[s]) == 14
    # unrelated text: nothing, or nothing strong
    unrelated = engine.candidates(UNRELATED)
    if isinstance(engine, SimHashEngine):
        assert unrelated == []
    else:
        assert all(strength < 0.5 for _, strength in unrelated)
    assert engine.candidates("") == []


def test_strengths(engine: Engine) -> None:
    _index(engine)
    whole = dict(engine.candidates(MOTHERS[11]))[11]
    part = dict(engine.candidates(UNRELATED[:500] + MOTHERS[11][200:1400]))[11]
    if isinstance(engine, MinHashEngine):
        assert whole == pytest.approx(1.0)
        assert part >= 0.9  # the copied windows are identical in suspect and mother
    else:
        # hits: every mother fingerprint for a full copy, a few windows for an excerpt
        assert whole == len(engine.mother_fingerprints(MOTHERS[11]))
        assert 1 <= part < whole


def test_stats_count_what_was_indexed(engine: Engine) -> None:
    # The generic contract (idempotent add, remove, clear, stats keys) is in
    # tests/test_engine_contract.py; here the engine-specific counts.
    prints = _index(engine)
    stats = engine.stats()
    if isinstance(engine, SimHashEngine):
        assert stats["fingerprints"] == sum(len(p) for p in prints.values())
    else:
        assert isinstance(engine, MinHashEngine)
        assert stats["mothers"] == 5
        assert stats["signatures"] == sum(len(p) for p in prints.values()) // engine.num_perm


@pytest.mark.parametrize("norm", ["initials", "chars"])
def test_minhash_layout(redis_client: Any, norm: str) -> None:
    eng = MinHashEngine(redis_client, "yinji", num_perm=64, normalization=norm)
    fps = eng.mother_fingerprints(MOTHERS[15])
    rows = fps.reshape(-1, 64)
    assert np.array_equal(rows[0], eng.hasher.signature(MOTHERS[15]))  # row 0: whole text
    assert len(rows) > 3  # then the windows
    if norm == "initials":
        assert eng.hasher.prepare(MOTHERS[15]) == initials(MOTHERS[15])
        assert eng.shingle == 8
    else:
        assert eng.shingle == 5
    with pytest.raises(ValueError):
        eng.add([(1, fps[:-1])])


def test_minhash_chars_mode_is_the_original_engine(redis_client: Any) -> None:
    # Raw mode keeps the original parameters, so fingerprints stored by the original
    # engine stay valid: 128 permutations of 5-character shingles, LSH at threshold 0.3.
    eng = MinHashEngine(redis_client, "yinji", normalization="chars")
    assert (eng.num_perm, eng.threshold, eng.bands, eng.rows) == (128, 0.3, 37, 3)
    rows = eng.mother_fingerprints(MOTHERS[15]).reshape(-1, 128)
    original = MinHasher(128, 1, 5, scheme="affine32", normalize="alnum")
    assert np.array_equal(rows[0], original.signature(MOTHERS[15]))
    assert len(rows) == 1 + len(
        content_windows(original.prepare(MOTHERS[15]), gap=250, min_len=250, max_len=1000)
    )
    default = MinHashEngine(redis_client, "yinji")
    assert (default.normalization, default.num_perm, default.bands, default.rows) == (
        "initials",
        64,
        28,
        2,
    )


@pytest.mark.parametrize("norm", ["initials", "chars"])
def test_simhash_layout(redis_client: Any, norm: str) -> None:
    from tracker.fingerprints.simhash import simhash

    eng = SimHashEngine(redis_client, "yinji", normalization=norm)
    fps = eng.mother_fingerprints(MOTHERS[15])
    if norm == "initials":  # row 0: whole text, 8-letter shingles of its initials
        assert int(fps[0]) == simhash(initials(MOTHERS[15]), features="char8")
        assert len(fps) >= 15  # ~1.3k initials: a window every ~32 letters
    else:  # row 0: whole text, character 3-grams
        assert int(fps[0]) == simhash(MOTHERS[15])
        assert len(fps) >= 6  # ~1.5k characters: a window every ~150
        # bit-identical to the original engine: stored fingerprints stay valid
        norm_text = normalize(MOTHERS[15])
        spans = [
            (0, len(norm_text)),
            *content_windows(norm_text, gap=150, min_len=150, max_len=600),
        ]
        assert np.array_equal(fps, simhash_spans(norm_text, spans, n=3))
        assert eng.k == eng.window_k == 3


def test_unknown_normalization(redis_client: Any) -> None:
    for cls in ENGINES:
        with pytest.raises(ValueError, match="normalization"):
            cls(redis_client, "yinji", normalization="pinyin")
    with pytest.raises(ValueError, match="normalize"):
        MinHasher(16, normalize="pinyin")


# -- the point of the initials normalization ------------------------------------------------
def _converted(text: str) -> dict[str, str]:
    return {"homophones": homophones(text), "traditional": S2T.convert(text)}


def test_conversions_change_many_characters() -> None:
    # Guards the tests below: the converted copies really differ from their mother.
    text = MOTHERS[13][200:1100]
    for name, copy in _converted(text).items():
        changed = sum(a != b for a, b in zip(text, copy, strict=True)) / len(text)
        assert changed >= 0.15, name


def test_homophone_and_traditional_copies_are_candidates(default_engine: Engine) -> None:
    eng = default_engine
    _index(eng)
    text = MOTHERS[13][200:1100]
    for name, copy in _converted(text).items():
        cands = eng.candidates(copy)
        assert cands and cands[0][0] == 13, name
        # excerpts of 300 characters inside unrelated text as well
        suspect = UNRELATED[:600] + _converted(text[:300])[name] + UNRELATED[600:]
        cands = eng.candidates(suspect)
        assert cands and cands[0][0] == 13, name


def test_initials_ignore_punctuation_and_latin(default_engine: Engine) -> None:
    # Pirate copies strip punctuation and insert Latin watermarks: the initial stream,
    # hence every fingerprint, stays the same.
    text = MOTHERS[12]
    pirated = text.replace("，", "").replace("。", " www.biquge.example 2026 ")
    assert np.array_equal(
        default_engine.mother_fingerprints(pirated), default_engine.mother_fingerprints(text)
    )


def test_raw_mode_misses_converted_copies(redis_client: Any) -> None:
    # Why initials are the default: in raw-character mode the traditional copy of a whole
    # page is no candidate for SimHash, and a much weaker one (if any) for MinHash.
    text = MOTHERS[13][200:1100]
    copy = S2T.convert(text)
    strengths = {}
    for norm in ("initials", "chars"):
        redis_client.flushall()
        sim = SimHashEngine(redis_client, "yinji", normalization=norm)
        _index(sim)
        found = dict(sim.candidates(copy))
        if norm == "chars":
            assert 13 not in found
        else:
            assert 13 in found
        mh = MinHashEngine(redis_client, "yinji", normalization=norm)
        _index(mh)
        strengths[norm] = dict(mh.candidates(copy)).get(13, 0.0)
    assert strengths["initials"] >= 0.9 > 0.3 > strengths["chars"]


def test_evidence_lies_in_the_copy(default_engine: Engine) -> None:
    # textgen's works: varied enough that unrelated windows share few shingles (the phrase
    # lists above are so small that every window of any two texts overlaps by ~20 %).
    eng = default_engine
    works = {seq: work(100 + seq, 60) for seq in range(6)}
    eng.add([(seq, eng.mother_fingerprints(text)) for seq, text in works.items()])
    host = work(999, 40)
    excerpt = works[3][800:1400]
    suspect = host[:700] + homophones(excerpt) + host[700:]
    lo = len(initials(host[:700]))
    hi = lo + len(initials(excerpt))
    cands = eng.candidates_with_evidence(suspect)
    assert cands and all(isinstance(c, Candidate) for c in cands)
    top = cands[0]
    assert top.seq == 3 and top.evidence is not None and top.common is not None
    assert [(c.seq, c.strength) for c in cands] == eng.candidates(suspect)
    ev = top.evidence
    assert np.all(np.diff(ev) > 0)  # sorted, distinct
    # Evidence windows [p, p + window) cover the copy; outside it only windows that
    # straddle one of its edges (at most one longest window on each side).
    covered = np.zeros(len(initials(suspect)) + eng.window, dtype=bool)
    for p in ev:
        covered[p : p + eng.window] = True
    assert covered[lo:hi].mean() >= 0.9
    assert covered[:lo].sum() <= eng.window_max and covered[hi:].sum() <= eng.window_max


def test_no_evidence_in_raw_mode(redis_client: Any) -> None:
    for cls in ENGINES:
        redis_client.flushall()
        eng = cls(redis_client, "yinji", normalization="chars")
        _index(eng)
        cands = eng.candidates_with_evidence(MOTHERS[11])
        assert cands[0].seq == 11 and cands[0].evidence is None and cands[0].common is None


def test_span_evidence() -> None:
    ev = span_evidence([(20, 25), (0, 10)], 4)
    assert ev.tolist() == [0, 1, 2, 3, 4, 5, 6, 20, 21]  # windows of 4 cover both spans
    assert span_evidence([(5, 7)], 4).tolist() == [5]  # shorter than a window: its start
    assert span_evidence([], 4).size == 0


# -- through the shared verifier ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["simhash", "minhash"])
def test_library_end_to_end(name: str, tmp_path: Path, redis_client: Any) -> None:
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings
    from tracker.store import open_store

    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    lib = Library(settings, open_store(settings), redis_client)
    try:
        mothers = [
            Document(id=f"work-{i}", title=f"作品{i}", text=work(100 + i, 60)) for i in range(6)
        ]
        assert lib.ingest(mothers, engine=name).ingested == 6
        src = mothers[2].text
        host = work(999, 30)
        cases = {
            "whole": src,
            "excerpt": host[:400] + src[800:1100] + host[400:],
            "homophones": homophones(src[:600]),
            "traditional": S2T.convert(src[:600]),
            "latin-watermark": " www.biquge.example ".join(src[:600].split("。")),
        }
        if name == "minhash":
            # SimHash is a near-duplicate detector: random edits and watermarks in Han
            # characters change every window they touch by ~10 bits, beyond k.
            cases["edits"] = random_edits(src[:600], 0.05, seed=1)
            cases["watermark"] = "笔趣阁www.biquge.example首发".join(src[:600].split("。"))
        for case, text in cases.items():
            result = lib.check_text(text, engine=name)
            assert [m.mother_id for m in result.matches] == ["work-2"], case
            assert result.matches[0].passages and result.matches[0].engine == name, case
        assert lib.check_text(work(12345, 60), engine=name).matches == []
    finally:
        lib.store.close()


def test_simhash_window_bucket_bits(redis_client: Any) -> None:
    # Coarser window buckets (fewer Redis keys) change no answer: the query checks the
    # full distance of every bucket member.
    texts = {seq: work(100 + seq, 60) for seq in range(6)}
    host = work(999, 40)
    suspects = [host[:500] + homophones(texts[s][300:700]) + host[500:] for s in range(6)]
    answers, keys = [], []
    for bits in (None, 8):
        redis_client.flushall()
        eng = SimHashEngine(redis_client, "yinji", window_bucket_bits=bits)
        eng.add([(seq, eng.mother_fingerprints(t)) for seq, t in texts.items()])
        answers.append([eng.candidates(s) for s in suspects])
        keys.append(eng.stats()["keys"])
    assert answers[0] == answers[1]
    assert [a[0][0] for a in answers[0]] == list(range(6))
    assert keys[1] < keys[0] / 2
    with pytest.raises(ValueError, match="bucket_bits"):
        SimHashEngine(redis_client, "yinji", window_bucket_bits=0)
