"""MinHash engine: MinHash signatures of a whole text and of its windows, LSH in Redis.

Text normalization (``normalization=``), as in ``simhash_engine``:

- ``"initials"`` (default): shingles of ``shingle`` (default 8) pinyin initials
  (``MinHasher(normalize="initials")``): homophone and simplified/traditional copies have
  the very same shingle sets as their mother, punctuation and Latin watermarks are gone;
- ``"chars"``: shingles of ``shingle`` (default 5) characters of the text lower-cased with
  only letters and digits kept.

Fingerprints of a text (the array the store keeps): uint32, ``rows * num_perm`` values,
row-major; reshape to ``(-1, num_perm)``. Row 0 is the signature of the whole normalized
stream, rows 1.. one per content-defined window (``tracker.simhash.content_windows``; in
initials mode 48 to 256 letters, a new one every ~32 on average). Content-defined windows put a
copied passage into the same windows in suspect and mother whatever its offset (see
``simhash_engine``), so an excerpt pasted into unrelated text is found with an estimated
Jaccard near 1, and a window that straddles the edge of a copy still shares part of its
shingles.

Index (all keys under ``f"{prefix}:minhash:"``):

- ``lsh:b{band}:{hash}``: ``RedisLSH`` band buckets of the ids ``seq << 20 | row``, bands
  and rows chosen by ``choose_bands(num_perm, threshold)`` (threshold 0.2 with 64
  permutations: 28 bands of 2 rows, so a window pair with Jaccard 0.2 meets in a bucket
  with probability ~0.68, 0.3 with ~0.93, 0.5 with ~1.0; a window straddling the edge of
  a copy or holding a few edits still meets its mother window; chars mode keeps the
  original 128 permutations at threshold 0.3: 37 bands of 3 rows);
- ``sig:{seq}``: the mother's signatures (row-major), to score candidates.

``candidates`` queries every suspect row; the mothers found by the most suspect rows
(``max_candidates`` at most) are scored by the largest estimated Jaccard between a suspect
row and one of the mother's rows it met in a bucket (only those rows are read, with
GETRANGE). A mother scoring below ``min_jaccard`` is dropped: it met the suspect by chance
in a bucket. A suspect row whose buckets hold more than ``common_df`` mothers is
boilerplate and counts for none. In initials mode a ``Candidate`` carries as evidence every
initial of the suspect windows that met it with at least ``min_jaccard`` (the whole text
only when no window did) and as common positions those of the boilerplate rows (see
``tracker.engines.base.Candidate``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tracker.engines.base import Candidate
from tracker.engines.windows import (
    ROW_BITS,
    ROW_MASK,
    WindowedEngine,
    check_normalization,
    span_evidence,
)
from tracker.minhash import MinHasher, RedisLSH, choose_bands

# Per normalization: shingle, window gap, window min length, window max length, anchor n,
# permutations, LSH threshold, min Jaccard. Chars: the original engine, unchanged (its
# stored fingerprints stay valid). Initials: chosen on bench/eval.py, see docs/ENGINES.md
# (shorter windows fit inside short excerpts; Jaccard tolerates edits and the straddled
# edges of a copy, so they need not be as short as SimHash's; 64 permutations found the
# same cases as 128 at less cost; threshold 0.2 found edited excerpts that 0.3 missed).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "chars": {
        "shingle": 5,
        "window_gap": 250,
        "window_min": 250,
        "window_max": 1000,
        "anchor": 5,
        "num_perm": 128,
        "threshold": 0.3,
        "min_jaccard": 0.0,
    },
    "initials": {
        "shingle": 8,
        "window_gap": 32,
        "window_min": 48,
        "window_max": 256,
        "anchor": 5,
        "num_perm": 64,
        "threshold": 0.2,
        "min_jaccard": 0.2,
    },
}
# MinHasher's normalize for each engine normalization.
_HASHER_NORMALIZE = {"initials": "initials", "chars": "alnum"}


class MinHashEngine(WindowedEngine):
    name: ClassVar[str] = "minhash"
    dtype: ClassVar[np.dtype[Any]] = np.dtype(np.uint32)

    def __init__(
        self,
        redis: Any,
        prefix: str,
        *,
        normalization: str = "initials",
        num_perm: int | None = None,
        seed: int = 1,
        shingle: int | None = None,
        threshold: float | None = None,
        window_gap: int | None = None,
        window_min: int | None = None,
        window_max: int | None = None,
        anchor: int | None = None,
        min_jaccard: float | None = None,
        common_df: int = 16,
        max_candidates: int = 200,
    ) -> None:
        """Window sizes are in units of the stream (initials or characters); ``None`` takes
        the default of the normalization (``_DEFAULTS``). A suspect row sharing buckets with
        the rows of more than ``common_df`` mothers is boilerplate: it makes no candidate."""
        super().__init__(redis, prefix)
        check_normalization(normalization)
        self.normalization = normalization
        d = _DEFAULTS[normalization]
        self.base = f"{prefix}:{self.name}"
        self.shingle = d["shingle"] if shingle is None else shingle
        self.num_perm = d["num_perm"] if num_perm is None else num_perm
        self.hasher = MinHasher(
            self.num_perm,
            seed,
            self.shingle,
            scheme="affine32",
            normalize=_HASHER_NORMALIZE[normalization],
        )
        self.threshold = d["threshold"] if threshold is None else threshold
        self.bands, self.rows = choose_bands(self.num_perm, self.threshold)
        self.lsh = RedisLSH(redis, self.base, self.num_perm, self.bands, self.rows)
        self.window_gap = d["window_gap"] if window_gap is None else window_gap
        self.window_min = d["window_min"] if window_min is None else window_min
        self.window_max = d["window_max"] if window_max is None else window_max
        self.anchor = d["anchor"] if anchor is None else anchor
        self.min_jaccard = d["min_jaccard"] if min_jaccard is None else min_jaccard
        self.common_df = common_df
        self.max_candidates = max_candidates

    # -- fingerprints ---------------------------------------------------------------------
    def _signatures(self, prepared: str, spans: list[tuple[int, int]]) -> np.ndarray:
        if not spans:
            return np.zeros((0, self.num_perm), dtype=np.uint32)
        return self.hasher.spans_signatures(prepared, spans)

    def signatures(self, text: str) -> np.ndarray:
        """``(rows, num_perm)`` signatures: whole text, then the windows (none if empty)."""
        prepared = self.hasher.prepare(text)
        return self._signatures(prepared, self.spans(prepared))

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
    def _postings(self, items: Sequence[tuple[int, np.ndarray]]) -> list[tuple[int, np.ndarray]]:
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
        return [(c.seq, c.strength) for c in self.candidates_with_evidence(text, limit=limit)]

    def candidates_with_evidence(self, text: str, *, limit: int = 20) -> list[Candidate]:
        prepared = self.hasher.prepare(text)
        spans = self.spans(prepared)
        sigs = self._signatures(prepared, spans)
        if len(sigs) == 0:
            return []
        # seq -> {(suspect row, mother row)} that share a band bucket.
        met: dict[int, set[tuple[int, int]]] = defaultdict(set)
        common: list[int] = []  # suspect rows in buckets of many mothers: boilerplate
        for q, found in enumerate(self.lsh.query_many(sigs)):
            if len({id_ >> ROW_BITS for id_ in found}) > self.common_df:
                common.append(q)
                continue  # like a stop word: says nothing about any one mother
            for id_ in found:
                met[id_ >> ROW_BITS].add((q, id_ & ROW_MASK))
        if not met:
            return []
        # Score the mothers met by the most suspect rows only (bounded work per suspect).
        votes = {seq: len({q for q, _ in pairs}) for seq, pairs in met.items()}
        seqs = sorted(votes, key=lambda s: (-votes[s], s))[: self.max_candidates]
        # Read only the mother rows that met the suspect: GETRANGE of one row each, not
        # the whole signature blob (a long chapter holds hundreds of window rows).
        size = 4 * self.num_perm
        wanted = [(seq, sorted({r for _, r in met[seq]})) for seq in seqs]
        pipe = self.redis.pipeline(transaction=False)
        for seq, mrows in wanted:
            for r in mrows:
                pipe.getrange(self._sig_key(seq), r * size, (r + 1) * size - 1)
        replies = iter(pipe.execute())
        scored: list[tuple[int, float, list[int]]] = []
        for seq, mrows in wanted:
            got = {r: blob for r in mrows if len(blob := next(replies)) == size}
            if not got:
                continue  # removed meanwhile
            mother = {r: np.frombuffer(b, dtype="<u4") for r, b in got.items()}
            best = 0.0
            good: set[int] = set()
            for q, r in met[seq]:
                if r not in mother:
                    continue
                j = float(np.count_nonzero(sigs[q] == mother[r])) / self.num_perm
                best = max(best, j)
                if j >= self.min_jaccard:
                    good.add(q)
            if best >= self.min_jaccard:
                scored.append((seq, best, sorted(good)))
        scored.sort(key=lambda x: (-x[1], x[0]))
        if self.normalization != "initials":
            # Positions would be in normalized characters, not the verifier's initials.
            return [Candidate(seq, j) for seq, j, _ in scored[:limit]]
        common_pos = span_evidence([spans[q] for q in common], self.window)
        out = []
        for seq, j, good in scored[:limit]:
            # Evidence from the windows that met the mother; the page row (row 0) spans
            # the whole suspect and a page Jaccard of 0.2 is no near-duplicate, so it
            # counts only when no window met (a suspect shorter than a window).
            rows = [q for q in good if q > 0] or good
            out.append(
                Candidate(seq, j, span_evidence([spans[q] for q in rows], self.window), common_pos)
            )
        return out

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
        return {
            "engine": self.name,
            "normalization": self.normalization,
            "mothers": mothers,
            "signatures": signatures,
            "keys": keys,
            "num_perm": self.num_perm,
            "bands": self.bands,
            "rows": self.rows,
            "shingle": self.shingle,
            "window": [self.window_gap, self.window_min, self.window_max],
        }
