"""The contract of ``tracker.engines.base.Engine``, run over every engine on a real
(embedded) Redis: what ``tracker.library`` and ``tracker.matching.matcher`` rely on, whichever
engine a library uses. Engine-specific behaviour (strength scales, layouts, options) is
tested in tests/test_engines_alt.py and tests/test_library.py."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from textgen import work

from tracker.engines import ENGINES, make_engine
from tracker.engines.base import Candidate, Engine
from tracker.text.pinyin import initials

# Every registered engine with its defaults, plus the raw-character modes of the two
# windowed engines (they give no evidence: the contract allows None there).
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    *((name, {}) for name in ENGINES),
    ("simhash", {"normalization": "chars"}),
    ("minhash", {"normalization": "chars"}),
]
IDS = [name + ("-" + opts["normalization"] if opts else "") for name, opts in CONFIGS]

WORKS = {seq: work(100 + seq, 60) for seq in range(1, 7)}  # ~2,000 characters each
HOST = work(999, 40)


@pytest.fixture(params=CONFIGS, ids=IDS)
def engine(request: pytest.FixtureRequest, redis_client: Any) -> Engine:
    name, options = request.param
    return make_engine(name, redis_client, "yinji", **options)


def _add(engine: Engine, seqs: list[int]) -> dict[int, np.ndarray]:
    prints = {seq: engine.mother_fingerprints(WORKS[seq]) for seq in seqs}
    engine.add(list(prints.items()))
    return prints


def _keyspace(redis: Any, pattern: str) -> dict[bytes, Any]:
    """Every key matching ``pattern`` with its full value (whatever its type)."""
    out: dict[bytes, Any] = {}
    for key in redis.scan_iter(match=pattern, count=1000):
        if key.endswith(b":version"):
            continue  # the inverted index's write counter: writes tried, not contents
        kind = redis.type(key)
        if kind == b"hash":
            out[key] = redis.hgetall(key)
        elif kind == b"set":
            out[key] = redis.smembers(key)
        elif kind == b"string":
            out[key] = redis.get(key)
        else:  # no engine writes other types today; compare them by dump anyway
            out[key] = (kind, redis.dump(key))
    return out


def _tombstones(space: dict[bytes, Any]) -> tuple[dict[bytes, Any], set[bytes]]:
    """``space`` without the edition registry's tombstones (``x{seq}`` in ``ed:groups``,
    left on purpose by a removed group so that a concurrent writer's join meets it:
    ``tracker.indexes.editions``), and those tombstones."""
    rest = dict(space)
    dead: set[bytes] = set()
    for key, value in space.items():
        if key.endswith(b":ed:groups"):
            dead = {f for f in value if f.startswith(b"x")}
            kept = {f: v for f, v in value.items() if f not in dead}
            if kept:
                rest[key] = kept
            else:
                del rest[key]
    return rest, dead


def _excerpt_suspect(seq: int) -> tuple[str, int, int]:
    """About 700 characters of a work pasted into unrelated text, with the copy's span
    in the suspect's initials."""
    excerpt = WORKS[seq][600:1300]
    suspect = HOST[:500] + excerpt + HOST[500:]
    lo = len(initials(HOST[:500]))
    return suspect, lo, lo + len(initials(excerpt))


def test_window_is_positive(engine: Engine) -> None:
    assert isinstance(engine.window, int) and engine.window > 0


def test_fingerprints_round_trip_through_bytes(engine: Engine) -> None:
    fps = engine.mother_fingerprints(WORKS[1])
    assert fps.dtype == engine.dtype and fps.ndim == 1 and fps.size > 0
    assert np.array_equal(engine.from_bytes(fps.tobytes()), fps)
    assert engine.mother_fingerprints("").size == 0


def test_copied_mother_comes_first(engine: Engine) -> None:
    _add(engine, list(WORKS))
    for seq in (2, 5):
        cands = engine.candidates(WORKS[seq])
        assert cands and cands[0][0] == seq
    suspect, _, _ = _excerpt_suspect(4)
    cands = engine.candidates(suspect)
    assert cands and cands[0][0] == 4


def test_candidates_derive_from_candidates_with_evidence(engine: Engine) -> None:
    _add(engine, list(WORKS))
    suspect = WORKS[1][:900] + HOST[:400] + WORKS[3][:900]
    full = engine.candidates_with_evidence(suspect)
    assert full and all(isinstance(c, Candidate) for c in full)
    assert engine.candidates(suspect) == [(c.seq, c.strength) for c in full]
    strengths = [c.strength for c in full]
    assert strengths == sorted(strengths, reverse=True)
    assert len({c.seq for c in full}) == len(full)


def test_evidence_positions_are_sorted_and_inside_the_suspect(engine: Engine) -> None:
    _add(engine, list(WORKS))
    suspect, lo, hi = _excerpt_suspect(4)
    n = len(initials(suspect))
    cands = engine.candidates_with_evidence(suspect)
    assert cands
    for c in cands:
        for positions in (c.evidence, c.common):
            if positions is None:
                continue
            assert positions.ndim == 1 and positions.dtype.kind in "iu"
            assert np.all(np.diff(positions) > 0)  # sorted, distinct
            if positions.size:
                assert positions[0] >= 0 and positions[-1] + engine.window <= n
    top = cands[0]
    if engine.name == "daguan" or getattr(engine, "normalization", "") == "initials":
        # Engines working on initials say where the hits are: inside the copy, give or
        # take the windows that straddle its edges.
        assert top.evidence is not None and top.evidence.size > 0
        inside = (top.evidence + engine.window > lo) & (top.evidence < hi)
        assert inside.mean() >= 0.9


def test_limit_is_honoured(engine: Engine) -> None:
    _add(engine, list(WORKS))
    suspect = WORKS[1] + WORKS[2][:1200] + WORKS[3][:1200]
    everything = engine.candidates_with_evidence(suspect, limit=20)
    assert len(everything) >= 2
    for limit in (1, 2):
        got = engine.candidates_with_evidence(suspect, limit=limit)
        assert [(c.seq, c.strength) for c in got] == [
            (c.seq, c.strength) for c in everything[:limit]
        ]
        assert len(engine.candidates(suspect, limit=limit)) == limit


def test_empty_text_gives_no_candidates(engine: Engine) -> None:
    _add(engine, list(WORKS))
    for text in ("", "，。 \n", "www.example.com 2026"):
        assert engine.candidates(text) == []
        assert engine.candidates_with_evidence(text) == []


def test_add_is_idempotent_and_remove_undoes_add(engine: Engine, redis_client: Any) -> None:
    prints = _add(engine, [1, 2, 3])
    pattern = f"{engine.base}:*"
    before = _keyspace(redis_client, pattern)
    assert before
    engine.add([(2, prints[2]), (3, prints[3])])  # a redelivered ingest
    assert _keyspace(redis_client, pattern) == before

    more = _add(engine, [4, 5])
    assert engine.candidates(WORKS[5])[0][0] == 5
    engine.remove(list(more.items()))
    # Key for key, byte for byte, but for the removed groups' tombstones.
    index = getattr(engine, "index", None)  # only an index with editions registers groups
    tombstones = {b"x4", b"x5"} if getattr(index, "editions", None) is not None else set()
    assert _tombstones(_keyspace(redis_client, pattern)) == (before, tombstones)
    engine.remove(list(more.items()))  # missing postings are ignored
    assert _tombstones(_keyspace(redis_client, pattern)) == (before, tombstones)
    assert 5 not in dict(engine.candidates(WORKS[5]))
    assert engine.candidates(WORKS[2])[0][0] == 2


def test_stats_name_engine_keys_and_fingerprints(engine: Engine, redis_client: Any) -> None:
    empty = engine.stats()
    assert empty["engine"] == engine.name
    assert empty["keys"] == 0 and empty["fingerprints"] == 0
    _add(engine, list(WORKS))
    stats = engine.stats()
    assert stats["engine"] == engine.name
    assert stats["keys"] == len(list(redis_client.scan_iter(match=f"{engine.base}:*")))
    assert stats["fingerprints"] > 0
    json.dumps(stats)  # `yinji index stats` prints it as JSON


def test_clear_empties_only_this_engine(engine: Engine, redis_client: Any) -> None:
    _add(engine, list(WORKS))
    name, options = engine.name, {}
    if hasattr(engine, "normalization"):
        options = {"normalization": engine.normalization}
    other = make_engine(name, redis_client, "other", **options)
    other.add([(1, other.mother_fingerprints(WORKS[1]))])
    redis_client.set(f"{engine.base}-not-mine", b"1")
    engine.clear()
    assert not list(redis_client.scan_iter(match=f"{engine.base}:*"))
    assert engine.candidates(WORKS[2]) == []
    assert engine.stats()["keys"] == 0
    assert redis_client.get(f"{engine.base}-not-mine") == b"1"
    assert other.candidates(WORKS[1])[0][0] == 1
