"""The stored values of the inverted index, in Python: the twin of ``lua/codec.lua``
(the scripts' codec), with a test that both agree on real values
(tests/tracker/indexes/test_index_codec.py).

A value holds the seqs of the mothers having one fingerprint. Format 1 (indexes written
before format 2): the packed little-endian uint32 seqs. Format 2: a single seq (most
fields) as its decimal digits, which Redis keeps in a listpack as an integer (2-5 bytes
instead of 6: ~2 bytes a posting less); two seqs as ``\\x01`` and the 8 packed bytes (a
marker, so it is never read as 8 digits); three or more (>= 12 bytes, longer than any
decimal seq) packed. A stop marker is one ``\\x00`` byte in both, followed by the packed
seqs of its first ``SAMPLE`` holders (so its length is never a multiple of 4, and it is
never read as digits or as the two-seq marker): a long passage that more than ``stop_df``
distinct texts hold is still traced to some of them (``stop_samples``). 16 seqs stay
within Redis' 64-byte compact values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tracker.indexes.ziplist import run_positions

STOP = b"\x00"  # a stop marker's first byte (alone: one without its holders)
SAMPLE = 4  # holders a stop marker keeps (the first ones, in the order they came)


def is_stop(value: bytes) -> bool:
    """Whether a stored value is a stop marker (``\\x00`` and 0..SAMPLE packed seqs)."""
    return value[:1] == STOP and len(value) % 4 == 1


def stop_value(seqs: list[bytes]) -> bytes:
    """The stop marker of a field whose holders (4-byte seqs, in the order they came)
    passed ``stop_df``: it keeps the first ``SAMPLE``."""
    return STOP + b"".join(seqs[:SAMPLE])


def stop_sample(value: bytes) -> list[int]:
    """The holders a stop marker kept (none for a marker written before samples)."""
    return np.frombuffer(value[1:], dtype="<u4").tolist()


FORMAT = 2  # the value format of new indexes and of every reshard


def packed_seqs(value: bytes, fmt: int) -> bytes:
    """The packed little-endian uint32 seqs of a stored value (not a stop marker)."""
    if fmt == 2 and len(value) < 12:
        if len(value) == 9 and value[0] == 1:
            return value[1:]
        return int(value).to_bytes(4, "little")
    return value


def parse_values(
    values: Sequence[bytes | None], fmt: int, stop_mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(fp_index, seqs, stopped)`` of looked-up values (None: no field). Single seqs
    (decimal in format 2, most hits) are converted in one ``map(int, ...)``. A
    ``stop_mask`` given is set where a value is a stop marker."""
    stopped = 0
    one_at: list[int] = []
    ones: list[bytes] = []
    many_at: list[int] = []
    blobs: list[bytes] = []
    for i, v in enumerate(values):
        if not v:
            continue
        n = len(v)
        if v[0] == 0 and n % 4 == 1:  # a stop marker
            stopped += 1
            if stop_mask is not None:
                stop_mask[i] = True
        elif fmt == 2 and n < 12 and not (n == 9 and v[0] == 1):
            one_at.append(i)
            ones.append(v)
        else:
            many_at.append(i)
            blobs.append(packed_seqs(v, fmt))
    if not ones and not blobs:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), stopped
    lengths = np.fromiter((len(b) // 4 for b in blobs), dtype=np.int64, count=len(blobs))
    fp_index = np.concatenate(
        [
            np.asarray(one_at, dtype=np.int64),
            np.repeat(np.asarray(many_at, dtype=np.int64), lengths),
        ]
    )
    seqs = np.concatenate(
        [
            np.fromiter(map(int, ones), dtype=np.uint32, count=len(ones)),
            np.frombuffer(b"".join(blobs), dtype="<u4").astype(np.uint32),
        ]
    )
    if ones and blobs:  # in fingerprint order, as callers may expect
        order = np.argsort(fp_index, kind="stable")
        fp_index, seqs = fp_index[order], seqs[order]
    return fp_index, seqs, stopped


def decode_value(value: bytes, fmt: int) -> list[bytes] | None:
    """The 4-byte seqs of a stored value, None for a stop marker."""
    if is_stop(value):
        return None
    packed = packed_seqs(value, fmt)
    return [packed[i : i + 4] for i in range(0, len(packed), 4)]


def encode_value(seqs: list[bytes] | None, fmt: int) -> bytes:
    """The stored value of 4-byte seqs (None: a stop marker without holders), as
    ``codec.lua`` writes it."""
    if seqs is None:
        return STOP
    if fmt == 2 and len(seqs) == 1:
        return str(int.from_bytes(seqs[0], "little")).encode()
    if fmt == 2 and len(seqs) == 2:
        return b"\x01" + seqs[0] + seqs[1]
    return b"".join(seqs)


def merge_value(
    value: bytes, seqs: list[bytes], stop_df: int, fmt: int = FORMAT
) -> tuple[bytes | None, int]:
    """``merge`` of ``lua/codec.lua`` in Python: the stored ``value`` (b"" for a new
    field) with the 4-byte ``seqs`` added, each once, in order; past ``stop_df`` holders
    a stop marker of the first ones. (The new value, or None when nothing changed;
    postings added.)"""
    cur = decode_value(value, fmt) if value else []
    if cur is None:
        return None, 0
    added = 0
    for s in seqs:
        if s in cur:
            continue
        added += 1
        if len(cur) + 1 > stop_df:
            return stop_value(cur), added
        cur.append(s)
    if added:
        return encode_value(cur, fmt), added
    return None, 0


def new_value(seqs: list[bytes], stop_df: int, fmt: int = FORMAT) -> tuple[bytes, int]:
    """The stored value of a new field whose holders (4-byte seqs, in the order they
    came, repeats allowed, at least one) arrive in one add, and its postings."""
    value, added = merge_value(b"", seqs, stop_df, fmt)
    if value is None:
        raise ValueError("a new field needs at least one seq")
    return value, added


def parse_many(values: list[bytes], fmt: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``parse_values`` of many stored values (all present, e.g. every field of a bucket),
    with numpy over their concatenation instead of a loop per value: ``(fp_index, seqs,
    stop)`` where ``stop[i]`` says value ``i`` is a stop marker. Same postings, in the
    same order, as ``parse_values`` (tests/tracker/indexes/test_index_codec.py)."""
    n = len(values)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, bool)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    blob = np.frombuffer(b"".join(values), dtype=np.uint8)
    starts = np.cumsum(lens) - lens
    first = blob[starts]
    stop = (first == 0) & (lens % 4 == 1)
    if fmt == 2:
        two = (lens == 9) & (first == 1) & ~stop
        decimal = (lens < 12) & ~two & ~stop
    else:
        two = np.zeros(n, bool)
        decimal = np.zeros(n, bool)
    packed = ~stop & ~two & ~decimal
    # How many seqs each value holds, and where its packed seqs start in the blob.
    count = np.where(packed, lens // 4, 0) + decimal + 2 * two
    count[stop] = 0
    fp_index = np.repeat(np.arange(n, dtype=np.int64), count)
    seqs = np.zeros(int(count.sum()), dtype=np.uint32)
    out_at = np.cumsum(count) - count  # each value's first seq in ``seqs``
    if decimal.any():
        d = np.flatnonzero(decimal)
        dl = lens[d]
        width = int(dl.max())
        # Digits right-aligned in rows of ``width``: value = sum(digit * 10**place).
        pos = np.arange(width)[None, :]
        idx = starts[d][:, None] + pos - (width - dl)[:, None]
        ok = pos >= (width - dl)[:, None]
        digits = np.where(ok, blob[np.where(ok, idx, 0)].astype(np.int64) - 48, 0)
        place = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        seqs[out_at[d]] = (digits * place).sum(axis=1).astype(np.uint32)
    words = packed | two
    if words.any():
        w = np.flatnonzero(words)
        k = count[w]
        src0 = starts[w] + two[w]  # the two-seq marker's byte skipped
        within = np.arange(int(k.sum()), dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
        byte0 = np.repeat(src0, k) + 4 * within
        dst = np.repeat(out_at[w], k) + within
        b = blob[byte0[:, None] + np.arange(4)].astype(np.uint32)
        seqs[dst] = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)
    return fp_index, seqs, stop


def scatter(out: np.ndarray, starts: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> None:
    """``out[starts[i]:starts[i] + lengths[i]]`` = the i-th run of ``data`` (the runs one
    after the other), for every i at once."""
    if data.size:
        out[run_positions(starts, lengths)] = data


def fill_values(
    seqs: np.ndarray,
    starts: np.ndarray,
    stop_df: int,
    *,
    repeated: np.ndarray | None = None,
    ints: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The final value of every field (its seqs ``seqs[starts[i]:starts[i + 1]]``):
    (lengths, the values' bytes one after the other, postings of each as adds count
    them), as ``encode_value``/``stop_value`` write them, made with numpy: a seq twice
    in a field (an identity collision, or two mothers of one edition group) kept once,
    where it first came; one seq as decimal digits, two as "\x01" and both packed, more
    packed; past ``stop_df`` a stop marker of the first ``SAMPLE``. ``repeated`` (bool,
    one a seq), when given, is set where a seq came before in its field; ``ints`` (one
    a field), to its seq where the value is one seq (its digits)."""
    counts = np.diff(np.append(starts, seqs.size))
    group = np.repeat(np.arange(starts.size), counts)
    key = (group.astype(np.uint64) << np.uint64(32)) | seqs.astype(np.uint64)
    order = np.argsort(key, kind="stable")  # a seq's later copies after its first
    ordered = key[order]
    again = np.zeros(seqs.size, dtype=bool)
    again[order[1:][ordered[1:] == ordered[:-1]]] = True
    del key, order, ordered
    if repeated is not None:
        repeated[:] = again
    kept, kgroup = seqs[~again], group[~again]
    k = np.bincount(kgroup, minlength=starts.size)
    kstart = np.cumsum(k) - k
    stop = k > stop_df
    one = (k == 1) & ~stop
    two = (k == 2) & ~stop
    packed = ~stop & ~one  # two or more: their seqs packed ("\x01" first for two)
    # seqs written: a stop marker keeps the first SAMPLE of the stop_df an add holds
    # when the next one stops it (fewer when stop_df < SAMPLE)
    held = np.where(stop, min(SAMPLE, stop_df), k)
    nd, one_bytes = _decimal(kept[kstart[one]])
    if ints is not None:
        ints[one] = kept[kstart[one]]
    vlen = np.empty(starts.size, dtype=np.int64)
    vlen[one] = nd
    vlen[~one] = 4 * held[~one] + (two | stop)[~one]
    vstart = np.cumsum(vlen) - vlen
    vdata = np.empty(int(vlen.sum()), dtype=np.uint8)
    scatter(vdata, vstart[one], nd, one_bytes)
    vdata[vstart[two]] = 1
    vdata[vstart[stop]] = STOP[0]
    rank = np.arange(kept.size) - kstart[kgroup]  # place of each kept seq in its field
    chosen = (packed[kgroup] | stop[kgroup]) & (rank < held[kgroup])
    body = ~one
    scatter(
        vdata,
        vstart[body] + (two | stop)[body],
        4 * held[body],
        kept[chosen].astype("<u4").view(np.uint8),
    )
    return vlen, vdata, np.minimum(k, stop_df + 1)


def _decimal(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal digits of uint32 ``values``: (lengths, the digits one after the other)."""
    ones = values.astype(np.uint64)
    nd = np.ones(ones.size, dtype=np.int64)
    for k in range(1, 10):
        nd += ones >= np.uint64(10**k)
    digits = np.empty((ones.size, 10), dtype=np.uint8)  # right-aligned, MSB first
    x = ones.copy()
    for j in range(9, -1, -1):
        digits[:, j] = (x % np.uint64(10)).astype(np.uint8) + 48
        x //= np.uint64(10)
    return nd, digits[np.arange(10) >= (10 - nd)[:, None]]
