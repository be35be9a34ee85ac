"""The key layout of the inverted index: where a fingerprint's postings live.

A fingerprint (uint64) is mixed by a bijective 64-bit hash (splitmix64, ``mix64``); its
top ``IDENTITY_BITS`` (41) are its *identity*. The identity's top ``bits`` choose a
bucket, the rest is the *field* (big-endian, in the fewest whole bytes: 4 bytes below
2**17 buckets, 3 from there on). Bucket and field together are the identity, so the
index reshards to any bucket count from its own contents.

Keys of an index with key prefix ``P`` (one Redis key each; a bucket script declares its
one key, so every key stays usable on Redis Cluster):

- ``P:b{bits}v2:{bucket}``: a bucket (a HASH field -> value, ``tracker.indexes.codec``);
  ``P:b{bits}:{bucket}`` in format 1, ``P:b:{bucket}`` for the legacy 2**14 buckets of
  46-bit identities (``LEGACY``);
- ``P:layout``: ``layout`` (``layout_name``) and ``fields`` (counted by writes);
- ``P:moving``: exists while a reshard moves the buckets;
- ``P:version``: ``epoch`` and ``n``, raised around every write; ``base`` and
  ``base_layout``: the snapshot version and layout the dirty buckets are counted from;
- ``{P:version}:dirty``: a bitmap of the buckets written since that snapshot (bit ``b``
  = bucket ``b``, ``SETBIT`` order), in ``P:version``'s hash slot (``same_slot``) so that
  one script reads and resets both on Redis Cluster (``tracker.indexes.snapshot``);
- ``{P:version}:tails`` and ``{P:version}:tail-next``: the tail segments lookups read
  and their counter; ``P:t{n}``: the key prefix of tail segment ``n``, an index of its
  own (``tracker.indexes.tail``);
- ``P:bt{token}:{bucket}``: a bulk load's temporary bucket (``tracker.indexes.bulk``),
  and ``P:bt{token}:live`` its lease while that load runs.
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_C = np.uint64(0x9E3779B97F4A7C15)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer: a bijection on uint64 that spreads nearby values."""
    z = values.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z += _C
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


# Bits of the mixed fingerprint kept (bucket bits + field bits). 41 bits put a field in
# 4 bytes from 512 buckets on and in 3 bytes from 2**17 buckets on (a library of ~100 M
# characters): 11 bytes a posting in the listpack instead of 12. Two of the ~1.4e8
# fingerprints of a billion characters share an identity ~4,500 times, each a stray
# posting of one window, which ranking (two or more hits) and alignment ignore.
# An index written before layouts were kept used 46 bits and 2**14 buckets.
IDENTITY_BITS = 41
LEGACY = (14, 46)
MIN_BITS = 6
MAX_BITS = 30
# Fields per bucket: Redis keeps a hash as a compact listpack up to 512 entries (values
# <= 64 bytes, i.e. stop_df <= 16); past it every bucket becomes a hashtable and a
# posting costs ~7x more. A reshard doubles buckets until they hold about TARGET.
TARGET_FIELDS = 192
RESHARD_FIELDS = 400


def bits_for(fields: int) -> int:
    """The bucket bits that put about ``TARGET_FIELDS`` fields in a bucket."""
    bits = MIN_BITS
    while bits < MAX_BITS and fields > TARGET_FIELDS << bits:
        bits += 1
    return bits


def layout_name(bits: int, ident: int, fmt: int) -> str:
    """The stored layout: ``bits/ident`` for format 1 (as written before formats),
    ``bits/ident/fmt`` from format 2 on."""
    return f"{bits}/{ident}" if fmt == 1 else f"{bits}/{ident}/{fmt}"


def field_width(bits: int, ident: int = IDENTITY_BITS) -> int:
    """Bytes of a field when the bucket takes ``bits`` of an ``ident``-bit identity."""
    return -(-(ident - bits) // 8)


def split_identity(
    ident: np.ndarray, bits: int, ident_bits: int = IDENTITY_BITS
) -> tuple[np.ndarray, np.ndarray]:
    shift = np.uint64(ident_bits - bits)
    buckets = (ident >> shift).astype(np.int64)
    fields = ident & ((np.uint64(1) << shift) - np.uint64(1))
    return buckets, fields


def pack_fields(fields: np.ndarray, width: int) -> np.ndarray:
    """uint64 fields -> rows of their last ``width`` big-endian bytes."""
    return fields.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - width :]


def unpack_fields(rows: np.ndarray) -> np.ndarray:
    full = np.zeros((rows.shape[0], 8), dtype=np.uint8)
    full[:, 8 - rows.shape[1] :] = rows
    return full.view(">u8").reshape(-1).astype(np.uint64)


def bucket_prefix(prefix: str, bits: int, ident: int, fmt: int) -> str:
    """The key prefix of the buckets of an index (``prefix``) in a layout."""
    if (bits, ident) == LEGACY:
        return f"{prefix}:b:"
    # Format 2 buckets have names of their own: a reshard converting a format 1
    # index to the same bucket count writes next to the buckets it reads.
    return f"{prefix}:b{bits}{'v2' if fmt == 2 else ''}:"


def temp_prefix(prefix: str, token: str) -> str:
    """The key prefix of one bulk load's temporary buckets (``P:bt{token}:``)."""
    return f"{prefix}:bt{token}:"


TEMP_MATCH = ":bt*"  # after the index prefix: every bulk load's temporary keys


def same_slot(key: str, suffix: str) -> str:
    """A key that Redis Cluster keeps in the same hash slot as ``key``: ``key`` itself
    as the hash tag (``{P:version}:dirty`` hashes as ``P:version`` does), or, when
    ``key`` already has a hash tag (a prefix like ``{yinji}``), ``key:suffix``."""
    start = key.find("{")
    if start >= 0 and key.find("}", start + 2) > start:
        return f"{key}:{suffix}"
    return f"{{{key}}}:{suffix}"
