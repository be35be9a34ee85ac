"""Locality-sensitive hashing of MinHash signatures: band hashing, the choice of bands
and rows for a Jaccard threshold, and the Redis LSH index (the minhash engine's).

A signature of ``num_perm`` values is cut into ``bands`` bands of ``rows`` values; two
signatures *meet* when one band is equal in both, which happens with probability
``1 - (1 - s**rows)**bands`` for Jaccard similarity ``s``: a steep S-curve around the
threshold ``choose_bands`` aims at. Signatures come from ``tracker.fingerprints.minhash.MinHasher``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tracker.common.records import JSONObject
from tracker.fingerprints.simhash import _hash_columns
from tracker.indexes.redis_client import delete_matching

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

__all__ = ["LSH", "RedisLSH", "choose_bands"]


def _lsh_errors(
    threshold: float, num_perm: int, fp_weight: float, fn_weight: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted false positive + false negative mass of every (bands, rows) with
    ``bands * rows <= num_perm``: the integrals of datasketch's ``_optimal_param``.
    The integrands are polynomials of degree <= num_perm, so Gauss-Legendre with
    ``num_perm // 2 + 1`` nodes is exact (no scipy needed)."""
    bs, rs = [], []
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            bs.append(b)
            rs.append(r)
    b_arr = np.array(bs, dtype=np.float64)[:, None]
    r_arr = np.array(rs, dtype=np.float64)[:, None]
    nodes, wts = np.polynomial.legendre.leggauss(max(8, num_perm // 2 + 1))

    def integral(lo: float, hi: float, false_negative: bool) -> np.ndarray:
        s = (hi - lo) / 2 * nodes + (hi + lo) / 2
        p = 1 - (1 - s[None, :] ** r_arr) ** b_arr  # P(candidate | similarity s)
        f = 1 - p if false_negative else p
        return (f * wts[None, :]).sum(axis=1) * (hi - lo) / 2

    fp = integral(0.0, threshold, False)
    fn = integral(threshold, 1.0, True)
    return np.array(bs), np.array(rs), fp * fp_weight + fn * fn_weight


def choose_bands(
    num_perm: int,
    threshold: float,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> tuple[int, int]:
    """``(bands, rows)`` minimizing the weighted false positive + negative probability
    mass around ``threshold`` (datasketch's ``_optimal_param``; first minimum in the same
    (bands, rows) order)."""
    if not 0.0 < threshold < 1.0:
        raise ValueError("threshold must be in (0, 1)")
    bs, rs, err = _lsh_errors(threshold, num_perm, false_positive_weight, false_negative_weight)
    best = int(np.argmin(err))
    return int(bs[best]), int(rs[best])


class LSH:
    """Band hashing shared by the LSH indexes: ``bands`` bands of ``rows`` values."""

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        if bands * rows > num_perm or bands < 1 or rows < 1:
            raise ValueError(f"need bands * rows <= num_perm, got {bands}x{rows} > {num_perm}")
        self.num_perm, self.bands, self.rows = num_perm, bands, rows

    def band_hashes(self, sigs: np.ndarray) -> np.ndarray:
        """64-bit hash of each band of each signature: shape ``(n, bands)``."""
        s = np.atleast_2d(np.asarray(sigs))
        if s.shape[1] != self.num_perm:
            raise ValueError(f"signatures must have {self.num_perm} values")
        used = s[:, : self.bands * self.rows].astype(np.uint64).reshape(-1, self.rows)
        h = _hash_columns([used[:, j] for j in range(self.rows)], len(used), 0xCBF29CE484222325)
        return h.reshape(len(s), self.bands)


class RedisLSH(LSH):
    """LSH buckets in Redis: one set per band bucket,
    ``f"{prefix}:lsh:b{band}:{band_hash:016x}"`` holding the int ids whose signature has
    that band. Entries (``tracker.indexes.base.Index``) are ``(id, signature)``; a
    *posting* is one id in one band bucket, ``bands`` per entry. Single-key commands in
    non-transactional pipelines only (Redis Cluster safe); SADD/SREM make add and remove
    idempotent."""

    def __init__(
        self, redis: RedisClient, prefix: str, num_perm: int, bands: int, rows: int
    ) -> None:
        super().__init__(num_perm, bands, rows)
        # Typed loosely inside: redis-py's stubs of RedisCluster lack register_script.
        self.redis: Any = cast(Any, redis)
        self.base = f"{prefix}:lsh"

    def add(self, items: Iterable[tuple[int, np.ndarray]]) -> int:
        """Put each id in its signature's band buckets; returns how many postings were new."""
        return self._write(items, "sadd")

    def remove(self, items: Iterable[tuple[int, np.ndarray]]) -> int:
        """Take each id out of its signature's band buckets; returns how many postings
        there were."""
        return self._write(items, "srem")

    def _write(self, items: Iterable[tuple[int, np.ndarray]], op: str) -> int:
        entries = list(items)
        if not entries:
            return 0
        ids = [int(i) for i, _ in entries]
        hashes = self.band_hashes(np.stack([np.asarray(s) for _, s in entries]))
        buckets: dict[str, list[int]] = defaultdict(list)
        for i, row in zip(ids, hashes.tolist(), strict=True):
            for b, h in enumerate(row):
                buckets[self._bucket_key(b, h)].append(i)
        pipe = self.redis.pipeline(transaction=False)
        for key, members in buckets.items():
            getattr(pipe, op)(key, *members)
        return sum(int(n) for n in pipe.execute())

    def _bucket_key(self, band: int, band_hash: int) -> str:
        return f"{self.base}:b{band}:{band_hash:016x}"

    def query(self, sig: np.ndarray) -> set[int]:
        """Ids sharing at least one band with ``sig``."""
        return self.query_many(np.atleast_2d(sig))[0]

    def query_many(self, sigs: np.ndarray) -> list[set[int]]:
        """``query`` of each signature (rows of ``sigs``), in one pipeline."""
        hashes = self.band_hashes(sigs)
        pipe = self.redis.pipeline(transaction=False)
        for row in hashes.tolist():
            for b, h in enumerate(row):
                pipe.smembers(self._bucket_key(b, h))
        replies = pipe.execute()
        out: list[set[int]] = []
        for q in range(len(hashes)):
            found: set[int] = set()
            for members in replies[q * self.bands : (q + 1) * self.bands]:
                found.update(int(m) for m in members)
            out.append(found)
        return out

    def clear(self) -> int:
        """Delete every key of this index (SCAN on its prefix); returns how many."""
        return delete_matching(self.redis, f"{self.base}:*")

    def stats(self) -> JSONObject:
        buckets = sum(1 for _ in self.redis.scan_iter(match=f"{self.base}:*", count=1000))
        return {
            "buckets": buckets,
            "num_perm": self.num_perm,
            "bands": self.bands,
            "rows": self.rows,
        }
