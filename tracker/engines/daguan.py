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

from tracker.engines.base import Candidate, Engine
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
    def window(self) -> int:
        """Initials one fingerprint covers (the verifier's evidence span)."""
        return self.fingerprinter.params.granularity

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
        return [(c.seq, c.strength) for c in self.candidates_with_evidence(text, limit=limit)]

    def candidates_with_evidence(self, text: str, *, limit: int = 20) -> list[Candidate]:
        dense = self.fingerprinter.fingerprints(text, stride=self.query_stride)
        fps, inverse = np.unique(dense.values, return_inverse=True)
        fp_index, seqs, _stopped = self.index.lookup(fps)
        if seqs.size == 0:
            return []
        # Postings per dense window: window w has the postings of its fingerprint.
        df_fp = np.bincount(fp_index, minlength=fps.size)
        df_pos = df_fp[inverse]
        # Mothers hold a shared passage at arbitrary phases of their sparse windows, so
        # one exact window's df undercounts boilerplate by up to the stride. Summing df
        # over a stride of consecutive dense windows counts each such mother once.
        s = max(1, self.params.stride // self.query_stride)
        csum = np.concatenate([[0], np.cumsum(df_pos)])
        n = df_pos.size
        back = csum[np.arange(1, n + 1)] - csum[np.maximum(np.arange(1, n + 1) - s, 0)]
        fwd = csum[np.minimum(np.arange(n) + s, n)] - csum[np.arange(n)]
        common_pos = np.maximum(back, fwd) > self.index.stop_df
        # (position, seq) pairs of windows that are not common.
        order = np.argsort(fp_index, kind="stable")
        fp_sorted, seq_sorted = fp_index[order], seqs[order]
        starts_fp = np.searchsorted(fp_sorted, np.arange(fps.size))
        pos = np.flatnonzero(~common_pos & (df_pos > 0))
        if pos.size == 0:
            return []
        reps = df_pos[pos]
        pair_pos = np.repeat(pos, reps)
        within = np.arange(pair_pos.size) - np.repeat(np.cumsum(reps) - reps, reps)
        pair_seq = seq_sorted[starts_fp[inverse[pair_pos]] + within]
        pair_fp = inverse[pair_pos]
        # Strength: distinct fingerprints shared, each weighted by 1/df.
        key = np.unique(pair_seq.astype(np.int64) << 32 | pair_fp.astype(np.int64))
        k_seq = (key >> 32).astype(np.int64)
        k_fp = (key & 0xFFFFFFFF).astype(np.int64)
        uniq_seqs, which = np.unique(k_seq, return_inverse=True)
        hits = np.bincount(which)
        strength = np.bincount(which, weights=1.0 / df_fp[k_fp])
        ranked = [i for i in np.argsort(-strength, kind="stable") if hits[i] >= self.min_hits]
        common = dense.starts[common_pos]
        out: list[Candidate] = []
        pair_order = np.argsort(pair_seq, kind="stable")
        ps_sorted = pair_seq[pair_order]
        for i in ranked[:limit]:
            seq = int(uniq_seqs[i])
            lo = np.searchsorted(ps_sorted, seq, side="left")
            hi = np.searchsorted(ps_sorted, seq, side="right")
            # Suspect window starts (in initials) that hit this mother: the evidence.
            positions = np.unique(dense.starts[pair_pos[pair_order[lo:hi]]])
            out.append(Candidate(seq, float(strength[i]), positions, common))
        return out

    def clear(self) -> None:
        self.index.clear()

    def stats(self) -> dict[str, Any]:
        return {"engine": self.name, "params": self.params.to_dict(), **self.index.stats()}
