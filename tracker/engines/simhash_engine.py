"""SimHash engine: 64-bit SimHashes of a whole text and of its windows, in a Redis
permuted-table Hamming index (``tracker.hamming_index``), ``k = 3``.

Fingerprints of a text (the array the store keeps, uint64):

- row 0: the SimHash of the whole normalized text (``char3`` features, tf weights);
- rows 1..: one SimHash per *content-defined* window of the normalized text
  (``tracker.simhash.content_windows``: ~300 characters, a new window every ~150).

A whole-text SimHash only finds near-complete copies: an excerpt pasted into unrelated
text changes most of the whole-text features. The windows find excerpts. They are
content-defined rather than at fixed offsets so that a copied passage produces *the same*
windows in the suspect as in the mother whatever the offset it lands at (with fixed
offsets a window shifted by 25 characters of 300 already differs by ~8 bits, beyond
``k``); so suspects use the very same windows as mothers, no denser stride is needed,
and an untouched copied window is found at distance 0, a lightly edited one within 3.

Index ids are ``seq << 20 | row``. ``candidates`` looks up every suspect fingerprint and
scores each mother by the number of *distinct* mother fingerprints (whole text or windows)
found within ``k``: the number of copied ~150-character steps, roughly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tracker.engines.base import Engine
from tracker.hamming_index import RedisHammingIndex
from tracker.simhash import content_windows, normalize, simhash_spans

ROW_BITS = 20
ROW_MASK = (1 << ROW_BITS) - 1


class SimHashEngine(Engine):
    name: ClassVar[str] = "simhash"
    dtype: ClassVar[np.dtype[Any]] = np.dtype(np.uint64)

    def __init__(self, redis: Any, prefix: str, *, k: int = 3, blocks: int | None = None,
                 window_gap: int = 150, window_min: int = 150, window_max: int = 600,
                 ngram: int = 3) -> None:
        super().__init__(redis, prefix)
        self.k = k
        self.base = f"{prefix}:{self.name}"
        self.index = RedisHammingIndex(redis, self.base, name="main", k=k, blocks=blocks)
        self.window_gap, self.window_min, self.window_max = window_gap, window_min, window_max
        self.ngram = ngram

    # -- fingerprints ---------------------------------------------------------------------
    def fingerprints(self, text: str) -> np.ndarray:
        """Whole-text SimHash then one per content-defined window (empty for empty text)."""
        norm = normalize(text)
        if not norm:
            return np.zeros(0, dtype=np.uint64)
        spans = [(0, len(norm))]
        spans += content_windows(norm, gap=self.window_gap, min_len=self.window_min,
                                 max_len=self.window_max)[: ROW_MASK]
        return simhash_spans(norm, spans, n=self.ngram).astype(np.uint64)

    def mother_fingerprints(self, text: str) -> np.ndarray:
        return self.fingerprints(text)

    # -- index ----------------------------------------------------------------------------
    @staticmethod
    def _ids(seq: int, count: int) -> np.ndarray:
        if count > ROW_MASK + 1:
            raise ValueError(f"at most {ROW_MASK + 1} fingerprints per mother")
        return (np.int64(seq) << np.int64(ROW_BITS)) | np.arange(count, dtype=np.int64)

    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        if not items:
            return
        ids = np.concatenate([self._ids(seq, len(fps)) for seq, fps in items])
        fps = np.concatenate([np.asarray(fps, dtype=np.uint64) for _, fps in items])
        self.index.add(ids, fps)

    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        if not items:
            return
        self.index.remove(np.concatenate([self._ids(seq, len(fps)) for seq, fps in items]))

    def candidates(self, text: str, *, limit: int = 20) -> list[tuple[int, float]]:
        fps = self.fingerprints(text)
        if len(fps) == 0:
            return []
        found: dict[int, set[int]] = defaultdict(set)
        for hits in self.index.query_many(fps):
            for id_, _dist in hits:
                found[id_ >> ROW_BITS].add(id_ & ROW_MASK)
        ranked = sorted(((seq, float(len(rows))) for seq, rows in found.items()),
                        key=lambda x: (-x[1], x[0]))
        return ranked[:limit]

    def clear(self) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for n, key in enumerate(self.redis.scan_iter(match=f"{self.base}:*", count=1000), 1):
            pipe.delete(key)
            if n % 1000 == 0:
                pipe.execute()
        pipe.execute()

    def stats(self) -> dict[str, Any]:
        keys = sum(1 for _ in self.redis.scan_iter(match=f"{self.base}:*", count=1000))
        return {"engine": self.name, "fingerprints": len(self.index), "keys": keys,
                "k": self.k, "tables": len(self.index.layout.tables)}
