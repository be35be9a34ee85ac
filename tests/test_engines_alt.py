"""The SimHash and MinHash engines against a real (embedded) Redis."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from tracker.engines.base import Engine
from tracker.engines.minhash_engine import MinHashEngine
from tracker.engines.simhash_engine import SimHashEngine

SUBJECTS = ["老渔夫", "年轻的书生", "山寨的首领", "城东的铁匠", "一位游方僧人", "县令的女儿",
            "守城的士兵", "卖茶的老妇", "远行的商人", "私塾先生", "船上的水手", "驿站的马夫"]
TIMES = ["天还没亮", "正午时分", "黄昏的时候", "三更半夜", "第二天清早", "雨停之后",
         "过了几日", "那年冬天", "春分前后", "月上柳梢"]
ACTIONS = ["沿着河岸慢慢走去", "推开了吱呀作响的木门", "把信藏进袖子里", "在灯下翻看旧账",
           "对着远山叹了口气", "悄悄数着铜钱", "将马拴在槐树下", "把酒壶递给了客人",
           "低声念着一首旧诗", "收拾起散落的竹简", "望着江面出神", "在墙上画了一个记号"]
ENDINGS = ["心里却另有盘算", "谁也没有察觉", "仿佛什么都没发生", "脚步声渐渐远了",
           "炉火映红了半边脸", "窗外落下细雪", "远处传来几声犬吠", "茶已经凉透了"]
PLACES = ["青石镇", "落霞渡", "白云寺", "黑松林", "临江驿", "南门集市", "柳家庄", "石桥头"]


def make_text(seed: int, sentences: int) -> str:
    """Original Chinese prose from the phrase lists above (plus a few numbers so that two
    texts never share long runs by chance)."""
    rng = random.Random(seed)
    out = []
    for _ in range(sentences):
        out.append(f"{rng.choice(TIMES)}，{rng.choice(PLACES)}的{rng.choice(SUBJECTS)}"
                   f"{rng.choice(ACTIONS)}，{rng.choice(ENDINGS)}，"
                   f"这是第{rng.randint(1, 999)}回见到{rng.choice(SUBJECTS)}。")
    return "".join(out)


MOTHERS = {seq: make_text(seq, 40) for seq in (11, 12, 13, 14, 15)}  # ~1.5k characters each
UNRELATED = make_text(999, 30)


@pytest.fixture(params=[SimHashEngine, MinHashEngine], ids=["simhash", "minhash"])
def engine(request: pytest.FixtureRequest, redis_client: Any) -> Engine:
    return request.param(redis_client, "yinji")


def _index(engine: Engine) -> dict[int, np.ndarray]:
    prints = {seq: engine.mother_fingerprints(text) for seq, text in MOTHERS.items()}
    engine.add(list(prints.items()))
    return prints


def test_fingerprints_round_trip(engine: Engine) -> None:
    fps = engine.mother_fingerprints(MOTHERS[11])
    assert fps.dtype == engine.dtype and fps.ndim == 1 and len(fps) > 1
    assert np.array_equal(engine.from_bytes(fps.tobytes()), fps)
    assert len(engine.mother_fingerprints("")) == 0
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


def test_limit_and_order(engine: Engine) -> None:
    _index(engine)
    mixed = MOTHERS[11] + MOTHERS[12][:800] + MOTHERS[13][:400]
    cands = engine.candidates(mixed, limit=20)
    seqs = [s for s, _ in cands]
    assert seqs[0] == 11 and 12 in seqs
    strengths = [x for _, x in cands]
    assert strengths == sorted(strengths, reverse=True)
    assert len(engine.candidates(mixed, limit=1)) == 1


def test_add_idempotent_remove_clear_stats(engine: Engine, redis_client: Any) -> None:
    prints = _index(engine)
    keys_before = sorted(redis_client.scan_iter(match="*"))
    stats = engine.stats()
    engine.add([(12, prints[12]), (13, prints[13])])
    assert sorted(redis_client.scan_iter(match="*")) == keys_before
    assert engine.stats() == stats
    assert all(k.decode().startswith(f"yinji:{engine.name}:") for k in keys_before)
    if isinstance(engine, SimHashEngine):
        assert stats["fingerprints"] == sum(len(p) for p in prints.values())
    else:
        assert stats["mothers"] == 5
        assert stats["signatures"] == sum(len(p) for p in prints.values()) // 128
    assert stats["keys"] == len(keys_before)

    engine.remove([(12, prints[12])])
    engine.remove([(12, prints[12])])  # missing postings are ignored
    assert 12 not in dict(engine.candidates(MOTHERS[12]))
    assert engine.candidates(MOTHERS[13])[0][0] == 13

    redis_client.set("yinji:daguan:keep", b"1")
    other = type(engine)(redis_client, "other")
    other.add([(1, prints[11])])
    engine.clear()
    assert engine.candidates(MOTHERS[13]) == []
    assert redis_client.get("yinji:daguan:keep") == b"1"
    assert other.candidates(MOTHERS[11])[0][0] == 1
    remaining = {k.decode().split(":")[0] for k in redis_client.scan_iter(match="*")}
    assert remaining == {"other", "yinji"}
    assert not list(redis_client.scan_iter(match=f"yinji:{engine.name}:*"))


def test_minhash_layout(redis_client: Any) -> None:
    eng = MinHashEngine(redis_client, "yinji", num_perm=64)
    fps = eng.mother_fingerprints(MOTHERS[15])
    rows = fps.reshape(-1, 64)
    assert np.array_equal(rows[0], eng.hasher.signature(MOTHERS[15]))  # row 0: whole text
    assert len(rows) > 3  # then ~500-character windows
    with pytest.raises(ValueError):
        eng.add([(1, fps[:-1])])


def test_simhash_layout(redis_client: Any) -> None:
    from tracker.simhash import simhash

    eng = SimHashEngine(redis_client, "yinji")
    fps = eng.mother_fingerprints(MOTHERS[15])
    assert int(fps[0]) == simhash(MOTHERS[15])  # row 0: whole text
    assert len(fps) >= 6  # ~1.5k characters: a window every ~150
