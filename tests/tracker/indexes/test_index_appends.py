"""Whole-bucket appends (``tracker.indexes.appends``): an add that appends new fields to
buckets' serialized ziplists and RESTOREs them leaves the same index as the script alone
(``lua/add_many.lua``): the same fields and values in every bucket, byte for byte where
no field had to take the script, the same counts and lookups; a bucket changed by another
writer between its DUMP and its RESTORE is not overwritten; servers whose form is not
known are left to the script. The server checks every payload deeply
(``sanitize-dump-payload yes``), so a malformed ziplist fails the RESTORE."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from indexkit import same_lookup, unmix

from tracker.indexes import appends, ziplist
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import IDENTITY_BITS, field_width

# Seqs of every integer encoding a ziplist has (immediate, 8, 16, 24, 32 and 64 bits).
SEQ_RANGES = [(1, 12), (13, 127), (128, 32767), (32768, 8388607), (8388608, 2**31 - 1)]
BIG_SEQS = (2**31, 2**32 - 1)


@pytest.fixture()
def redis(index_redis: Any) -> Any:
    return index_redis


def _seqs(rng: np.random.Generator, n: int) -> list[int]:
    """Distinct seqs spread over every integer encoding."""
    out: set[int] = set()
    ranges = [*SEQ_RANGES, BIG_SEQS]
    while len(out) < n:
        lo, hi = ranges[len(out) % len(ranges)]
        out.add(int(rng.integers(lo, hi + 1)))
    return sorted(out)


def _digit_fps(rng: np.random.Generator, bits: int, n: int) -> np.ndarray:
    """Fingerprints whose field is all ASCII digits (Redis keeps such a field as an
    integer): identities made, then unmixed."""
    fw = field_width(bits)
    digits = rng.integers(ord("1"), ord("9") + 1, size=(n, fw)).astype(np.uint64)
    field = np.zeros(n, dtype=np.uint64)
    for k in range(fw):
        field = (field << np.uint64(8)) | digits[:, k]
    bucket = rng.integers(0, 1 << bits, size=n).astype(np.uint64)
    ident = (bucket << np.uint64(IDENTITY_BITS - bits)) | field
    low = rng.integers(0, 1 << (64 - IDENTITY_BITS), size=n, dtype=np.uint64)
    return unmix((ident << np.uint64(64 - IDENTITY_BITS)) | low)


def _mothers(
    seed: int, bits: int, n: int, *, per: int = 400, digits: bool = True
) -> list[tuple[int, np.ndarray]]:
    """Mothers with their own fingerprints, fingerprints shared by a few or many of them
    (fields of 2, 3.., past stop_df), and (``digits``) fields Redis keeps as integers."""
    rng = np.random.default_rng(seed)
    shared = rng.integers(0, 2**63, 60, dtype=np.uint64)
    out = []
    for i, seq in enumerate(_seqs(rng, n)):
        own = rng.integers(0, 2**63, per, dtype=np.uint64)
        common = shared[[j for j in range(60) if i % (j % 20 + 1) == 0]]
        parts = [own, common]
        if digits:
            parts.append(_digit_fps(rng, bits, 3))
        out.append((seq, np.concatenate(parts)))
    return out


def _content(redis: Any, index: RedisInvertedIndex) -> dict[bytes, dict[bytes, bytes]]:
    """Every bucket's fields and values, by the bucket's name without the prefix."""
    prefix = index.key_prefix().encode()
    out = {}
    for key in redis.scan_iter(match=prefix + b"*", count=1000):
        out[key[len(prefix) :]] = redis.hgetall(key)
    return out


def _dumps(redis: Any, index: RedisInvertedIndex) -> dict[bytes, bytes]:
    prefix = index.key_prefix().encode()
    return {
        key[len(prefix) :]: redis.dump(key)
        for key in redis.scan_iter(match=prefix + b"*", count=1000)
    }


def _pair(redis: Any, bits: int, stop_df: int) -> tuple[RedisInvertedIndex, RedisInvertedIndex]:
    """An index that appends whole buckets, and one that only runs the script."""
    fast = RedisInvertedIndex(redis, "t:fast", bucket_bits=bits, stop_df=stop_df)
    slow = RedisInvertedIndex(redis, "t:slow", bucket_bits=bits, stop_df=stop_df)
    slow._appends = None
    return fast, slow


@pytest.mark.parametrize(("bits", "stop_df"), [(6, 16), (6, 3), (12, 16), (18, 4)])
def test_appends_leave_the_index_the_script_makes(
    redis: Any, bits: int, stop_df: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if bits >= 12:  # buckets get few postings each here: append even a single one
        monkeypatch.setattr(appends, "MIN_POSTINGS", 1)
    fast, slow = _pair(redis, bits, stop_df)
    first = _mothers(1, bits, 30)
    second = _mothers(2, bits, 40)
    # The second add brings new mothers, and again some of the first (idempotent).
    rounds = [first, second + first[:5]]
    for items in rounds:
        assert fast.add(items) == slow.add(items)
    assert fast.appended_buckets > 0
    assert _content(redis, fast) == _content(redis, slow)
    assert redis.hget(fast.layout_key, "fields") == redis.hget(slow.layout_key, "fields")
    stopped = sum(
        v[:1] == b"\x00" for bucket in _content(redis, fast).values() for v in bucket.values()
    )
    assert stopped > 0  # the shared fingerprints went past stop_df
    query = np.concatenate([first[3][1], second[7][1][:100]])
    query = np.unique(np.concatenate([query, np.arange(1, 200, dtype=np.uint64)]))
    assert same_lookup(fast.lookup(query), slow.lookup(query))
    some = next(iter(redis.scan_iter(match=fast.key_prefix() + "*")))
    assert redis.object("encoding", some) == b"ziplist"


def test_appended_buckets_are_byte_for_byte_the_scripts(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without fields kept as integers, every field of every bucket takes the same place
    and the same encoding as the script's HSETNX gives it: the DUMPs are equal."""
    monkeypatch.setattr(appends, "MIN_POSTINGS", 1)
    fast, slow = _pair(redis, 7, 5)
    for seed in (3, 4):
        items = _mothers(seed, 7, 25, digits=False)
        assert fast.add(items) == slow.add(items)
    a, b = _dumps(redis, fast), _dumps(redis, slow)
    assert a.keys() == b.keys() and len(a) == 128
    assert a == b


def test_a_bucket_written_meanwhile_is_not_overwritten(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer changes a bucket after its DUMP: the batch's EXEC is refused, the
    postings go through the script, and the other writer's field stays."""
    fast, slow = _pair(redis, 6, 16)
    base = _mothers(5, 6, 20)
    fast.add(base)
    slow.add(base)
    victim = fast.bucket_key(0)
    build = appends.BucketAppends._build
    calls = []

    def racing(self: appends.BucketAppends, *args: Any) -> Any:
        if not calls:
            for key in (victim, slow.bucket_key(0)):
                redis.hset(key, b"\xff\xff\xff\xff\xfe", b"\x01" + b"\x07\x00\x00\x00" * 2)
        calls.append(1)
        return build(self, *args)

    monkeypatch.setattr(appends.BucketAppends, "_build", racing)
    before = fast.appended_buckets
    more = _mothers(6, 6, 30)
    assert fast.add(more) == slow.add(more)
    assert calls and fast.appended_buckets == before  # the one batch was refused
    assert _content(redis, fast) == _content(redis, slow)
    assert redis.hget(victim, b"\xff\xff\xff\xff\xfe") is not None


def test_a_server_that_compresses_its_dumps_is_left_to_the_script(redis: Any) -> None:
    """rdbcompression yes (Redis' default) compresses most DUMPs with LZF, which the
    client does not read: appends are not tried at all (DUMPing every bucket for
    nothing would make adds slower than the script alone)."""
    redis.config_set("rdbcompression", "yes")
    try:
        fast, slow = _pair(redis, 6, 16)
        items = _mothers(7, 6, 20)
        assert fast.add(items) == slow.add(items)
        assert fast._appends is None and fast.appended_buckets == 0
        assert _content(redis, fast) == _content(redis, slow)
    finally:
        redis.config_set("rdbcompression", "no")


def test_compressed_buckets_met_on_the_way_take_the_script(redis: Any) -> None:
    """Compression switched on after the server was probed: each compressed bucket goes
    through the script (the others may be appended), with the same result."""
    fast, slow = _pair(redis, 6, 16)
    items = _mothers(7, 6, 20)
    assert fast.add(items) == slow.add(items)  # probed here, without compression
    redis.config_set("rdbcompression", "yes")
    try:
        compressed = sum(d[1] == 0xC3 for d in _dumps(redis, fast).values())  # LZF
        assert compressed > 0
        before = fast.appended_buckets
        items = _mothers(8, 6, 20)
        assert fast.add(items) == slow.add(items)
        assert fast.appended_buckets - before <= 64 - compressed
        assert _content(redis, fast) == _content(redis, slow)
    finally:
        redis.config_set("rdbcompression", "no")


class _Server:
    def __init__(self, payload: bytes | None, config: dict[str, str] | None) -> None:
        self.payload, self.config = payload, config

    def dump(self, key: str) -> bytes | None:
        return self.payload

    def config_get(self, pattern: str) -> dict[str, str]:
        if self.config is None:
            raise PermissionError("CONFIG is disabled")
        return {k: v for k, v in self.config.items() if k.startswith(pattern.rstrip("*"))}


def test_servers_of_unknown_form_are_left_to_the_script(redis: Any) -> None:
    cfg = {
        "hash-max-ziplist-entries": "512",
        "hash-max-ziplist-value": "64",
        "rdbcompression": "no",
    }
    ziplist = redis.hset("probe", "a", "1") and redis.dump("probe")
    assert appends.probe(_Server(ziplist, cfg), "k") is not None
    assert appends.probe(redis, "probe") == appends.probe(_Server(ziplist, cfg), "k")
    listpack = b"\x10" + ziplist[1:]  # Redis 7 keeps small hashes as listpacks
    assert appends.probe(_Server(listpack, cfg), "k") is None
    assert appends.probe(_Server(ziplist, None), "k") is None  # CONFIG refused
    assert appends.probe(_Server(None, cfg), "k") is None
    assert appends.probe(_Server(ziplist, {**cfg, "rdbcompression": "yes"}), "k") is None


@pytest.mark.parametrize(
    "text",
    [b"0", b"7", b"12", b"13", b"-1", b"-0", b"007", b"127", b"128", b"-129", b"32768",
     b"8388608", b"2147483648", b"9223372036854775807", b"9223372036854775808", b"1a",
     b"", b" 1", b"+1", b"-"],
)  # fmt: skip
def test_integers_as_redis_reads_them(redis: Any, text: bytes) -> None:
    """``redis_int`` agrees with Redis: the value comes back as stored, and a string
    Redis keeps as an integer takes that integer's entry (compared through DUMP)."""
    redis.hset("h", b"f", text)
    payload = redis.dump("h")
    n = appends.redis_int(text)
    if n is None:
        assert text in payload  # kept as a string
    else:
        enc, size = ziplist.int_size(np.array([n], dtype=np.int64))
        data = int(n).to_bytes(8, "little", signed=True)[: int(size[0])]
        assert bytes([int(enc[0])]) + data in payload


def test_rounds_overlap_and_a_refused_connection_loses_nothing(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many small rounds (overlapping: DUMPs of the next sent before this one's
    RESTOREs), a few buckets a connection; another writer changes one bucket after its
    DUMP: only that connection's buckets are refused and go through the script."""
    monkeypatch.setattr(appends, "BATCH", 16)
    monkeypatch.setattr(appends, "WATCH_KEYS", 4)
    monkeypatch.setattr(appends, "MIN_POSTINGS", 1)
    fast, slow = _pair(redis, 7, 16)
    base = _mothers(11, 7, 20)
    assert fast.add(base) == slow.add(base)
    victim = 37  # in the third round, its tenth connection
    build = appends.BucketAppends._build
    calls = []

    def racing(self: appends.BucketAppends, rec: np.ndarray, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            for index in (fast, slow):
                redis.hset(index.bucket_key(victim), b"\xfe\xfe\xfe\xfe", b"4000000000")
        return build(self, rec, *args)

    monkeypatch.setattr(appends.BucketAppends, "_build", racing)
    before = fast.appended_buckets
    more = _mothers(12, 7, 30)
    assert fast.add(more) == slow.add(more)
    assert len(calls) == 8  # 128 buckets, 16 a round
    assert fast.appended_buckets - before == 128 - 4  # one connection's 4 refused
    assert _content(redis, fast) == _content(redis, slow)
    assert redis.hget(fast.bucket_key(victim), b"\xfe\xfe\xfe\xfe") == b"4000000000"


def test_a_reshard_starting_between_rounds_stops_the_appends(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move mark appears while the second round is out: its EXEC is refused, the
    third round sees the mark and writes nothing, and the rest goes through the script once the
    mark is gone (adds are idempotent): the same index and counts as the script's."""
    monkeypatch.setattr(appends, "BATCH", 16)
    monkeypatch.setattr(appends, "MIN_POSTINGS", 1)
    fast, slow = _pair(redis, 7, 16)
    base = _mothers(13, 7, 20)
    assert fast.add(base) == slow.add(base)
    send = appends.BucketAppends._send_dumps
    calls = []
    first_keys: list[str] = []
    first_sizes: list[int] = []

    def marking(
        self: appends.BucketAppends, records: np.ndarray, rows: np.ndarray, *args: Any
    ) -> Any:
        calls.append(1)
        if len(calls) == 1:  # the first round's buckets, and their sizes before it
            buckets = np.unique(records[rows, :4].copy().view("<u4").ravel())
            first_keys.extend(fast.bucket_key(int(b)) for b in buckets)
            first_sizes.extend(redis.hlen(k) for k in first_keys)
        if len(calls) == 3:
            # The first round's EXEC was sent before the second round's DUMPs were read,
            # but Redis may not have read it yet: the mark set now could come first and
            # refuse it too. Wait until its buckets grew (a MULTI: all of them or none).
            deadline = time.monotonic() + 10
            while [redis.hlen(k) for k in first_keys] == first_sizes:
                assert time.monotonic() < deadline, "the first round was never written"
                time.sleep(0.001)
            # A reshard starts; its mark lapses in 1 s (long enough for the third round to
            # see it on a loaded machine; 0.3 s was not, under load)
            redis.set(fast.moving_key, b"reshard", px=1000)
        return send(self, records, rows, *args)

    monkeypatch.setattr(appends.BucketAppends, "_send_dumps", marking)
    before = fast.appended_buckets
    more = _mothers(14, 7, 30)
    assert fast.add(more) == slow.add(more)
    assert len(calls) == 3  # the third round saw the mark: no round after it
    # The first round only: the second round's WATCH covered the mark, set before its
    # EXEC, which was refused.
    assert fast.appended_buckets - before == 16
    assert _content(redis, fast) == _content(redis, slow)
    assert redis.hget(fast.layout_key, "fields") == redis.hget(slow.layout_key, "fields")


def test_two_writers_at_once_lose_nothing(redis: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes' adds into the same buckets at the same time (small rounds, so
    they interleave): every posting and the field count are there, as after the same
    adds one after the other through the script (values compared as sets of seqs: the
    order of a field's holders is the order they came in)."""
    import threading

    from tracker.indexes.codec import decode_value

    monkeypatch.setattr(appends, "BATCH", 8)
    monkeypatch.setattr(appends, "WATCH_KEYS", 2)
    monkeypatch.setattr(appends, "MIN_POSTINGS", 1)
    mothers = _mothers(21, 7, 40, digits=False)
    for index in _pair(redis, 7, 100):
        index.add(mothers[:4])  # buckets that exist before
    a = RedisInvertedIndex(redis, "t:fast", stop_df=100)
    b = RedisInvertedIndex(redis, "t:fast", stop_df=100)
    slow = RedisInvertedIndex(redis, "t:slow", stop_df=100)
    slow._appends = None
    errors: list[BaseException] = []

    def run(index: RedisInvertedIndex, items: list[tuple[int, np.ndarray]]) -> None:
        try:
            for k in range(0, len(items), 6):
                index.add(items[k : k + 6])
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [
        threading.Thread(target=run, args=(a, mothers[4:22])),
        threading.Thread(target=run, args=(b, mothers[22:])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    slow.add(mothers[4:22])
    slow.add(mothers[22:])
    assert a.appended_buckets + b.appended_buckets > 0

    def as_sets(index: RedisInvertedIndex) -> dict[bytes, dict[bytes, frozenset[bytes]]]:
        return {
            key: {f: frozenset(decode_value(v, 2) or []) for f, v in fields.items()}
            for key, fields in _content(redis, index).items()
        }

    assert as_sets(a) == as_sets(slow)
    assert redis.hget(a.layout_key, "fields") == redis.hget(slow.layout_key, "fields")
