"""MinHash signatures of character shingles, vectorized with numpy.

LSH banding of the signatures, and the Redis LSH index, are in ``tracker.indexes.lsh``.

A text's set of character ``shingle``-grams (of the text with whitespace removed, by
default) is sketched by ``num_perm`` minima of hashed shingles; the fraction of equal
minima of two signatures estimates the Jaccard similarity of the two sets.

Permutations follow datasketch (``datasketch.MinHash``, same ``seed`` -> same ``a``, ``b``
drawn from ``np.random.RandomState(seed)``), so given the same input hashes our signatures
are *bit-identical* to datasketch's; the tests check that. Two schemes:

- ``"affine32"`` (default, datasketch >= 2.0's default): the 32-bit shingle hash is pre-mixed
  with MurmurHash3's ``fmix32``, then ``a * h + b mod 2**32`` with odd ``a``: a bijection,
  so the permutation adds no collisions, and all arithmetic is uint32 (half the memory
  traffic of uint64), which is where our speed comes from.
- ``"legacy"`` (datasketch < 2.0 and its ``scheme="legacy"``): universal hashing
  ``(a * h + b) mod (2**61 - 1)`` truncated to 32 bits. As in datasketch the product
  ``a * h`` (61 x 32 bits) wraps modulo ``2**64`` before the reduction: the formula is
  mirrored, wrap included, to stay bit-compatible. The modulo is done with the Mersenne
  identity ``x mod (2**61-1) = (x & p) + (x >> 61)`` (then one conditional subtraction)
  instead of a slow 64-bit division. datasketch moved away from it because the fold from the
  61-bit range to 32 bits is not a bijection and inflates estimates on very large sets.

Shingles are hashed by :func:`tracker.fingerprints.simhash.ngram_hashes` (FNV-1a over code points +
fmix64, low 32 bits), all shingles of a text in a few numpy passes: no Python call per
shingle (datasketch calls sha1 once per shingle, which dominates its time).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from tracker.fingerprints.simhash import ngram_hashes
from tracker.fingerprints.simhash import normalize as _normalize_alnum
from tracker.text.units import unit_letters as _initials

__all__ = ["MinHasher", "exact_jaccard", "hash32", "jaccard", "jaccard_matrix", "shingle_hashes32"]

_MERSENNE = (1 << 61) - 1
_MAX32 = (1 << 32) - 1
_WS = re.compile(r"\s+")
_SCHEMES = ("affine32", "legacy")


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def shingle_hashes32(text: str, k: int) -> np.ndarray:
    """32-bit hashes (uint32) of every ``k``-character shingle of ``text`` (with repeats);
    a non-empty text shorter than ``k`` is one shingle."""
    return ngram_hashes(text, k)[:, 0].astype(np.uint32)


def hash32(shingle: str | bytes) -> int:
    """The 32-bit hash of one shingle (as :func:`shingle_hashes32`), e.g. as datasketch's
    ``hashfunc`` to reproduce our signatures with datasketch."""
    if isinstance(shingle, bytes):
        shingle = shingle.decode("utf-8")
    return int(ngram_hashes(shingle, max(len(shingle), 1))[0, 0]) & _MAX32


def jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Estimated Jaccard similarity: the fraction of equal signature values."""
    a, b = np.asarray(sig_a), np.asarray(sig_b)
    if a.shape != b.shape:
        raise ValueError("signatures differ in size")
    return float(np.count_nonzero(a == b)) / a.size if a.size else 0.0


def jaccard_matrix(sigs_a: np.ndarray, sigs_b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard of every row of ``sigs_a`` with every row of ``sigs_b``."""
    a, b = np.atleast_2d(sigs_a), np.atleast_2d(sigs_b)
    if a.shape[1] != b.shape[1]:
        raise ValueError("signatures differ in size")
    out = np.empty((len(a), len(b)), dtype=np.float64)
    for i, row in enumerate(a):  # rows x (rows_b x perms) keeps memory small
        out[i] = (b == row).mean(axis=1)
    return out


def exact_jaccard(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    sa, sb = set(a), set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 1.0


class MinHasher:
    """``num_perm`` MinHash permutations over character ``shingle``-grams.

    ``normalize``: ``"whitespace"`` removes whitespace (default), ``"alnum"`` keeps only
    letters and digits, lower-cased (:func:`tracker.fingerprints.simhash.normalize`), ``"initials"``
    shingles the pinyin-initial stream (:func:`tracker.text.pinyin.initials`: homophones and
    traditional forms give the same shingles, punctuation and Latin text are dropped),
    ``None`` keeps the text as is. Signatures are uint32 (``"affine32"``) or uint64 holding
    32-bit values (``"legacy"``, as datasketch); an empty text gives the all-``max``
    signature.
    """

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        shingle: int = 5,
        *,
        scheme: str = "affine32",
        normalize: str | None = "whitespace",
    ) -> None:
        if num_perm < 1:
            raise ValueError("num_perm must be positive")
        if shingle < 1:
            raise ValueError("shingle must be positive")
        if scheme not in _SCHEMES:
            raise ValueError(f"scheme must be one of {_SCHEMES}, got {scheme!r}")
        if normalize not in ("whitespace", "alnum", "initials", None):
            raise ValueError("normalize must be 'whitespace', 'alnum', 'initials' or None")
        self.num_perm = num_perm
        self.seed = seed
        self.shingle = shingle
        self.scheme = scheme
        self.normalize = normalize
        gen = np.random.RandomState(seed)
        a: np.ndarray
        b: np.ndarray
        self.dtype: np.dtype[Any]
        if scheme == "affine32":
            # datasketch 2.0 _init_permutations, affine32: odd a, any b
            a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
            b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
            self.dtype = np.dtype(np.uint32)
        else:
            # datasketch legacy: (a, b) drawn pairwise, a in [1, p), b in [0, p)
            pairs = np.array(
                [
                    (
                        gen.randint(1, _MERSENNE, dtype=np.uint64),
                        gen.randint(0, _MERSENNE, dtype=np.uint64),
                    )
                    for _ in range(num_perm)
                ],
                dtype=np.uint64,
            )
            a, b = pairs[:, 0].copy(), pairs[:, 1].copy()
            self.dtype = np.dtype(np.uint64)
        self.a, self.b = a, b
        self._empty = np.full(num_perm, _MAX32, dtype=self.dtype)

    def __repr__(self) -> str:
        return (
            f"MinHasher(num_perm={self.num_perm}, seed={self.seed}, "
            f"shingle={self.shingle}, scheme={self.scheme!r})"
        )

    # -- shingles --------------------------------------------------------------------------
    def prepare(self, text: str) -> str:
        """The text the shingles are taken from."""
        if self.normalize == "whitespace":
            return _WS.sub("", text)
        if self.normalize == "alnum":
            return _normalize_alnum(text)
        if self.normalize == "initials":
            return _initials(text)
        return text

    def shingles(self, text: str) -> list[str]:
        t = self.prepare(text)
        k = self.shingle
        if not t:
            return []
        return [t] if len(t) < k else [t[i : i + k] for i in range(len(t) - k + 1)]

    def hashes(self, text: str) -> np.ndarray:
        """Distinct 32-bit shingle hashes of a text (MinHash is a set sketch)."""
        return np.unique(shingle_hashes32(self.prepare(text), self.shingle))

    # -- signatures ------------------------------------------------------------------------
    def _permuted(self, hv: np.ndarray) -> np.ndarray:
        """``(num_perm, rows)`` permuted values of 32-bit input hashes.

        Permutations along the first axis: each row is one contiguous vector times a
        scalar, and the minimum runs along contiguous memory (about 1.5x faster than the
        transposed layout datasketch uses)."""
        if self.scheme == "affine32":
            h = _fmix32(hv.astype(np.uint32, copy=False))[None, :]
            out = self.a[:, None] * h  # uint32: wraps mod 2**32 as intended
            out += self.b[:, None]
            return out
        h = hv.astype(np.uint64)[None, :]
        x = self.a[:, None] * h  # wraps mod 2**64, as datasketch's legacy formula does
        x += self.b[:, None]
        p = np.uint64(_MERSENNE)
        y = x & p
        x >>= np.uint64(61)
        y += x  # == x mod p, or x mod p + p
        y -= np.where(y >= p, p, np.uint64(0))
        y &= np.uint64(_MAX32)
        return y

    def signature_of_hashes(self, hv: np.ndarray, block: int = 4096) -> np.ndarray:
        """Signature of a set given as 32-bit hashes (repeats allowed: they change no
        minimum, so nothing is deduplicated)."""
        if len(hv) == 0:
            return self._empty.copy()
        sig = self._permuted(hv[:block]).min(axis=1)
        for s in range(block, len(hv), block):
            np.minimum(sig, self._permuted(hv[s : s + block]).min(axis=1), out=sig)
        return sig

    def _raw_hashes(self, text: str) -> np.ndarray:
        return shingle_hashes32(self.prepare(text), self.shingle)

    def signature(self, text: str) -> np.ndarray:
        """The MinHash signature of one text, shape ``(num_perm,)``."""
        return self.signature_of_hashes(self._raw_hashes(text))

    def signatures(self, texts: Sequence[str], block: int = 4096) -> np.ndarray:
        """Signatures of many texts, shape ``(len(texts), num_perm)``.

        Shingle hashes of consecutive documents are stacked into blocks of about ``block``
        rows (a few MB: the permuted block stays in cache): one permutation pass and one
        ``np.minimum.reduceat`` per block, so per-document Python overhead is small."""
        out = np.empty((len(texts), self.num_perm), dtype=self.dtype)
        group: list[np.ndarray] = []
        members: list[int] = []
        rows = 0

        def flush() -> None:
            nonlocal rows
            if not group:
                return
            lengths = np.fromiter((len(g) for g in group), dtype=np.int64, count=len(group))
            starts = np.cumsum(lengths) - lengths
            perm = self._permuted(np.concatenate(group))
            out[members] = np.minimum.reduceat(perm, starts, axis=1).T
            group.clear()
            members.clear()
            rows = 0

        for i, text in enumerate(texts):
            hv = self._raw_hashes(text)
            if len(hv) == 0:
                out[i] = self._empty
            elif len(hv) >= block:
                out[i] = self.signature_of_hashes(hv, block)
            else:
                if rows + len(hv) > block:
                    flush()
                group.append(hv)
                members.append(i)
                rows += len(hv)
        flush()
        return out

    def spans_signatures(self, prepared: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """Signatures of many spans ``[s, e)`` of one *prepared* text: shingles hashed once,
        each span's shingles are those starting in ``[s, e - shingle]``."""
        out = np.empty((len(spans), self.num_perm), dtype=self.dtype)
        k = self.shingle
        hv = shingle_hashes32(prepared, k) if len(prepared) >= k else None
        for i, (s, e) in enumerate(spans):
            if hv is None or e - s < k:
                out[i] = self.signature_of_hashes(shingle_hashes32(prepared[s:e], k))
            else:
                out[i] = self.signature_of_hashes(hv[s : e - k + 1])
        return out
