"""The pinyin-initial (Daguan) engine: window fingerprints in the Redis inverted index.

Mothers are fingerprinted at the sparse stride of the parameters (windows overlap
by ``overlap``); a suspect is fingerprinted densely (every offset), so whichever way
a copy is shifted, every mother window inside it meets a suspect window that starts
at the same letter. A candidate's strength is the number of distinct suspect
fingerprints it shares, each weighted by 1/df (rarer fingerprints say more).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tracker.engines.base import Engine
from tracker.fingerprint import Fingerprinter, FingerprintParams, Reference
from tracker.index import RedisInvertedIndex


class DaguanEngine(Engine):
    name = "daguan"

    def __init__(
        self,
        redis: Any,
        prefix: str,
        *,
        params: FingerprintParams | dict[str, Any] | None = None,
        reference: Reference | dict[str, Any] | None = None,
        bucket_bits: int = 14,
        stop_df: int = 16,
        min_hits: int = 2,
        query_stride: int = 1,
    ) -> None:
        super().__init__(redis, prefix)
        # Options may come from the store's JSON meta (``yinji index configure``).
        if isinstance(params, dict):
            params = FingerprintParams(**params)
        if isinstance(reference, dict):
            reference = Reference.from_json(reference)
        self.fingerprinter = Fingerprinter(params, reference)
        self.index = RedisInvertedIndex(
            redis, f"{prefix}:{self.name}", bucket_bits=bucket_bits, stop_df=stop_df
        )
        self.min_hits = min_hits
        self.query_stride = query_stride

    @property
    def params(self) -> FingerprintParams:
        return self.fingerprinter.params

    def mother_fingerprints(self, text: str) -> np.ndarray:
        return np.unique(self.fingerprinter.fingerprints(text).values)

    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        self.index.add(items)

    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        self.index.remove(items)

    def candidates(self, text: str, *, limit: int = 20) -> list[tuple[int, float]]:
        dense = self.fingerprinter.fingerprints(text, stride=self.query_stride).values
        fps = np.unique(dense)
        fp_index, seqs, _stopped = self.index.lookup(fps)
        if seqs.size == 0:
            return []
        df = np.bincount(fp_index, minlength=fps.size)[fp_index]
        weights = 1.0 / df
        order = np.unique(seqs, return_inverse=True)
        uniq_seqs, inverse = order
        hits = np.bincount(inverse)
        strength = np.bincount(inverse, weights=weights)
        keep = hits >= self.min_hits
        ranked = sorted(
            zip(uniq_seqs[keep].tolist(), strength[keep].tolist(), strict=True),
            key=lambda x: -x[1],
        )
        return [(int(s), float(w)) for s, w in ranked[:limit]]

    def clear(self) -> None:
        self.index.clear()

    def stats(self) -> dict[str, Any]:
        return {"engine": self.name, "params": self.params.to_dict(), **self.index.stats()}
