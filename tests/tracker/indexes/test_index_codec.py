"""The value codec is written twice, once for the Lua scripts (``lua/codec.lua``) and once
for Python (``tracker.indexes.codec``): both must read and write the same bytes. Checked
here on the values of a real index (fingerprints of the example library, fields of one,
two, three and more seqs and stop markers) and on seqs of every decimal length, by
running ``codec.lua`` itself in Redis."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from repo import REPO

from tracker.engines.daguan import DaguanEngine
from tracker.indexes.codec import (
    FORMAT,
    decode_value,
    encode_value,
    is_stop,
    merge_value,
    new_value,
    parse_values,
    stop_sample,
)
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.scripts import lua

# codec.lua's decode and encode, applied to every value given: for each, the decoded seqs
# (a table of 4-byte strings, or false for a stop marker) and the re-encoded value.
_PROBE = (
    lua("codec")
    + """
local out = {}
for i = 1, #ARGV - 1 do
  local t = decode(ARGV[i])
  if t == nil then
    out[#out + 1] = false
    out[#out + 1] = false
  else
    out[#out + 1] = table.concat(t)
    out[#out + 1] = encode(t)
  end
end
return out
"""
)


def _lua_codec(redis: Any, values: list[bytes], fmt: int) -> list[tuple[bytes | None, ...]]:
    reply = redis.eval(_PROBE, 0, *values, fmt)
    return [(reply[i] or None, reply[i + 1] or None) for i in range(0, len(reply), 2)]


def _real_values(redis: Any) -> list[bytes]:
    """Every stored value of an index of the example library, each text added as up to
    seven mothers (seqs of different decimal lengths) holding nested parts of it, so
    fields hold 1, 2, 3+ seqs and, past ``stop_df`` 4, stop markers."""
    engine = DaguanEngine(redis, "t:codec-fp")
    texts = [
        json.loads(line)["text"]
        for line in (REPO / "examples" / "library.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    idx = RedisInvertedIndex(redis, "t:codec", bucket_bits=6, stop_df=4)
    seqs = [7, 42, 999, 10_000, 123_456, 123_456_789, 4_294_967_295]
    items = []
    for i, text in enumerate(texts):
        fps = engine.mother_fingerprints(text)
        copies = (7, 3, 2)[i % 3]  # nested prefixes: the first fps held by every copy
        for k, seq in enumerate(seqs[:copies]):
            items.append((seq - i, fps[: fps.size * (copies - k) // copies]))
    idx.add(items)
    values = [v for key in redis.scan_iter(match="t:codec:b*") for v in redis.hvals(key)]
    assert len(values) > 100
    return values


def test_lua_and_python_codecs_agree_on_a_real_index(redis_client: Any) -> None:
    values = _real_values(redis_client)
    kinds = {"stop" if is_stop(v) else min(len(decode_value(v, FORMAT) or []), 3) for v in values}
    assert kinds == {"stop", 1, 2, 3}  # every kind of value is there
    for value, (seqs, again) in zip(values, _lua_codec(redis_client, values, FORMAT), strict=True):
        mine = decode_value(value, FORMAT)
        if mine is None:  # a stop marker, for both, with the first 4 holders
            assert is_stop(value) and seqs is None and again is None
            assert len(stop_sample(value)) == 4
            continue
        assert b"".join(mine) == seqs
        assert again == encode_value(mine, FORMAT) == value
    # parse_values (the lookup path) reads the same seqs.
    fp_index, got, stopped = parse_values(values, FORMAT)
    assert stopped == sum(1 for v in values if is_stop(v))
    want = [int.from_bytes(s, "little") for v in values for s in (decode_value(v, FORMAT) or [])]
    assert sorted(got.tolist()) == sorted(want)
    assert fp_index.size == len(want)


def test_codecs_agree_on_every_shape_and_both_formats(redis_client: Any) -> None:
    rng = np.random.default_rng(4)
    seqs = [1, 9, 10, 99, 100, 65_536, 999_999, 10**8, 2**32 - 1, 256, 2**24]
    seqs += [int(s) for s in rng.integers(1, 2**32 - 1, 20)]
    packed = [s.to_bytes(4, "little") for s in seqs]
    for fmt in (1, 2):
        lists = [packed[i : i + n] for n in (1, 2, 3, 5, 16) for i in range(0, len(packed) - n)]
        values = [encode_value(t, fmt) for t in lists]
        if fmt == 2:  # singles as digits, pairs as \x01 + 8 bytes
            assert values[0] == b"1" and values[1] == b"9"
            assert any(len(v) == 9 and v[0] == 1 for v in values)
        for t, value, (got, again) in zip(
            lists, values, _lua_codec(redis_client, values, fmt), strict=True
        ):
            assert got == b"".join(t)
            assert again == value


def test_parse_many_reads_every_kind_of_value_as_parse_values() -> None:
    """The vectorized reader of whole buckets (snapshots) against the per-value one, on
    values of every kind and decimal length, in both formats."""
    from tracker.indexes.codec import parse_many

    rng = np.random.default_rng(4)
    for fmt in (1, 2):
        values: list[bytes] = []
        for _ in range(400):
            k = int(rng.integers(0, 6))
            seqs = [int(x).to_bytes(4, "little") for x in rng.integers(1, 2**32 - 1, 3 + k)]
            digits = int(rng.integers(1, 11))
            one = [
                int(rng.integers(10 ** (digits - 1), min(10**digits, 2**32))).to_bytes(4, "little")
            ]
            values += [
                encode_value(one, fmt),
                encode_value(seqs[:2], fmt),
                encode_value(seqs, fmt),
                b"\x00" + b"".join(seqs[: k % 5]),  # stop markers, with 0..4 holders
            ]
        order = rng.permutation(len(values))
        values = [values[i] for i in order]
        mask = np.zeros(len(values), bool)
        want = parse_values(values, fmt, mask)
        at, seqs_got, stop = parse_many(values, fmt)
        assert np.array_equal(at, want[0]) and np.array_equal(seqs_got, want[1])
        assert np.array_equal(stop, mask) and int(stop.sum()) == want[2]
        assert stop.sum() == 400 and (at.size == want[0].size > 1600)


# codec.lua's merge of ARGV[i] (a stored value, "" for a new field) with the seqs of
# ARGV[i + 1] (packed 4-byte seqs), for each pair: the new value (false: unchanged) and
# the postings added.
_MERGE = (
    lua("codec")
    + """
local out = {}
for i = 1, #ARGV - 2, 3 do
  local t = {}
  for j = 1, #ARGV[i + 1], 4 do t[#t + 1] = string.sub(ARGV[i + 1], j, j + 3) end
  local w, added = merge(ARGV[i], t, tonumber(ARGV[i + 2]))
  out[#out + 1] = w or false
  out[#out + 1] = added
end
return out
"""
)


def test_python_merge_is_the_scripts(redis_client: Any) -> None:
    """``codec.merge_value`` (and ``new_value``, what whole-bucket appends write for a
    new field) against ``merge`` of codec.lua: new fields, repeats, fields that pass
    ``stop_df``, stop markers, values of one, two and many seqs, both formats."""
    rng = np.random.default_rng(8)
    pool = [int(s).to_bytes(4, "little") for s in [1, 12, 13, 127, 70_000, 2**32 - 1]]
    pool += [int(s).to_bytes(4, "little") for s in rng.integers(1, 2**32 - 1, 10)]
    for fmt in (1, 2):
        cases = []
        for n_old in (0, 1, 2, 3, 5):
            for n_new in (1, 2, 4, 7):
                for stop_df in (1, 3, 16):
                    old = [pool[int(i)] for i in rng.choice(len(pool), n_old, replace=False)]
                    new = [pool[int(i)] for i in rng.integers(0, len(pool), n_new)]
                    value = encode_value(old, fmt) if old and len(old) <= stop_df else b""
                    cases.append((value, new, stop_df))
        cases.append((encode_value(None, fmt) + pool[0], pool[1:3], 4))  # a stop marker
        args = [x for v, new, df in cases for x in (v, b"".join(new), df)]
        reply = redis_client.eval(_MERGE, 0, *args, fmt)
        for k, (value, new, stop_df) in enumerate(cases):
            got = merge_value(value, new, stop_df, fmt)
            assert got == (reply[2 * k] or None, reply[2 * k + 1]), (value, new, stop_df)
            if not value:
                assert new_value(new, stop_df, fmt) == got
