"""MinHash engine: MinHash signatures of a whole text and of its windows, LSH in Redis.

Fingerprints of a text (the array the store keeps): uint32, ``rows * num_perm`` values,
row-major; reshape to ``(-1, num_perm)``. Row 0 is the signature of the whole normalized
text (letters and digits only, lower-cased), rows 1.. one per content-defined window
(``tracker.simhash.content_windows`` with ~500-character windows starting every ~250),
all over 5-character shingles. Content-defined windows put a copied passage into the same
windows in suspect and mother whatever its offset (see ``simhash_engine``), so an
excerpt pasted into unrelated text is found with an estimated Jaccard near 1.

Index (all keys under ``f"{prefix}:minhash:"``):

- ``lsh:b{band}:{hash}``: ``RedisLSH`` band buckets of the ids ``seq << 20 | row``, bands
  and rows chosen by ``choose_bands(num_perm, threshold=0.3)`` (37 x 3 for 128
  permutations), so a window pair with Jaccard 0.3 is a candidate with probability ~0.63,
  0.5 with ~0.99;
- ``sig:{seq}``: the mother's signatures, to score candidates.

``candidates`` queries every suspect row, then scores each candidate mother by the largest
estimated Jaccard between any suspect row and any of its rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tracker.engines.base import Engine
from tracker.minhash import MinHasher, RedisLSH, choose_bands, jaccard_matrix
from tracker.simhash import content_windows

ROW_BITS = 20
ROW_MASK = (1 << ROW_BITS) - 1


class MinHashEngine(Engine):
    name: ClassVar[str] = "minhash"
    dtype: ClassVar[np.dtype[Any]] = np.dtype(np.uint32)

    def __init__(self, redis: Any, prefix: str, *, num_perm: int = 128, seed: int = 1,
                 shingle: int = 5, threshold: float = 0.3, window_gap: int = 250,
                 window_min: int = 250, window_max: int = 1000,
                 max_candidates: int = 200) -> None:
        super().__init__(redis, prefix)
        self.base = f"{prefix}:{self.name}"
        self.hasher = MinHasher(num_perm, seed, shingle, scheme="affine32", normalize="alnum")
        self.num_perm = num_perm
        self.threshold = threshold
        self.bands, self.rows = choose_bands(num_perm, threshold)
        self.lsh = RedisLSH(redis, self.base, num_perm, self.bands, self.rows)
        self.window_gap, self.window_min, self.window_max = window_gap, window_min, window_max
        self.max_candidates = max_candidates

    # -- fingerprints ---------------------------------------------------------------------
    def signatures(self, text: str) -> np.ndarray:
        """``(rows, num_perm)`` signatures: whole text, then the windows (none if empty)."""
        prepared = self.hasher.prepare(text)
        if not prepared:
            return np.zeros((0, self.num_perm), dtype=np.uint32)
        spans = [(0, len(prepared))]
        spans += content_windows(prepared, gap=self.window_gap, min_len=self.window_min,
                                 max_len=self.window_max)[: ROW_MASK]
        return self.hasher.spans_signatures(prepared, spans)

    def mother_fingerprints(self, text: str) -> np.ndarray:
        return self.signatures(text).ravel()

    def _rows(self, fps: np.ndarray) -> np.ndarray:
        arr = np.asarray(fps, dtype=np.uint32)
        if arr.size % self.num_perm:
            raise ValueError(f"fingerprints are rows of {self.num_perm} values")
        return arr.reshape(-1, self.num_perm)

    def _sig_key(self, seq: int) -> str:
        return f"{self.base}:sig:{seq}"

    # -- index ----------------------------------------------------------------------------
    def _postings(self, items: Sequence[tuple[int, np.ndarray]]
                  ) -> list[tuple[int, np.ndarray]]:
        out = []
        for seq, fps in items:
            rows = self._rows(fps)
            if len(rows) > ROW_MASK + 1:
                raise ValueError(f"at most {ROW_MASK + 1} signatures per mother")
            out += [((seq << ROW_BITS) | r, row) for r, row in enumerate(rows)]
        return out

    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        if not items:
            return
        self.lsh.insert_many(self._postings(items))
        pipe = self.redis.pipeline(transaction=False)
        for seq, fps in items:
            pipe.set(self._sig_key(seq), self._rows(fps).astype("<u4").tobytes())
        pipe.execute()

    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        if not items:
            return
        self.lsh.remove_many(self._postings(items))
        pipe = self.redis.pipeline(transaction=False)
        for seq, _ in items:
            pipe.delete(self._sig_key(seq))
        pipe.execute()

    def candidates(self, text: str, *, limit: int = 20) -> list[tuple[int, float]]:
        sigs = self.signatures(text)
        if len(sigs) == 0:
            return []
        votes: dict[int, int] = {}
        for found in self.lsh.query_many(sigs):
            for id_ in found:
                seq = id_ >> ROW_BITS
                votes[seq] = votes.get(seq, 0) + 1
        if not votes:
            return []
        # Score the most-voted mothers only (a bounded amount of work per suspect).
        seqs = sorted(votes, key=lambda s: (-votes[s], s))[: self.max_candidates]
        pipe = self.redis.pipeline(transaction=False)
        for seq in seqs:
            pipe.get(self._sig_key(seq))
        scored = []
        for seq, blob in zip(seqs, pipe.execute(), strict=True):
            if not blob:
                continue  # removed meanwhile
            mother = np.frombuffer(blob, dtype="<u4").reshape(-1, self.num_perm)
            scored.append((seq, float(jaccard_matrix(sigs, mother).max())))
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:limit]

    def clear(self) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for n, key in enumerate(self.redis.scan_iter(match=f"{self.base}:*", count=1000), 1):
            pipe.delete(key)
            if n % 1000 == 0:
                pipe.execute()
        pipe.execute()

    def stats(self) -> dict[str, Any]:
        mothers = signatures = keys = 0
        sig_prefix = f"{self.base}:sig:".encode()
        pipe = self.redis.pipeline(transaction=False)
        for key in self.redis.scan_iter(match=f"{self.base}:*", count=1000):
            keys += 1
            raw = key if isinstance(key, bytes) else key.encode()
            if raw.startswith(sig_prefix):
                mothers += 1
                pipe.strlen(key)
        signatures = sum(pipe.execute()) // (4 * self.num_perm)
        return {"engine": self.name, "mothers": mothers, "signatures": signatures,
                "keys": keys, "num_perm": self.num_perm, "bands": self.bands,
                "rows": self.rows}
