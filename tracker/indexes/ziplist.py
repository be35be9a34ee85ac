"""Redis' serialized small hashes (Redis <= 6.2: a ziplist; RDB type 13), made and read
on the client: what ``DUMP`` returns and ``RESTORE`` takes for a hash kept in the
compact encoding. Whole-bucket appends (``tracker.indexes.appends``) extend the DUMPs
of existing buckets; a bulk load (``tracker.indexes.bulk``) makes new buckets whole
(``new_bucket_payloads``): Redis then copies each bucket in (~3 us) instead of
inserting its ~100 fields one by one, each insert searching the ziplist (~0.5 us a
field on the embedded server, the load's critical path).

A payload is the RDB type, the ziplist's RDB string length (1, 2 or 5 bytes), the
ziplist (``zlbytes``, ``zltail``, ``zllen``, the entries, ``0xff``), the server's RDB
version (2 bytes) and Redis' CRC-64 (Jones) of all that, little-endian. An entry is the
previous entry's length (1 byte here: every entry is under 254 bytes), its encoding and
its data: a string (a 1-byte header up to 63 bytes, 2 bytes up to 16,383), or an
integer where Redis' ``string2ll`` reads the string as one (``zipTryEncoding``), which
is what Redis itself would store: the same bytes as ``HSET`` of the same fields in the
same order makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anycrc  # type: ignore[import-untyped]
import numpy as np

if TYPE_CHECKING:
    from redis import Redis

ZIPLIST_HASH = 13  # RDB_TYPE_HASH_ZIPLIST: what DUMP of a small hash starts with (<= 6.2)
CRC = anycrc.Model("CRC64-REDIS")  # DUMP's checksum (Redis' crc64, Jones)
_DIGITS = np.zeros(256, dtype=bool)
_DIGITS[list(b"-0123456789")] = True


@dataclass
class ServerForm:
    """How the server serializes a small hash, read once: None when unusable."""

    version: bytes  # the RDB version bytes DUMP ends its payloads with
    max_entries: int  # hash-max-ziplist-entries
    max_value: int  # hash-max-ziplist-value


def probe(redis: Redis[bytes], layout_key: str) -> ServerForm | None:
    """The server's form, from a DUMP of the layout hash (a small hash) and its
    ``hash-max-ziplist-*`` settings; None when this path cannot be used on it (not
    ziplists, CONFIG refused, or ``rdbcompression`` on: Redis' default, under which
    most DUMPs come LZF-compressed)."""
    try:
        payload = redis.dump(layout_key)
        config = redis.config_get("hash-max-ziplist-*")
        compression = redis.config_get("rdbcompression")
    except Exception:  # CONFIG refused (a managed server), DUMP renamed: the script
        return None
    if not payload or payload[0] != ZIPLIST_HASH or len(payload) < 11:
        return None
    if compression.get("rdbcompression", "yes") != "no":
        return None  # most DUMPs LZF-compressed: reading them all would be for nothing
    entries = int(config.get("hash-max-ziplist-entries", 0) or 0)
    value = int(config.get("hash-max-ziplist-value", 0) or 0)
    if entries <= 0 or value <= 0:
        return None
    return ServerForm(version=bytes(payload[-10:-8]), max_entries=entries, max_value=value)


def int_like(data: np.ndarray) -> np.ndarray:
    """Rows (uint8, one string a row) that Redis might store as an integer: every byte a
    digit or '-' (a superset of what its string2ll accepts)."""
    return np.all(_DIGITS[data], axis=1)


def int_size(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(encoding byte, data bytes) of integers in a ziplist, as zipTryEncoding picks them."""
    imm = (v >= 0) & (v <= 12)
    size = np.select(
        [
            imm,
            (v >= -128) & (v <= 127),
            (v >= -32768) & (v <= 32767),
            (v >= -8388608) & (v <= 8388607),
            (v >= -2147483648) & (v <= 2147483647),
        ],
        [0, 1, 2, 3, 4],
        8,
    )
    enc = np.select(
        [size == 0, size == 1, size == 2, size == 3, size == 4],
        [0xF1 + np.clip(v, 0, 12), 0xFE, 0xC0, 0xF0, 0xD0],
        0xE0,
    )
    return enc.astype(np.uint8), size.astype(np.int64)


def redis_int(value: bytes) -> int | None:
    """The integer Redis stores a string as in a ziplist (its string2ll: an optional
    '-', no leading zero, within int64), else None."""
    if not value or len(value) >= 32:
        return None
    if value == b"0":
        return 0
    digits = value[1:] if value[:1] == b"-" else value
    if not digits or not digits.isdigit() or digits[:1] == b"0" or not digits.isascii():
        return None
    n = int(value)
    return n if -(2**63) <= n < 2**63 else None


def str_header(n: int) -> bytes:
    """A ziplist string entry's encoding header for ``n`` bytes (up to 16,383)."""
    return bytes([n]) if n <= 63 else bytes([0x40 | (n >> 8), n & 0xFF])


def run_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions of the runs ``starts[i] .. starts[i] + lengths[i] - 1``, one run
    after the other (to gather or scatter many byte strings at once)."""
    first = np.cumsum(lengths) - lengths
    return np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))


class PayloadHeads:
    """The start of each of several payloads, made together with numpy: the RDB type,
    the ziplist's RDB string length (1, 2 or 5 bytes) and its header (``zlbytes``,
    ``zltail``, ``zllen``) for ziplists of ``nbytes`` bytes whose last entry starts at
    ``tail`` and that hold ``count`` entries. ``heads[j]``: payload j's."""

    def __init__(self, nbytes: np.ndarray, tail: np.ndarray, count: np.ndarray) -> None:
        small, mid = nbytes < 64, nbytes < 16384
        hlen = np.select([small, mid], [1, 2], 5)
        rows = np.zeros((nbytes.size, 16), dtype=np.uint8)
        rows[:, 0] = ZIPLIST_HASH
        rows[:, 1] = np.select([small, mid], [nbytes, 0x40 | (nbytes >> 8)], 0x80)
        rows[:, 2] = np.where(mid & ~small, nbytes & 0xFF, rows[:, 2])
        wide = ~mid
        rows[wide, 2:6] = nbytes[wide].astype(">u4").view(np.uint8).reshape(-1, 4)
        zl_at = 1 + hlen  # where the ziplist header goes in a row
        zl_head = np.concatenate(
            [
                nbytes.astype("<u4").view(np.uint8).reshape(-1, 4),
                tail.astype("<u4").view(np.uint8).reshape(-1, 4),
                count.astype("<u2").view(np.uint8).reshape(-1, 2),
            ],
            axis=1,
        )
        rows[np.arange(nbytes.size)[:, None], zl_at[:, None] + np.arange(10)] = zl_head
        self._rows = memoryview(rows.tobytes())
        self._len = (zl_at + 10).tolist()

    def __getitem__(self, j: int) -> memoryview:
        return self._rows[16 * j : 16 * j + self._len[j]]


def sealed(*parts: bytes | memoryview) -> bytes:
    """A payload from its parts (head, entries, ``0xff`` and the RDB version), with
    Redis' CRC-64 of them appended."""
    body = b"".join(parts)
    return body + CRC.calc(body).to_bytes(8, "little")


def read_ints(
    lens: np.ndarray, starts: np.ndarray, vdata: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which of some values (``lens`` bytes at ``starts`` of ``vdata``, none empty)
    Redis stores as integers, and those integers."""
    data = vdata[run_positions(starts, lens)]  # the values side by side
    at = np.cumsum(lens) - lens
    all_digits = np.logical_and.reduceat(_DIGITS[data], at)
    minus = np.logical_or.reduceat(data == ord("-"), at)
    lead = data[at]
    ok = all_digits & (lens < 20) & ((lead != ord("0")) | (lens == 1))
    val = np.zeros(lens.size, dtype=np.int64)
    plain = np.flatnonzero(ok & ~minus & (lens <= 18))
    for k in range(int(lens[plain].max()) if plain.size else 0):
        more = plain[lens[plain] > k]
        val[more] = val[more] * 10 + (data[at[more] + k].astype(np.int64) - 48)
    for i in np.flatnonzero(ok & (minus | (lens > 18))).tolist():
        got = redis_int(data[at[i] : at[i] + lens[i]].tobytes())
        ok[i] = got is not None
        val[i] = got or 0
    return ok, val


def new_bucket_payloads(
    per_bucket: np.ndarray,
    fields: np.ndarray,
    vlen: np.ndarray,
    vdata: np.ndarray,
    form: ServerForm,
    ints: np.ndarray | None = None,
) -> tuple[np.ndarray, list[bytes]]:
    """DUMP payloads of new buckets, each holding its fields in the order given: bucket
    ``i`` has the next ``per_bucket[i]`` rows of ``fields`` (uint8 rows of the field
    bytes) with their values (``vlen`` bytes each, one after the other in ``vdata``).
    Returns (which buckets are made, their payloads in order). A bucket that Redis
    would not keep as a ziplist (more fields than ``form.max_entries``, a value over
    ``form.max_value``) or that holds a field Redis might store as an integer is not
    made: its fields go by ``HSET``. ``ints``: where known, each value as the integer
    its decimal digits are (-1: not known; ``bulk.fill_values`` knows its single seqs),
    not read back from the digits."""
    n, fw = fields.shape
    nb = per_bucket.size
    if n == 0 or not 0 < fw <= 63:
        return np.zeros(0, dtype=np.int64), []
    bucket = np.repeat(np.arange(nb), per_bucket)
    vstart = np.cumsum(vlen) - vlen
    # Values Redis reads as integers (zipTryEncoding: under 32 bytes, string2ll). Made
    # here: decimal seqs, or packed seqs whose bytes happen to be digits. A value of up
    # to 18 digits without a leading zero is read here; one with a '-' (never made here)
    # or of 19 digits (int64 may overflow) by Redis' own rule, in Python.
    is_int = np.zeros(n, dtype=bool)
    ival = np.zeros(n, dtype=np.int64)
    if ints is not None:
        known = ints >= 0
        is_int[known], ival[known] = True, ints[known]
        read = np.flatnonzero(~known & (vlen > 0))
    else:
        read = np.flatnonzero(vlen > 0)
    if read.size:
        is_int[read], ival[read] = read_ints(vlen[read], vstart[read], vdata)
    enc, size = int_size(ival)
    shead = np.where(vlen <= 63, 1, 2)
    vbody = np.where(is_int, 1 + size, shead + vlen)  # a value entry without its prevlen
    fentry = 2 + fw  # prevlen, header, the field
    total = fentry + 1 + vbody  # the pair: field entry, value entry
    # Buckets kept as ziplists by Redis and made here.
    bad = (vlen > form.max_value) | int_like(fields)
    bad_bucket = np.bincount(bucket[bad], minlength=nb) > 0
    made = (per_bucket > 0) & (per_bucket <= form.max_entries) & ~bad_bucket
    made &= 2 * per_bucket < 0xFFFF
    which = np.flatnonzero(made)
    if not which.size:
        return which, []
    rows = np.flatnonzero(made[bucket])
    t = total[rows]
    off = np.cumsum(t) - t  # each pair's place in one buffer of all entries
    buf = np.zeros(int(t.sum()), dtype=np.uint8)
    # prevlen of a field entry: the previous value entry's length (0 at a bucket's start)
    starts_bucket = np.r_[True, bucket[rows][1:] != bucket[rows][:-1]]
    prev_value = np.r_[0, 1 + vbody[rows][:-1]]
    buf[off] = np.where(starts_bucket, 0, prev_value)
    buf[off + 1] = fw
    buf[off[:, None] + 2 + np.arange(fw)] = fields[rows]
    buf[off + fentry] = fentry  # the value entry's prevlen: the field entry's length
    vo = off + fentry + 1
    ints = is_int[rows]
    r_int, o_int = rows[ints], vo[ints]
    buf[o_int] = enc[r_int]
    data = ival[r_int].astype("<i8").view(np.uint8).reshape(-1, 8)
    for k in range(8):
        m = size[r_int] > k
        buf[o_int[m] + 1 + k] = data[m, k]
    r_str, o_str = rows[~ints], vo[~ints]
    one = vlen[r_str] <= 63
    buf[o_str[one]] = vlen[r_str][one]
    two = ~one
    buf[o_str[two]] = 0x40 | (vlen[r_str][two] >> 8)
    buf[o_str[two] + 1] = vlen[r_str][two] & 0xFF
    data_at = o_str + shead[r_str]
    lengths = vlen[r_str]
    buf[run_positions(data_at, lengths)] = vdata[run_positions(vstart[r_str], lengths)]
    # Per bucket: the payload's head (type, RDB length, ziplist header), its entries,
    # the end, the version, the checksum.
    lo = np.searchsorted(bucket[rows], which, side="left")
    hi = np.searchsorted(bucket[rows], which, side="right")
    ent_from = off[lo]
    ent_to = off[hi - 1] + t[hi - 1]
    nbytes = 10 + (ent_to - ent_from) + 1
    tail = nbytes - 1 - (1 + vbody[rows][hi - 1])  # where the last entry starts
    count = 2 * per_bucket[which]
    heads = PayloadHeads(nbytes, tail, count)
    raw = memoryview(buf.tobytes())
    end = b"\xff" + form.version
    payloads = [
        sealed(heads[j], raw[a:z], end)
        for j, (a, z) in enumerate(zip(ent_from.tolist(), ent_to.tolist(), strict=True))
    ]
    return which, payloads
